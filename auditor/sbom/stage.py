"""The sbom stage: a CycloneDX 1.6 SBOM whose pedigree is upstream + every series commit, and an
in-toto/SLSA provenance statement for the wheel auditor built.

Reads the verified workspace, and the deps and build results when the spec asked for them. Writes
``sbom.cdx.json`` (always) and ``provenance.intoto.json`` (only when a wheel was built) into the
audit directory. :func:`export_sbom` copies the SBOM to where ``auditor sbom -o FILE`` asks.
"""

from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from auditor import __version__
from auditor.background import Work
from auditor.bundledigest import bundle_digest, spec_relative
from auditor.errors import InputError, ToolError
from auditor.fsutil import sha256_file
from auditor.gitio import Git
from auditor.model import STAGES, StageResult, StageStatus, Workspace, compute_verdict, status_for
from auditor.outputs import check_output_file, write_audit_file, write_output_file, write_stdout
from auditor.policy import waivers_of
from auditor.provenance.gitstate import git_settings
from auditor.provenance.treehash import manifest_digest
from auditor.redaction import redacted_text
from auditor.results.audit_file import warm_jsonschema
from auditor.results.sbom import ProvenanceDocument, SbomData, SbomDocument, VexRecord
from auditor.sbom.diffs import CommitDiff, DiffCache, commit_diff
from auditor.sbom.engine import EngineIdentity, engine_identity
from auditor.sbom.formats import memo_file, remembered
from auditor.sbom.inputs import BuildInfo, DepsInfo, read_build, read_deps
from auditor.sbom.locator import locator
from auditor.sbom.openvex import VEX_FILE, vex_product
from auditor.sbom.vex import judge, waivers_by_label
from auditor.spec import Spec
from auditor.stage import Context, Stage, cache_root

SBOM_FILE = "sbom.cdx.json"
PROVENANCE_FILE = "provenance.intoto.json"


class SbomStage(Stage):
    name = "sbom"
    needs = ("verify",)
    wants = ("deps", "build")

    def __init__(self) -> None:
        self._early: Work | None = None  # the series diffs read while the scan waits
        self._diffs: dict[str, CommitDiff] | None = None

    def prepare(self, ctx: Context) -> None:
        # the slow import of jsonschema is done while the scan waits on semgrep
        # (auditor.background); not when its answers are remembered from an earlier run
        # (auditor.sbom.formats)
        if not _memo_exists(ctx.spec):
            ctx.background.when_waiting(warm_jsonschema)
        # the series diffs (one `git show` each) are read then too
        ws = ctx.workspace
        if ws is not None:
            self._early = ctx.background.when_waiting(lambda: self._read_early(ctx, ws))

    def _read_early(self, ctx: Context, ws: Workspace) -> None:
        try:
            self._diffs = _read_diffs(ctx, ws)
        except Exception:  # noqa: BLE001 - run() reads them again and reports what fails
            self._diffs = None

    def check_inputs(self, spec: Spec) -> None:
        # called before any stage runs, and only when this stage will run
        from auditor.sbom.intoto import configured_builder_id

        configured_builder_id()  # a bad $AUDITOR_BUILDER_ID stops the audit before it starts

    def run(self, ctx: Context) -> StageResult:
        # imported here, not at the top: cyclonedx and jsonschema take a while to import, and the
        # pipeline imports every stage module to read needs/wants even when [sbom] is left out
        if not memo_file(ctx.cache_dir).exists():
            warm_jsonschema()
        from auditor.sbom.cyclonedx_doc import SbomFacts, build_sbom
        from auditor.sbom.intoto import ProvenanceFacts, build_provenance, configured_builder_id
        from auditor.sbom.openvex import build_openvex

        ws = ctx.workspace
        if ws is None:
            return StageResult(self.name, StageStatus.INCOMPLETE,
                               not_checked=("no verified workspace: nothing to describe",))
        spec = ctx.spec
        build = read_build(ctx.results.get("build"))
        deps = read_deps(ctx.results.get("deps"))
        not_checked: list[str] = []
        reasons: list[str] = []
        not_checked += _build_gaps(spec, build)
        not_checked += _deps_gaps(spec, deps)
        if build.wheel is not None:
            problem, missing = _check_wheel(ctx.out_dir, build)
            if problem:
                reasons.append(problem)
            if missing:
                not_checked.append(missing)
        if reasons:
            return StageResult(self.name, StageStatus.FAILED,
                               SbomData(sbom=None, provenance=None, built=build.built),
                               reasons=tuple(reasons), not_checked=tuple(not_checked))

        if self._early is not None:
            self._early.settle()
        diffs = self._diffs
        if diffs is None:
            with ctx.status(f"sbom: reading {len(ws.commits)} series diffs"):
                diffs = _read_diffs(ctx, ws)
        manifest = manifest_digest(ws.manifest)  # the same digest verify reports
        reproducible = ctx.options.reproducible
        upstream_loc = locator(spec, "upstream")
        patches_loc = locator(spec, "patches")
        bundle = bundle_digest(spec, ws.bundle_tree)
        deps = _relative_source(deps, spec)
        judgements = judge(deps, waivers_by_label(waivers_of(spec)))
        timestamp = (document_time(ws, build) if reproducible or _env_epoch() is not None
                     else datetime.now(UTC).replace(microsecond=0))
        facts = SbomFacts(
            engine=_engine(ws, spec, build), upstream_ref=spec.upstream.ref,
            upstream_locator=upstream_loc, workspace=ws, manifest_sha256=manifest, diffs=diffs,
            build=build, deps=deps, stage_statuses=_statuses(ctx, self.name),
            notes=verdict_notes(ctx, ws), timestamp=timestamp, reproducible=reproducible,
            tool_version=__version__, vuln_source=_vuln_source(spec), bundle=bundle,
            patches_locator=patches_loc, patches_ref=spec.patches.ref, judgements=judgements)
        with remembered(ctx.cache_dir):
            sbom = build_sbom(facts)
        vex = None
        if deps.looked_up:  # a deps stage that gave no result has nothing to judge
            vex = build_openvex(judgements, vex_product(sbom.text, bundle), timestamp=timestamp,
                                tool_version=__version__)
        provenance = None
        if build.wheel is not None:
            provenance = build_provenance(ProvenanceFacts(
                workspace=ws, build=build, spec_file=spec.path, spec_root=spec.root,
                recipe_file=spec.build.recipe if spec.build else None,
                upstream_ref=spec.upstream.ref, upstream_locator=upstream_loc,
                patches_locator=patches_loc, bundle=bundle,
                manifest_sha256=manifest, reproducible=reproducible, tool_version=__version__,
                builder_id=configured_builder_id()))
        for name, doc in ((SBOM_FILE, sbom), (PROVENANCE_FILE, provenance), (VEX_FILE, vex)):
            if doc is not None:
                write_audit_file(ctx.out_dir / name, doc.text)
        ctx.progress(f"sbom: {sbom.commits} commits, {sbom.components} components"
                     + (", provenance for the built wheel" if provenance else ", no build"))
        data = SbomData(
            sbom=SbomDocument(file=SBOM_FILE, serial=sbom.serial, components=sbom.components,
                              commits=sbom.commits, valid=True),
            provenance=(ProvenanceDocument(file=PROVENANCE_FILE, subject=provenance.subject,
                                           digest=provenance.digest) if provenance else None),
            built=build.built,
            vex=(VexRecord(file=VEX_FILE, id=vex.id, statements=vex.statements,
                           counts=vex.counts) if vex is not None else None))
        return StageResult(self.name, status_for((), not_checked, ()), data,
                           not_checked=tuple(not_checked))


def _memo_exists(spec: Spec) -> bool:
    """Whether jsonschema's answers are remembered in the cache the run will use (as
    ``Context.cache_dir`` finds it, before the command line's options are known)."""
    return memo_file(cache_root(spec)).exists()


# ---------------------------------------------------------------- what the inputs lack


def _build_gaps(spec: Spec, build: BuildInfo) -> list[str]:
    out = [f"sbom: {p}" for p in build.problems]
    if build.status is None and spec.build is not None:
        out.append("build did not run: the SBOM describes the source bundle; no provenance")
    elif build.status in (StageStatus.INCOMPLETE, StageStatus.FAILED) and build.wheel is None:
        out.append(f"build was {build.status.value} and produced no wheel: the SBOM describes "
                   "the source bundle; no provenance was written")
    if build.wheel is not None and build.official_wheel is None:
        out.append("build: no official wheel reported: the pedigree lacks it as an ancestor")
    return out


def _deps_gaps(spec: Spec, deps: DepsInfo) -> list[str]:
    out: list[str] = []
    if deps.status is None and spec.deps is not None:
        out.append("deps did not run: the SBOM lists no dependencies or vulnerabilities")
    elif deps.status is StageStatus.INCOMPLETE:
        out.append("deps was incomplete: the SBOM's dependencies and vulnerabilities may be "
                   "partial")
    out += [f"sbom: {p}" for p in deps.problems]
    return out


def _check_wheel(out_dir: Path, build: BuildInfo) -> tuple[str | None, str | None]:
    """(a reason when the wheel on disk is not the one reported, a gap when it is not there)."""
    assert build.wheel is not None
    path = Path(build.wheel.file)
    if not path.is_absolute():
        path = out_dir / path
    if not path.is_file():
        return None, (f"built wheel {build.wheel.file} is not in the audit directory: its "
                      "sha256 is the build stage's, not re-checked")
    actual = sha256_file(path)
    if actual != build.wheel.sha256:
        return (f"built wheel {path.name} has sha256 {actual}, but the build stage reported "
                f"{build.wheel.sha256}: no SBOM or provenance written for it"), None
    return None, None


# ---------------------------------------------------------------- helpers


def document_time(ws: Workspace, build: BuildInfo) -> datetime:
    """SOURCE_DATE_EPOCH, else the build's, else the last series commit (or upstream) time."""
    env = _env_epoch()
    if env is not None:
        return datetime.fromtimestamp(env, UTC)
    if build.source_date_epoch is not None:
        return datetime.fromtimestamp(build.source_date_epoch, UTC)
    if ws.commits:
        try:
            return datetime.fromisoformat(ws.commits[-1].committer_date).astimezone(UTC)
        except ValueError:
            pass
    stamp = Git(ws.upstream_repo).out("show", "-s", "--format=%ct", ws.upstream_commit)
    return datetime.fromtimestamp(int(stamp), UTC)


def _env_epoch() -> int | None:
    raw = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not raw:
        return None
    if not raw.isdigit():
        raise InputError(f"SOURCE_DATE_EPOCH={raw!r} is not a whole number of seconds")
    return int(raw)


def _statuses(ctx: Context, own: str) -> dict[str, str]:
    return {name: ctx.results[name].status.value for name in STAGES
            if name in ctx.results and name != own}


def _engine(ws: Workspace, spec: Spec, build: BuildInfo) -> EngineIdentity:
    """The engine audited, from upstream's own metadata (not the profile's defaults)."""
    return engine_identity(
        Git(ws.upstream_repo), ws.upstream_commit, profile_package=spec.profile.package,
        spec_version=spec.engine.version,
        wheel_name=build.official_wheel.name if build.official_wheel else None)


def _relative_source(deps: DepsInfo, spec: Spec) -> DepsInfo:
    """``deps`` with an advisory snapshot's local location spec-relative (no absolute path of
    the review machine in the SBOM)."""
    where = deps.vuln_source.get("location")
    if not where or not Path(where).is_absolute():
        return deps
    return replace(deps, vuln_source={**deps.vuln_source,
                                      "location": spec_relative(Path(where), spec)})


def _vuln_source(spec: Spec) -> str | None:
    if spec.deps is None:
        return None
    if spec.deps.vulns.startswith("osv:"):
        return "osv"
    return None if spec.deps.vulns == "none" else spec.deps.vulns


def verdict_notes(ctx: Context, ws: Workspace) -> str:
    """The audit so far in one paragraph (the final verdict is in audit.json, written later)."""
    results = [ctx.results[n] for n in STAGES if n in ctx.results and n != "sbom"]
    verdict, reasons = compute_verdict(results)
    ref = ctx.spec.upstream.ref
    proof = (f"the bundle proof held: the bundle is exactly upstream {ref} "
             f"({ws.upstream_commit[:12]}) plus the {len(ws.commits)} listed commits"
             if ws.proof_ok else
             f"the bundle proof FAILED: the bundle is NOT exactly upstream {ref} "
             f"({ws.upstream_commit[:12]}) plus the {len(ws.commits)} listed commits")
    stages = ", ".join(f"{r.name} {r.status.value}" for r in results)
    shown = "; ".join(reasons[:4]) + (f"; and {len(reasons) - 4} more" if len(reasons) > 4 else "")
    return (  # redacted with the whole SBOM (dump_json)
        "Audit summary when this SBOM was written (the SBOM is made before the service unit "
        "and the final report, so this is the verdict of the stages run so far, not the final "
        f"one: audit.json has that): {proof}; stages: {stages}; provisional verdict "
        f"{verdict.value}: {shown}.")


def default_sbom_path(sbom_text: str) -> Path:
    """``sboms/<name>-<version>.cdx.json`` from the SBOM's own component."""
    import json

    comp = json.loads(sbom_text).get("metadata", {}).get("component", {})
    name = re.sub(r"[^A-Za-z0-9._+-]", "_", str(comp.get("name", "engine")))
    version = re.sub(r"[^A-Za-z0-9._+-]", "_", str(comp.get("version", "unknown")))
    return Path("sboms") / f"{name}-{version}.cdx.json"


def provenance_path(target: Path) -> Path:
    """The provenance statement written beside an SBOM file: ``<name>.intoto.json``."""
    stem = target.name.removesuffix(".json").removesuffix(".cdx")
    return target.with_name(f"{stem}.intoto.json")


def vex_path(target: Path) -> Path:
    """The OpenVEX document written beside an SBOM file: ``<name>.openvex.json``."""
    stem = target.name.removesuffix(".json").removesuffix(".cdx")
    return target.with_name(f"{stem}.openvex.json")


def export_sbom(result: StageResult, ctx: Context, output: Path | None) -> Path | None:
    """Copy the stage's SBOM to ``output`` (``-`` for stdout; default under ``sboms/``).

    Writes nothing when the stage wrote no SBOM (its result says why). Next to a file output, the
    provenance statement (when there is one) is written as ``<name>.intoto.json`` and the OpenVEX
    document (when the deps stage ran) as ``<name>.openvex.json``.
    """
    src = ctx.out_dir / SBOM_FILE
    data = result.data_as(SbomData)
    if data is None or data.sbom is None or not src.is_file():
        return None
    text = src.read_text(encoding="utf-8")
    if output is not None and str(output) == "-":
        write_stdout(redacted_text(text))
        return None
    target = output if output is not None else default_sbom_path(text)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot write the SBOM to {target}: {exc.strerror or exc}") from None
    sidecars = [(src, dst) for src, dst in ((ctx.out_dir / PROVENANCE_FILE,
                                             provenance_path(target)),
                                            (ctx.out_dir / VEX_FILE, vex_path(target)))
                if src.is_file()]
    check_output_file(target, "--output", sidecars=[dst for _, dst in sidecars])
    write_output_file(target, redacted_text(text), "--output")
    for src, dst in sidecars:
        write_output_file(dst, redacted_text(src.read_text(encoding="utf-8")), "--output")
    ctx.progress(f"SBOM written to {target}")
    for src, dst in sidecars:
        what = "provenance statement" if src.name == PROVENANCE_FILE else "OpenVEX document"
        ctx.progress(f"{what} written to {dst}")
    return target


def _read_diffs(ctx: Context, ws: Workspace) -> dict[str, CommitDiff]:
    """Each series commit's diff, by commit: one `git show` per commit not cached; git runs in
    its own processes, so a small pool overlaps them."""
    git = Git(ws.patches_repo)
    cache = _diff_cache(ctx, git)
    show = cache.diff if cache is not None else commit_diff
    with ThreadPoolExecutor(max_workers=max(1, ctx.options.jobs)) as pool:
        return {d.sha: d for d in pool.map(lambda sha: show(git, sha), [c.sha for c in ws.commits])}


def _diff_cache(ctx: Context, git: Git) -> DiffCache | None:
    """The series diffs' cache, or None when git's settings could not be read."""
    try:
        return DiffCache(ctx.cache_dir, git_settings(git))
    except (ToolError, OSError):
        return None
