"""The CycloneDX 1.6 JSON document: the artifact, its pedigree (upstream + every series commit),
its modules, dependencies, CMake-fetched sources and vulnerabilities.

Built with cyclonedx-python-lib, then put in order: the library keeps ``pedigree.commits`` and
``pedigree.patches`` in sorted sets (sorted by sha), and a fork's series is meaningful only in its
own order, so the serialised lists are rearranged into series order before the document is checked
against the 1.6 schema. An invalid document is an error; nothing is written.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cyclonedx.model import (
    AttachedText,
    ExternalReference,
    ExternalReferenceType,
    HashAlgorithm,
    HashType,
    IdentifiableAction,
    Property,
    XsUri,
)
from cyclonedx.model.bom import Bom, BomMetaData
from cyclonedx.model.component import (
    Commit,
    Component,
    ComponentType,
    Diff,
    Patch,
    PatchClassification,
    Pedigree,
)
from cyclonedx.model.impact_analysis import (
    ImpactAnalysisAffectedStatus,
    ImpactAnalysisJustification,
    ImpactAnalysisResponse,
    ImpactAnalysisState,
)
from cyclonedx.model.tool import ToolRepository
from cyclonedx.model.vulnerability import (
    BomTarget,
    BomTargetVersionRange,
    Vulnerability,
    VulnerabilityAnalysis,
    VulnerabilityRating,
    VulnerabilityReference,
    VulnerabilitySeverity,
    VulnerabilitySource,
)
from cyclonedx.output.json import JsonV1Dot6
from packageurl import PackageURL
from packaging.utils import canonicalize_name

from auditor import jsonschemas
from auditor.bundledigest import BundleDigest
from auditor.errors import ToolError
from auditor.model import SeriesCommit, Workspace
from auditor.policy import Justification, VexStatus
from auditor.redaction import Redacted
from auditor.results.deps import Kind
from auditor.sbom import formats
from auditor.sbom.arrived import ArrivedCommit, split_pedigree
from auditor.sbom.diffs import CommitDiff
from auditor.sbom.engine import EngineIdentity
from auditor.sbom.inputs import BuildInfo, DepsInfo, Module, sha256_or_none
from auditor.sbom.locator import Locator
from auditor.sbom.vex import Basis, VexJudgement
from auditor.textsafe import dump_json

#: the serial of a reproducible SBOM is uuid5(SERIAL_NAMESPACE, sha256 of the content)
SERIAL_NAMESPACE = uuid.UUID("6f0d5d2e-3a58-5b8e-9c3e-1f5a0a6b7c21")
ARTIFACT_REF = "auditor:artifact"
P = "auditor:"  # property namespace


@dataclass(frozen=True)
class SbomFacts:
    """Everything the document says, gathered by the stage."""

    engine: EngineIdentity  # the engine audited (upstream's own metadata, see sbom.engine)
    upstream_ref: str
    upstream_locator: Locator  # where upstream lives: the spec's URL, or the spec-relative mirror
    workspace: Workspace
    manifest_sha256: str
    diffs: Mapping[str, CommitDiff]  # by commit sha
    build: BuildInfo
    deps: DepsInfo
    stage_statuses: Mapping[str, str]
    notes: str
    timestamp: datetime
    reproducible: bool
    tool_version: str
    vuln_source: str | None  # "osv", "pip-audit" or None
    bundle: BundleDigest | None = None  # the audited bundle file (the fork's source)
    patches_locator: Locator | None = None
    patches_ref: str = ""
    judgements: tuple[VexJudgement, ...] = ()  # one per deps.vulnerabilities, same order

    @property
    def package(self) -> str:
        return self.engine.name

    @property
    def engine_version(self) -> str:
        return self.engine.version


@dataclass(frozen=True)
class SbomDocument:
    text: Redacted
    serial: str
    components: int
    commits: int


def _sha256(hexdigest: str) -> HashType:
    return HashType(alg=HashAlgorithm.SHA_256, content=hexdigest)


def _props(pairs: Sequence[tuple[str, Any]]) -> list[Property]:
    out = []
    for name, value in pairs:
        if value is None:
            continue
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        out.append(Property(name=P + name, value=text))
    return out


def safe_uri(text: str | None) -> XsUri | None:
    """An XsUri the 1.6 schema accepts (an IRI reference), percent-encoding what it refuses;
    None when it still refuses (e.g. ``git+ssh://git@host:org/repo``): the raw text stays in a
    property, and one odd URL in a requirements file cannot make the whole SBOM invalid."""
    if not text:
        return None
    from urllib.parse import quote

    safe = ":/?=&@+~.-_!$'()*,;"
    for candidate in (text, quote(text, safe=safe + "#"), quote(text, safe=safe)):
        try:
            uri = XsUri(candidate)
        except Exception:  # noqa: BLE001 - the library raises its own InvalidUriException
            continue
        if formats.conforms(str(uri), "iri-reference"):
            return uri
    return None


def _ref(kind: ExternalReferenceType, url: str | None, comment: str | None = None
         ) -> list[ExternalReference]:
    uri = safe_uri(url)
    return [ExternalReference(type=kind, url=uri, comment=comment)] if uri else []


def _when(iso: str) -> datetime | None:
    try:
        return datetime.fromisoformat(iso)
    except (TypeError, ValueError):
        return None


def _pypi_purl(name: str, version: str | None) -> PackageURL:
    return PackageURL(type="pypi", name=str(canonicalize_name(name)), version=version)


# ---------------------------------------------------------------- pieces


def _upstream_component(f: SbomFacts, arrived: Sequence[ArrivedCommit], total: int
                        ) -> Component:
    ws = f.workspace
    loc = f.upstream_locator
    vcs = loc.vcs_url(ws.upstream_commit)
    pedigree = None
    if arrived:
        # upstream's own commits that reached the bundle through the fork, not the fork's work
        pedigree = Pedigree(
            commits=[_commit(a.commit) for a in arrived],
            notes=(f"{total} upstream commit(s) beyond {f.upstream_ref} arrived through the fork: "
                   "cherry-picks of upstream commits (same patch-id) and commits of the other "
                   "upstream refs the spec names ([upstream] also); they are upstream's, not the "
                   "fork's own commits" + (f" (the first {len(arrived)} are listed)"
                                           if total > len(arrived) else "")))
    return Component(
        type=ComponentType.LIBRARY, bom_ref="auditor:upstream", name=f.engine.name,
        version=f.engine.version,
        description=f"upstream source at {f.upstream_ref} (commit {ws.upstream_commit})",
        purl=PackageURL(type="generic", name=f.engine.name, version=ws.upstream_commit,
                        qualifiers={"vcs_url": vcs} if vcs else None),
        external_references=_ref(ExternalReferenceType.VCS, loc.shown,
                                 f"commit {ws.upstream_commit}"),
        pedigree=pedigree,
        properties=_props([("git:commit", ws.upstream_commit), ("git:tree", ws.upstream_tree or None),
                           ("git:ref", f.upstream_ref), ("git:repository", loc.shown),
                           ("engine:name-from", f.engine.source)]
                          + [(f"arrived:{a.via}", a.commit.sha + (f" = upstream {a.upstream_sha}"
                                                                    if a.upstream_sha else ""))
                             for a in arrived]))


def _fork_component(f: SbomFacts) -> Component | None:
    """The fork's source as audited: the bundle file (sha256 and size) at the series head."""
    b = f.bundle
    if b is None:
        return None
    ws = f.workspace
    loc = f.patches_locator
    vcs = loc.vcs_url(ws.head_commit) if loc else None
    qualifiers = {"vcs_url": vcs} if vcs else None
    return Component(
        type=ComponentType.LIBRARY, bom_ref="auditor:fork-source", name=f.engine.name,
        version=f.patches_ref or ws.head_commit,
        description=(f"the audited source bundle ({b.path}): the fork at {f.patches_ref or 'its head'}"
                     f" (commit {ws.head_commit})"
                     + ("" if b.kind == "file" else "; a folder, named by its git tree")),
        purl=PackageURL(type="generic", name=f.engine.name, version=ws.head_commit,
                        qualifiers=qualifiers),
        hashes=[_sha256(b.sha256)] if b.sha256 else [],
        external_references=(_ref(ExternalReferenceType.VCS, loc.shown,
                                  f"commit {ws.head_commit}") if loc else []),
        properties=_props([("bundle:path", b.path), ("bundle:kind", b.kind),
                           ("bundle:size", b.size), ("bundle:git-tree", ws.bundle_tree or None),
                           ("series:head", ws.head_commit), ("git:ref", f.patches_ref or None),
                           ("git:repository", loc.shown if loc else None)]))


def _official_component(f: SbomFacts) -> Component | None:
    w = f.build.official_wheel
    if w is None:
        return None
    return Component(
        type=ComponentType.LIBRARY, bom_ref="auditor:official-wheel", name=w.name,
        version=w.version, purl=_pypi_purl(w.name, w.version), hashes=[_sha256(w.sha256)],
        description="the official wheel: every file of the built wheel not compiled here is "
                    "taken from it",
        properties=_props([("file", w.file.rsplit("/", 1)[-1])]))


def _person(when: str, name: str, email: str) -> IdentifiableAction:
    """Who and when; an address the schema would reject (git accepts anything) joins the name."""
    if email and not formats.conforms(email, "idn-email"):
        name, email = f"{name} <{email}>".strip(), ""
    return IdentifiableAction(timestamp=_when(when), name=name or None, email=email or None)


def _commit(c: SeriesCommit) -> Commit:
    return Commit(
        uid=c.sha,
        author=_person(c.author_date, c.author_name, c.author_email),
        committer=_person(c.committer_date, c.committer_name, c.committer_email),
        message=c.message or c.subject or "(no message)")  # redacted by _dump


def _patch(d: CommitDiff) -> Patch:
    return Patch(type=PatchClassification.UNOFFICIAL,
                 diff=Diff(text=AttachedText(content=d.text, content_type="text/x-diff")))


def _module_props(m: Module) -> list[tuple[str, Any]]:
    return ([("module:name", m.name), ("module:action", m.action), ("module:builder", m.builder)]
            + [("module:source", s) for s in m.sources]
            + [("module:changed-source", s) for s in m.changed_sources]
            + [("module:command", c) for c in m.commands])


def _module_component(m: Module) -> Component:
    return Component(
        type=ComponentType.FILE, bom_ref=f"auditor:module:{m.wheel_path}", name=m.wheel_path,
        hashes=[_sha256(m.sha256)] if m.sha256 else [],
        description=("compiled here from audited source" if m.action == "built"
                     else "taken unchanged from the official wheel" if m.action == "official"
                     else f"action {m.action}"),
        properties=_props(_module_props(m)))


_HASH_ALGS = {"sha256": HashAlgorithm.SHA_256, "sha384": HashAlgorithm.SHA_384,
              "sha512": HashAlgorithm.SHA_512, "md5": HashAlgorithm.MD5}


def _lock_hashes(hashes: Sequence[str]) -> list[HashType]:
    """``alg:hex`` values of a lock entry as CycloneDX hashes (unknown algorithms left out)."""
    out = []
    for h in dict.fromkeys(hashes):
        alg, _, hexdigest = h.partition(":")
        if alg.lower() in _HASH_ALGS and re.fullmatch(r"[0-9a-fA-F]+", hexdigest):
            out.append(HashType(alg=_HASH_ALGS[alg.lower()], content=hexdigest.lower()))
    return out


def _dependency_components(f: SbomFacts) -> tuple[list[Component], dict[str, list[str]]]:
    """Components for the declared dependencies; also canonical name -> their bom-refs."""
    comps: list[Component] = []
    by_name: dict[str, list[str]] = {}
    cmake_names = {c.name for c in f.deps.cmake_fetches}
    for i, d in enumerate(f.deps.dependencies):
        if d.kind.is_cmake and d.name in cmake_names:
            continue  # described with its repository and commit below
        ref = f"auditor:dep:{i}:{canonicalize_name(d.name)}"
        refs: list[ExternalReference] = []
        if d.kind is Kind.PYPI:
            purl = _pypi_purl(d.name, d.pin)
        elif d.kind is Kind.VCS:
            purl = PackageURL(type="generic", name=d.name, version=d.pin,
                              qualifiers={"vcs_url": d.url} if d.url else None)
            refs = _ref(ExternalReferenceType.VCS, d.url)
        else:
            purl = PackageURL(type="generic", name=d.name, version=d.pin,
                              qualifiers={"download_url": d.url} if d.url else None)
            refs = _ref(ExternalReferenceType.DISTRIBUTION, d.url)
        comps.append(Component(
            type=ComponentType.LIBRARY, bom_ref=ref, name=d.name, version=d.pin, purl=purl,
            external_references=refs, hashes=_lock_hashes(d.hashes),
            properties=_props([("dependency:kind", d.kind.value), ("dependency:specifier", d.specifier),
                               ("dependency:pinned", d.pin is not None),
                               ("dependency:url", d.url)]
                              + [("dependency:locked-in" if d.locked else "dependency:declared-in",
                                  loc) for loc in d.locations])))
        by_name.setdefault(str(canonicalize_name(d.name)), []).append(ref)
    seen_refs: set[str] = set()
    for c in f.deps.cmake_fetches:
        # one name may be fetched twice (vLLM's cpu_extension.cmake: oneDNN at two tags): each
        # fetch its own deterministic bom-ref (a repeated one the library would replace at random)
        ref = f"auditor:cmake:{c.name}"
        if ref in seen_refs:
            ref = f"auditor:cmake:{c.name}@{c.tag or c.url or ''}"
        n = 2
        while ref in seen_refs:
            ref, n = f"auditor:cmake:{c.name}#{n}", n + 1
        seen_refs.add(ref)
        hashes = []
        digest = sha256_or_none(c.hash)
        if digest:
            hashes.append(_sha256(digest))
        qualifiers = {}
        if c.repository:
            qualifiers["vcs_url"] = f"git+{c.repository}" + (f"@{c.tag}" if c.tag else "")
        elif c.url:
            qualifiers["download_url"] = c.url
        comps.append(Component(
            type=ComponentType.LIBRARY, bom_ref=ref, name=c.name, version=c.tag,
            purl=PackageURL(type="generic", name=c.name, version=c.tag,
                            qualifiers=qualifiers or None),
            hashes=hashes,
            external_references=(_ref(ExternalReferenceType.VCS, c.repository)
                                 + _ref(ExternalReferenceType.DISTRIBUTION, c.url)),
            description="source fetched by CMake at build time",
            properties=_props([("cmake:repository", c.repository), ("cmake:tag", c.tag),
                               ("cmake:commit", c.commit), ("cmake:pinned", c.pinned),
                               ("cmake:url", c.url), ("cmake:hash", c.hash),
                               ("cmake:declared-in", c.location)])))
        by_name.setdefault(str(canonicalize_name(c.name)), []).append(ref)
    return comps, by_name


_SEVERITIES = {s.value: s for s in VulnerabilitySeverity}


def _vulnerabilities(f: SbomFacts, by_name: Mapping[str, list[str]]) -> list[Vulnerability]:
    out = []
    kind = f.deps.vuln_source.get("kind") or f.vuln_source
    source = None
    if kind == "osv":
        source = VulnerabilitySource(name="OSV (offline snapshot)")
    elif kind == "pip-audit":
        source = VulnerabilitySource(name="pip-audit")
    for i, v in enumerate(f.deps.vulnerabilities):
        refs = by_name.get(str(canonicalize_name(v.package)), [])
        versions = []
        if v.version:
            versions.append(BomTargetVersionRange(version=v.version,
                                                  status=ImpactAnalysisAffectedStatus.AFFECTED))
        versions += [BomTargetVersionRange(version=x, status=ImpactAnalysisAffectedStatus.UNAFFECTED)
                     for x in v.fixed]
        severity = _SEVERITIES.get((v.severity or "").lower(), VulnerabilitySeverity.UNKNOWN)
        judgement = f.judgements[i] if i < len(f.judgements) else None
        analysis = _analysis(judgement) if judgement is not None else None
        out.append(Vulnerability(
            bom_ref=f"auditor:vuln:{i}:{v.id}", id=v.id, source=source,
            description=v.summary or None,
            references=[VulnerabilityReference(id=a, source=VulnerabilitySource(name="alias"))
                        for a in v.aliases],
            ratings=[VulnerabilityRating(severity=severity)],
            recommendation=(f"upgrade {v.package} to {' or '.join(v.fixed)}" if v.fixed else None),
            affects=[BomTarget(ref=r, versions=versions) for r in refs],
            analysis=analysis,
            properties=_props([("vulnerability:package", v.package),
                               ("vulnerability:version", v.version),
                               ("vulnerability:severity", v.severity),
                               ("vulnerability:severity-source", v.severity_source),
                               ("vulnerability:waived", v.waived)]
                              + _vex_props(judgement))))
    return out


_STATES = {VexStatus.NOT_AFFECTED: ImpactAnalysisState.NOT_AFFECTED,
           VexStatus.AFFECTED: ImpactAnalysisState.EXPLOITABLE,
           VexStatus.FIXED: ImpactAnalysisState.RESOLVED,
           VexStatus.UNDER_INVESTIGATION: ImpactAnalysisState.IN_TRIAGE}
#: CycloneDX's nearest justification for each OpenVEX one auditor states; none where CycloneDX
#: has no faithful twin (the OpenVEX label is kept in a property either way)
_JUSTIFICATIONS = {
    Justification.COMPONENT_NOT_PRESENT: ImpactAnalysisJustification.CODE_NOT_PRESENT,
    Justification.VULNERABLE_CODE_NOT_PRESENT: ImpactAnalysisJustification.CODE_NOT_PRESENT,
    Justification.INLINE_MITIGATIONS:
        ImpactAnalysisJustification.PROTECTED_BY_MITIGATING_CONTROL,
}


def _analysis(j: VexJudgement) -> VulnerabilityAnalysis:
    responses = []
    if j.status is VexStatus.AFFECTED:
        responses = ([ImpactAnalysisResponse.UPDATE] if j.vuln.fixed
                     else [ImpactAnalysisResponse.CAN_NOT_FIX])
    return VulnerabilityAnalysis(
        state=_STATES[j.status],
        justification=_JUSTIFICATIONS.get(j.justification) if j.justification else None,
        responses=responses or None, detail=j.detail)


def _vex_props(j: VexJudgement | None) -> list[tuple[str, Any]]:
    if j is None:
        return []
    out: list[tuple[str, Any]] = [("vex:status", j.status.value), ("vex:basis", j.basis.value),
                                  ("vex:justification",
                                   j.justification.value if j.justification else None)]
    if j.basis is Basis.WAIVER and j.waiver is not None:
        out += [("vex:waiver-owner", j.waiver.owner), ("vex:waiver-reason", j.waiver.reason),
                ("vex:waiver-expires", j.waiver.expires.isoformat())]
    return out


def _artifact(f: SbomFacts, pedigree: Pedigree) -> Component:
    ws = f.workspace
    b = f.build
    common: list[tuple[str, Any]] = [
        ("built", b.built),
        ("proof", "ok" if ws.proof_ok else "failed"),
        ("bundle:git-tree", ws.bundle_tree or None),
        ("bundle:manifest-sha256", f.manifest_sha256),
        ("bundle:path", f.bundle.path if f.bundle else None),
        ("bundle:sha256", f.bundle.sha256 if f.bundle else None),
        ("bundle:size", f.bundle.size if f.bundle else None),
        ("bundle:files", len(ws.manifest)),
        ("upstream:commit", ws.upstream_commit),
        ("upstream:ref", f.upstream_ref),
        ("series:head", ws.head_commit),
        ("series:commits", len(ws.commits)),
    ]
    common += [(f"stage:{name}", status) for name, status in f.stage_statuses.items()]
    common += [("patch:diff-sha256", f"{sha} {d.sha256} {d.size}") for sha, d in f.diffs.items()]
    common += [("build:status", b.status.value if b.status else "did-not-run"),
               ("build:reproducible", b.reproducible),
               ("build:source-date-epoch", b.source_date_epoch)]
    common += [(f"toolchain:{k}", v if isinstance(v, (str, int, float, bool))
                else json.dumps(v, sort_keys=True))
               for k, v in sorted(b.toolchain.items()) if v is not None]
    common += [("deps:status", f.deps.status.value if f.deps.status else "did-not-run")]
    common += [(f"deps:vulnerability-source:{k}", v)
               for k, v in sorted(f.deps.vuln_source.items())]
    common += [("deps:package-index", u) for u in f.deps.indexes]
    if b.wheel is not None:
        w = b.wheel
        return Component(
            type=ComponentType.LIBRARY, bom_ref=ARTIFACT_REF, name=w.name, version=w.version,
            purl=_pypi_purl(w.name, w.version), hashes=[_sha256(w.sha256)],
            description="wheel built by auditor: modules compiled here from the audited bundle, "
                        "every other file from the official wheel",
            pedigree=pedigree,
            properties=_props([("file", w.file.rsplit("/", 1)[-1])] + common))
    return Component(
        type=ComponentType.LIBRARY, bom_ref=ARTIFACT_REF, name=f.package, version=f.engine_version,
        hashes=[_sha256(f.manifest_sha256)],
        description="the verified source bundle; no artifact was built",
        pedigree=pedigree,
        properties=_props([("note", "no artifact was built: this SBOM describes the verified "
                                    "source bundle (hash: the bundle manifest digest)")] + common))


# ---------------------------------------------------------------- the document


def build_sbom(f: SbomFacts) -> SbomDocument:
    split = split_pedigree(f.workspace)
    ancestors = [_upstream_component(f, split.arrived, split.arrived_total)]
    fork = _fork_component(f)
    if fork is not None:
        ancestors.insert(0, fork)
    official = _official_component(f)
    if official is not None:
        ancestors.insert(0, official)
    pedigree = Pedigree(
        ancestors=ancestors,
        commits=[_commit(c) for c in split.own],
        patches=[_patch(f.diffs[c.sha]) for c in split.own],
        notes=f.notes)
    artifact = _artifact(f, pedigree)
    modules = [_module_component(m) for m in f.build.modules]
    # the library keeps properties in sorted sets: the order they were given in is put back
    # (a module's build commands are meaningful only in the order they ran)
    given = {f"auditor:module:{m.wheel_path}": [(p.name, p.value) for p in _props(_module_props(m))]
             for m in f.build.modules}
    deps, by_name = _dependency_components(f)
    tool = Component(type=ComponentType.APPLICATION, name="auditor", version=f.tool_version,
                     bom_ref="auditor:tool")
    bom = Bom(metadata=BomMetaData(component=artifact, tools=ToolRepository(components=[tool]),
                                   timestamp=f.timestamp),
              components=modules + deps,
              vulnerabilities=_vulnerabilities(f, by_name),
              serial_number=uuid.UUID(int=0))
    bom.register_dependency(artifact, deps)
    try:
        with warnings.catch_warnings():
            # "no defined dependencies" for a bundle without a deps stage: the document says so
            warnings.simplefilter("ignore", UserWarning)
            raw = JsonV1Dot6(bom).output_as_string()
    except Exception as exc:  # the library raises a variety of its own errors on bad data
        raise ToolError(f"cyclonedx-python-lib could not serialise the SBOM: "
                        f"{type(exc).__name__}: {exc}") from exc
    doc = _in_series_order(json.loads(raw), split.own, split.arrived)
    _restore_property_order(doc, given)
    doc = _ordered(doc)
    if f.reproducible:
        digest = hashlib.sha256(_dump(doc).encode()).hexdigest()
        serial = f"urn:uuid:{uuid.uuid5(SERIAL_NAMESPACE, digest)}"
    else:
        serial = f"urn:uuid:{uuid.uuid4()}"
    doc["serialNumber"] = serial
    text = _dump(doc)
    formats.memo().validate(text, validate_cyclonedx)  # remembered inside formats.remembered
    return SbomDocument(text=text, serial=serial, components=len(doc.get("components", [])),
                        commits=len(doc["metadata"]["component"].get("pedigree", {})
                                    .get("commits", [])))


def _restore_property_order(doc: dict[str, Any],
                            given: Mapping[str, Sequence[tuple[str, str | None]]]) -> None:
    comps = [doc.get("metadata", {}).get("component", {}), *doc.get("components", [])]
    for comp in comps:
        order = given.get(comp.get("bom-ref", ""))
        props = comp.get("properties")
        if not order or not props:
            continue
        rank = {pair: i for i, pair in reversed(list(enumerate(order)))}
        props.sort(key=lambda p: rank.get((p.get("name"), p.get("value")), len(rank)))


def _in_series_order(doc: dict[str, Any], own: Sequence[SeriesCommit],
                     arrived: Sequence[ArrivedCommit] = ()) -> dict[str, Any]:
    component = doc.get("metadata", {}).get("component", {})
    if arrived:
        up_rank = {a.commit.sha: i for i, a in enumerate(arrived)}
        for anc in component.get("pedigree", {}).get("ancestors", []):
            commits = anc.get("pedigree", {}).get("commits")
            if anc.get("bom-ref") == "auditor:upstream" and commits:
                commits.sort(key=lambda c: up_rank.get(c.get("uid", ""), len(up_rank)))
    pedigree = component.get("pedigree")
    if not pedigree:
        return doc
    rank = {c.sha: i for i, c in enumerate(own)}
    if "commits" in pedigree:
        pedigree["commits"].sort(key=lambda c: rank.get(c.get("uid", ""), len(rank)))

    def patch_sha(p: Mapping[str, Any]) -> str:
        text = p.get("diff", {}).get("text", {}).get("content", "")
        return text[5:].split(" ", 1)[0] if text.startswith("From ") else ""

    if "patches" in pedigree:
        pedigree["patches"].sort(key=lambda p: rank.get(patch_sha(p), len(rank)))
    expected = [c.sha for c in own]
    if ([c.get("uid") for c in pedigree.get("commits", [])] != expected
            or [patch_sha(p) for p in pedigree.get("patches", [])] != expected):
        raise ToolError("the SBOM pedigree does not list the series commits and their patches "
                        "exactly once each, in order (is a commit listed twice?)")
    return doc


_FIRST = ("$schema", "bomFormat", "specVersion", "serialNumber", "version", "metadata",
          "components", "dependencies", "vulnerabilities")


def _ordered(doc: dict[str, Any]) -> dict[str, Any]:
    out = {k: doc[k] for k in _FIRST if k in doc}
    out.update({k: v for k, v in doc.items() if k not in out})
    return out


def _dump(doc: Mapping[str, Any]) -> Redacted:
    return dump_json(doc)  # the one JSON writer: every string in the document redacted


def validate_cyclonedx(text: str) -> None:
    """Check a document against the CycloneDX 1.6 JSON schema (offline); ToolError if invalid."""
    jsonschemas.load()  # before cyclonedx's validator imports jsonschema
    from cyclonedx.schema import OutputFormat, SchemaVersion
    from cyclonedx.validation import make_schemabased_validator

    validator = make_schemabased_validator(OutputFormat.JSON, SchemaVersion.V1_6)
    error = validator.validate_str(text)
    if error is not None:
        detail = str(getattr(error, "data", error)).splitlines()[0][:300]
        raise ToolError(f"the SBOM does not validate against the CycloneDX 1.6 schema: {detail}")
