"""Runs the stages in order, computes the verdict and writes the audit directory atomically."""

from __future__ import annotations

import datetime as dt
import importlib
import os
import shutil
import tempfile
import traceback
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from auditor import __version__
from auditor.errors import AuditError, InputError, ToolError
from auditor.model import (
    AUDIT_SCHEMA,
    STAGES,
    AuditResult,
    StageResult,
    StageStatus,
    compute_verdict,
)
from auditor.outputs import check_out_dir, write_marker
from auditor.policy import Waiver, apply_waivers, unused_waivers, waivers_of
from auditor.results import Crashed
from auditor.spec import Spec
from auditor.stage import Context, Options, Stage

# Where each stage lives; imported lazily so one stage's heavy imports do not slow the others.
STAGE_CLASSES: dict[str, str] = {
    "verify": "auditor.provenance.stage:VerifyStage",
    "scan": "auditor.scan.stage:ScanStage",
    "deps": "auditor.deps.stage:DepsStage",
    "build": "auditor.rebuild.stage:BuildStage",
    "sbom": "auditor.sbom.stage:SbomStage",
    "unit": "auditor.service.stage:UnitStage",
    "review": "auditor.review.stage:ReviewStage",
}


def load_stage(name: str) -> Stage:
    module, _, cls = STAGE_CLASSES[name].partition(":")
    stage = getattr(importlib.import_module(module), cls)()
    assert isinstance(stage, Stage)
    return stage


def closure(wanted: Iterable[str]) -> list[str]:
    """The wanted stages plus everything they need, in pipeline order."""
    todo = set(wanted)
    changed = True
    while changed:
        changed = False
        for name in list(todo):
            stage = load_stage(name)
            for dep in (*stage.needs, *stage.wants):
                if dep not in todo:
                    todo.add(dep)
                    changed = True
    return [s for s in STAGES if s in todo]


def run_stage(stage: Stage, ctx: Context) -> StageResult:
    """Run one stage; "could not check" becomes incomplete (fail closed); secrets are redacted
    from every finding before anything (audit.json, reports, --json) sees it."""
    from dataclasses import replace

    from auditor.report.view import clean_finding

    result = _run_stage(stage, ctx)
    return replace(result, findings=tuple(clean_finding(f) for f in result.findings))


def _run_stage(stage: Stage, ctx: Context) -> StageResult:
    missing = [d for d in stage.needs
               if d not in ctx.results or ctx.results[d].status is StageStatus.NOT_REQUESTED]
    if "verify" in stage.needs and ctx.workspace is None:
        missing.append("verify (no verified workspace)")
    if missing:
        return StageResult(stage.name, StageStatus.INCOMPLETE,
                           not_checked=(f"needs {', '.join(missing)}, which did not run",))
    try:
        return stage.run(ctx)
    except ToolError as exc:
        return StageResult(stage.name, StageStatus.INCOMPLETE, Crashed(exc.message),
                           not_checked=(exc.diagnostics(),))
    except AuditError:
        raise
    except Exception as exc:  # a crash is "not checked", never "clean"
        if ctx.options.verbose:
            traceback.print_exc()
        return StageResult(stage.name, StageStatus.INCOMPLETE,
                           Crashed(f"{type(exc).__name__}: {exc}"),
                           not_checked=(f"stage crashed: {type(exc).__name__}: {exc}",))


def run_pipeline(spec: Spec, options: Options, wanted: Iterable[str], ctx_out: Path,
                 workdir: Path) -> tuple[AuditResult, Context]:
    """Run ``wanted`` (and what they need); stages the spec leaves out are not-requested."""
    ctx = Context(spec=spec, options=options, workdir=workdir, out_dir=ctx_out)
    wanted = list(wanted)
    for name in closure(wanted):  # bad inputs (exit 2) before any stage runs
        checker = load_stage(name)
        if checker.requested(spec):
            checker.check_inputs(spec)
    waivers = waivers_of(spec)  # a bad waivers file is exit 2 before any stage runs, too
    importing = options.build_from is not None and "build" in closure(wanted)
    if importing:
        assert options.build_from is not None
        from auditor.rebuild.imported import check_build_from

        check_build_from(spec, options.build_from)  # no record: exit 2 before any stage runs
    stages = [load_stage(name) for name in closure(wanted)]
    prepared: set[str] = set()
    for stage in stages:
        name = stage.name
        if not stage.requested(spec):
            ctx.results[name] = StageResult.not_requested(name)
            continue
        ctx.console.print(f"[bold]{name}[/bold] …")
        # waivers apply to every stage's findings, here in one place (idempotent where a stage
        # applied them itself); later stages see the waived findings
        result = run_stage(stage, ctx)
        result = replace(result, findings=tuple(apply_waivers(result.findings, waivers)))
        ctx.results[name] = result
        ctx.console.print(f"[bold]{name}[/bold] {_status_word(result)}")
        if name == "verify" and importing and ctx.workspace is not None:
            assert options.build_from is not None
            from auditor.rebuild.imported import check_same_bundle

            check_same_bundle(ctx.workspace, options.build_from)  # another bundle's: exit 2 now
        _prepare_ready(stages, ctx, prepared)
    if set(closure(wanted)) == set(STAGES):  # a whole audit: a waiver naming nothing is stale
        _report_unused(ctx, waivers)
    results = {name: ctx.results.get(name, StageResult.not_requested(name)) for name in STAGES}
    considered = [results[n] for n in STAGES if n in ctx.results]
    verdict, reasons = compute_verdict(considered)
    audit = AuditResult(verdict=verdict, reasons=reasons, stages=results,
                        tool=tool_info(),
                        inputs=inputs_info(spec, ctx.workspace.bundle_tree if ctx.workspace
                                           else None))
    return audit, ctx


def _report_unused(ctx: Context, waivers: Iterable[Waiver]) -> None:
    """One info finding per waiver that matches no finding of any stage, kept with the scan
    stage's findings (the waivers are ``[scan] waivers``)."""
    scan = ctx.results.get("scan")
    if scan is None or scan.status is StageStatus.NOT_REQUESTED:
        return
    every = [f for r in ctx.results.values() for f in r.findings]
    partial = any(r.status is StageStatus.INCOMPLETE for r in ctx.results.values())
    unused = unused_waivers(every, waivers, partial=partial)
    if unused:
        ctx.results["scan"] = replace(scan, findings=(*scan.findings, *unused))


def _prepare_ready(stages: Iterable[Stage], ctx: Context, prepared: set[str]) -> None:
    """:meth:`Stage.prepare` of each stage yet to run whose needs have all run (once each)."""
    for stage in stages:
        if (stage.name in prepared or stage.name in ctx.results
                or not all(d in ctx.results for d in stage.needs)
                or not stage.requested(ctx.spec)):
            continue
        prepared.add(stage.name)
        try:
            stage.prepare(ctx)
        except Exception:  # noqa: BLE001 - only a head start is lost; run() does the work
            if ctx.options.verbose:
                traceback.print_exc()


def _status_word(result: StageResult) -> str:
    from auditor.report.console import stage_done  # "ran (1 block, 1 review)", never "ok (…)"

    return stage_done(result)


def tool_info() -> dict[str, Any]:
    return {"name": "auditor", "version": __version__}


def inputs_info(spec: Spec, bundle_tree: str | None = None) -> dict[str, Any]:
    """What was audited: paths relative to the spec's folder (never this machine's absolute
    paths), and the bundle file's sha256 and size (a folder bundle: its proven git tree)."""
    from auditor.bundledigest import bundle_digest, spec_relative

    return {
        "spec": spec.path.name,
        "engine": {"profile": spec.profile.name, "package": spec.profile.package,
                   "version": spec.engine.version, "target": spec.engine.target},
        "upstream": {"repo": spec_relative(spec.upstream.repo, spec), "ref": spec.upstream.ref,
                     "commit": spec.upstream.commit,
                     **({"url": spec.upstream.url} if spec.upstream.url else {})},
        "patches": {"repo": spec_relative(spec.patches.repo, spec), "ref": spec.patches.ref,
                    "commits": list(spec.patches.commits),
                    **({"url": spec.patches.url} if spec.patches.url else {})},
        "bundle": bundle_digest(spec, bundle_tree).to_json(),
    }


class AuditDirectory:
    """An audit directory written atomically: a sibling temporary folder renamed into place.

    The target is checked first (:func:`auditor.outputs.check_out_dir`): only a new folder, an
    empty one or one an earlier audit wrote (it holds the marker) is ever replaced.
    """

    def __init__(self, target: Path, *, spec: Spec | None = None, inputs: Iterable[Path] = (),
                 schema: str = AUDIT_SCHEMA) -> None:
        self.schema = schema
        self.shown = target
        self.target = check_out_dir(target, spec=spec, inputs=inputs, schema=schema)
        try:
            self.target.parent.mkdir(parents=True, exist_ok=True)
            self.tmp = Path(tempfile.mkdtemp(prefix=f".{self.target.name}.",
                                             dir=self.target.parent))
        except OSError as exc:
            raise InputError(f"--out {target}: cannot be created: {exc.strerror or exc}") from None
        try:
            write_marker(self.tmp, schema)
        except OSError as exc:
            self.abort()
            raise InputError(f"--out {target}: cannot be written: {exc.strerror or exc}") from None

    def commit(self) -> Path:
        # checked again: something may have moved in while the audit ran
        check_out_dir(self.target, schema=self.schema)
        old = None
        if self.target.exists():
            old = self.target.with_name(f".{self.target.name}.old-{os.getpid()}")
            os.rename(self.target, old)
        os.rename(self.tmp, self.target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return self.target

    def abort(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


def write_json(path: Path, data: Any) -> None:
    """A JSON document of the audit directory, through the one redacting writer."""
    from auditor.textsafe import dump_json

    path.write_text(dump_json(data), encoding="utf-8")


def audit(spec: Spec, options: Options, out: Path, *, inputs: Iterable[Path] = (),
          key_file: Path | None = None) -> AuditResult:
    """Every stage; the audit directory appears complete or not at all.

    ``out`` is checked before anything runs (``inputs``: more files it must not hold, such as a
    gate's baseline); a write that fails (read-only, full) is an InputError and leaves nothing.
    With a signing key (``key_file``, ``$AUDITOR_SIGNING_KEY`` or ``[attest] key``, loaded before
    any work) the DSSE envelopes of :mod:`auditor.attest.sign` are written after audit.json.
    """
    from auditor.attest.keys import audit_signing_key
    from auditor.attest.sign import sign_audit, with_summary
    from auditor.report import write_reports
    from auditor.results.audit_file import check_before_writing

    signer = audit_signing_key(spec, key_file)  # a bad key: exit 2 before anything runs
    extra = [key_file] if key_file is not None else []
    if options.build_from is not None:  # the imported build folder is an input, never replaced
        extra.append(options.build_from)
    directory = AuditDirectory(out, spec=spec, inputs=[*inputs, *extra])
    try:
        with tempfile.TemporaryDirectory(prefix="auditor-") as work:
            result, ctx = run_pipeline(spec, options, STAGES, directory.tmp, Path(work))
            if options.reproducible:
                result = without_run_facts(result)
            result = with_summary(result, signer, directory.tmp)
            data = result.to_json()
            check_before_writing(data)  # a result that breaks the contract is a bug: exit 3
            try:
                write_json(directory.tmp / "audit.json", data)
                write_reports(result, directory.tmp, ctx)
                if signer is not None:
                    sign_audit(directory.tmp, spec, result, signer,
                               reproducible=options.reproducible)
                directory.commit()
            except OSError as exc:
                raise InputError(f"--out {out}: cannot be written: "
                                 f"{exc.strerror or exc}") from None
    except BaseException:
        directory.abort()
        raise
    return result


def without_run_facts(result: AuditResult) -> AuditResult:
    """The audit as ``--reproducible`` writes it: what only says how this run went is left out,
    so the same inputs give the same audit.json (and the same signed summary of it) — how many
    scan answers came from the cache, and the build's wall-clock times (both the source date
    epoch instead, as the SBOM's timestamp)."""
    from auditor.results.build import BuildData
    from auditor.results.scan import ScanData

    stages = dict(result.stages)
    scan = stages.get("scan")
    scan_data = scan.data_as(ScanData) if scan is not None else None
    if scan is not None and scan_data is not None:
        stages["scan"] = replace(scan, data=replace(scan_data, cache=None))
    build = stages.get("build")
    build_data = build.data_as(BuildData) if build is not None else None
    if build is not None and build_data is not None and build_data.source_date_epoch is not None:
        when = dt.datetime.fromtimestamp(build_data.source_date_epoch, dt.UTC).isoformat(
            timespec="seconds")
        stages["build"] = replace(build, data=replace(build_data, started=when,
                                                      finished=when if build_data.finished
                                                      else None))
    return replace(result, stages=stages)


def run_single(spec: Spec, options: Options, name: str) -> tuple[StageResult, Context, Path]:
    """One stage (and what it needs) outside an audit directory; returns the live context.

    The caller owns the returned temporary folder (``ctx.workdir``'s parent) and removes it.
    """
    base = Path(tempfile.mkdtemp(prefix="auditor-"))
    try:
        (base / "out").mkdir()
        (base / "work").mkdir()
        _, ctx = run_pipeline(spec, options, [name], base / "out", base / "work")
    except BaseException:  # an error, or SIGTERM: the folder is the caller's only on success
        shutil.rmtree(base, ignore_errors=True)
        raise
    return ctx.results[name], ctx, base
