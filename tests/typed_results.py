"""Typed stage results built by hand for tests (every field the stage fills, with plain defaults).

Tests that render or gate hand-made audits build them here, so they hold exactly the shape the
stages produce (and that ``docs/audit.schema.json`` accepts).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from auditor.model import Scope, SeriesCommit
from auditor.results.build import BuildData, BuiltWheel, ModuleRecord, Toolchain
from auditor.results.deps import DeclarationRecord, DepsData, Kind, SourceRecord, VulnRecord
from auditor.results.sbom import ProvenanceDocument, SbomData, SbomDocument
from auditor.results.scan import CacheTally, ScanData
from auditor.results.unit import ExposureScore, UnitData
from auditor.results.verify import (
    CommitRecord,
    HeadRef,
    ProofCheck,
    ReplayRecord,
    SeriesRecord,
    UpstreamRef,
    VerifyData,
)

TREE = "e" * 40


def commit_record(sha: str, subject: str = "", patch_id: str | None = None, *,
                  stats: Mapping[str, int] | None = None, **kw: Any) -> CommitRecord:
    fields: dict[str, Any] = {
        "sha": sha, "tree": TREE, "parents": [], "subject": subject, "message": subject + "\n",
        "author_name": "Author", "author_email": "author@example.org",
        "author_date": "2026-01-01T00:00:00+00:00", "committer_name": "Author",
        "committer_email": "author@example.org", "committer_date": "2026-01-01T00:00:00+00:00",
        "patch_id": patch_id}
    fields.update(kw)
    return CommitRecord(SeriesCommit.from_json(fields), stats)


def verify_data(commits: Sequence[CommitRecord] = (), *, ok: bool = True, ref: str = "v1.0.0",
                upstream_commit: str | None = "0" * 40, upstream_tree: str | None = "f" * 40,
                bundle_tree: str = TREE, expected_tree: str | None = TREE,
                differences: Sequence[Mapping[str, Any]] = (),
                anomalies: Sequence[Mapping[str, Any]] = (),
                patch_ids: Mapping[str, str | None] | None = None) -> VerifyData:
    listed = tuple(c.commit.sha for c in commits)
    series = SeriesRecord(
        listed=listed, unlisted=(), unlisted_total=0, missing=(), missing_why={},
        duplicates=(), merges=(), order_ok=True,
        patch_ids=dict(patch_ids) if patch_ids is not None
        else {c.commit.sha: c.commit.patch_id for c in commits}, actual=listed)
    return VerifyData(
        ok=ok, upstream=UpstreamRef(ref=ref, commit=upstream_commit, ref_commit=upstream_commit,
                                    pinned=None, tree=upstream_tree),
        head=HeadRef(ref="series", commit=listed[-1] if listed else upstream_commit, tree=TREE),
        expected_tree=expected_tree, bundle_tree=bundle_tree,
        bundle={"path": "bundle", "kind": "directory"}, bundle_format=None,
        manifest_digest="d" * 64, file_count=1,
        proof=ProofCheck(series=series, replay=ReplayRecord(len(commits), None, None),
                         compared_with="replayed series", bundle_matches_head=ok,
                         differences=tuple(differences), differences_total=len(differences),
                         anomalies=tuple(anomalies), commits=tuple(commits)))


def scan_data(**kw: Any) -> ScanData:
    fields: dict[str, Any] = dict(scope=Scope.DIFF, checked_files=(), skipped=(), scanners={},
                                  ruleset=None, cache=CacheTally(0, 0, {}), coverage={},
                                  uncovered=(), notes=())
    fields.update(kw)
    return ScanData(**fields)


def decl(name: str, pin: str | None = None, *, file: str = "requirements.txt", line: int = 1,
         specifier: str | None = None, kind: str = "pypi", url: str | None = None,
         ref: str | None = None) -> DeclarationRecord:
    return DeclarationRecord(
        name=name, kind=Kind(kind), specifier=specifier if specifier is not None
        else (f"=={pin}" if pin else ""), pin=pin, markers="", url=url, extras=(), ref=ref,
        hash=None, file=file, line=line, end_line=line, group="")


def vuln(vid: str, package: str, version: str, *, fixed: Sequence[str] = (),
         severity: str | None = None, aliases: Sequence[str] = (), **kw: Any) -> VulnRecord:
    fields: dict[str, Any] = dict(severity_source=None, summary=None, modified=None)
    fields.update(kw)
    return VulnRecord(id=vid, aliases=tuple(aliases), package=package, version=version,
                      fixed=tuple(fixed), severity=severity, **fields)


def deps_data(**kw: Any) -> DepsData:
    fields: dict[str, Any] = dict(
        upstream=(), bundle=(), added=(), removed=(), changed=(), vulnerabilities=(),
        source=SourceRecord(kind="osv", digest=None, date=None, records=None, location=None),
        cmake_fetches=(), indexes=(), checked=(), files={"upstream": (), "bundle": ()},
        upstream_not_checked=(), split=None, lock=None, unpinned_deployed=(), notes=(),
        shell_computed=())
    fields.update(kw)
    return DepsData(**fields)


def module(name: str, *, action: str = "built", sha256: str | None = "c" * 64,
           sources: Sequence[str] = (), wheel_path: str | None = None) -> ModuleRecord:
    return ModuleRecord(name=name, wheel_path=wheel_path or f"{name.replace('.', '/')}.so",
                        action=action, sha256=sha256, official_sha256=None, builder="nvcc",
                        recipe_entry=name, sources=tuple(sources), changed_sources=(),
                        commands=(), abi=None)


def build_data(**kw: Any) -> BuildData:
    fields: dict[str, Any] = dict(
        recipe="builds/recipe.toml", target="cuda", archs=("8.6",),
        toolchain=Toolchain(nvcc=None, cc=None, expected={"nvcc": None, "cc": None},
                            matches=None),
        started="2026-01-01T00:00:00+00:00", finished="2026-01-01T00:00:01+00:00")
    fields.update(kw)
    return BuildData(**fields)


def built_wheel(file: str, sha256: str, *, name: str = "engine",
                version: str = "1.0.0") -> BuiltWheel:
    return BuiltWheel(file=file, name=name, version=version, sha256=sha256)


def sbom_data(*, serial: str = "urn:uuid:00000000-0000-0000-0000-000000000000",
              provenance: bool = True) -> SbomData:
    return SbomData(sbom=SbomDocument(file="sbom.cdx.json", serial=serial, components=1,
                                      commits=1, valid=True),
                    provenance=ProvenanceDocument(file="provenance.intoto.json",
                                                  subject="engine.whl", digest="a" * 64)
                    if provenance else None, built=provenance)


def unit_data(unit: str = "engine.service", *, score: float | None = 1.3,
              label: str = "OK") -> UnitData:
    return UnitData(unit=unit, env_example=None, key_mode=None, profile="engine",
                    exposure=ExposureScore(score, label) if score is not None else None,
                    exposure_threshold=3.0, verify=None)
