"""The verify stage's data: the tree-hash proof, the series check and the listed commits."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from auditor.model import SeriesCommit
from auditor.results.base import (
    JsonObject,
    StageData,
    obj,
    objects,
    opt_obj,
    opt_str,
    str_map,
    strs,
)


@dataclass(frozen=True)
class UpstreamRef:
    ref: str
    commit: str | None  # the proof's base: the pin when it exists, else what the ref resolves to
    ref_commit: str | None
    pinned: str | None
    tree: str | None

    def to_json(self) -> dict[str, Any]:
        return {"ref": self.ref, "commit": self.commit, "ref_commit": self.ref_commit,
                "pinned": self.pinned, "tree": self.tree}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> UpstreamRef:
        return cls(ref=str(d["ref"]), commit=opt_str(d["commit"]),
                   ref_commit=opt_str(d["ref_commit"]), pinned=opt_str(d["pinned"]),
                   tree=opt_str(d["tree"]))


@dataclass(frozen=True)
class HeadRef:
    ref: str
    commit: str | None
    tree: str | None

    def to_json(self) -> dict[str, Any]:
        return {"ref": self.ref, "commit": self.commit, "tree": self.tree}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> HeadRef:
        return cls(ref=str(d["ref"]), commit=opt_str(d["commit"]), tree=opt_str(d["tree"]))


@dataclass(frozen=True)
class SeriesRecord:
    """The listed series against the branch (lists capped; totals given)."""

    listed: tuple[str, ...]
    unlisted: tuple[str, ...]
    unlisted_total: int
    missing: tuple[str, ...]
    missing_why: Mapping[str, str]
    duplicates: tuple[str, ...]
    merges: tuple[str, ...]
    order_ok: bool
    patch_ids: Mapping[str, str | None]
    actual: tuple[str, ...]
    model: str = "rebase"  # "rebase" (replayed) or "merge" (ancestry + head tree)
    derived: bool = False  # commits = "range": ``listed`` is what upstream..ref held
    #: listed commits that are upstream's own commits applied again (same patch-id): their lines
    #: are upstream's, and they are no community commits
    upstream_picks: Mapping[str, str] = field(default_factory=dict)
    #: merges that are not git's own merge of their parents -> the paths changed while merging
    merge_changes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: those merges -> ``git patch-id --stable`` of their own change (the diff from git's own merge
    #: of the parents): what the gate pairs a merge by
    merge_patch_ids: Mapping[str, str] = field(default_factory=dict)
    #: a merge-based fork whose upstream repository is its own: upstream commits the range holds
    #: that upstream's branches or tags reach and no ``also`` ref names (the newest; all of them)
    upstream_merged: tuple[str, ...] = ()
    upstream_merged_total: int = 0
    #: a merge-based fork: the commits of its range that ``[upstream] also`` reaches (upstream's)
    upstream_also_total: int = 0
    upstream_also: tuple[str, ...] = ()  # the spec's [upstream] also names

    def to_json(self) -> dict[str, Any]:
        return {"listed": list(self.listed), "unlisted": list(self.unlisted),
                "unlisted_total": self.unlisted_total, "missing": list(self.missing),
                "missing_why": dict(self.missing_why), "duplicates": list(self.duplicates),
                "merges": list(self.merges), "order_ok": self.order_ok,
                "patch_ids": dict(self.patch_ids), "actual": list(self.actual),
                "model": self.model, "derived": self.derived,
                "upstream_picks": dict(self.upstream_picks),
                "merge_changes": {k: list(v) for k, v in self.merge_changes.items()},
                "merge_patch_ids": dict(self.merge_patch_ids),
                "upstream_merged": list(self.upstream_merged),
                "upstream_merged_total": self.upstream_merged_total,
                "upstream_also_total": self.upstream_also_total,
                "upstream_also": list(self.upstream_also)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SeriesRecord:
        return cls(listed=strs(d["listed"]), unlisted=strs(d["unlisted"]),
                   unlisted_total=int(d["unlisted_total"]), missing=strs(d["missing"]),
                   missing_why=str_map(d["missing_why"]), duplicates=strs(d["duplicates"]),
                   merges=strs(d["merges"]), order_ok=bool(d["order_ok"]),
                   patch_ids={str(k): opt_str(v) for k, v in obj(d["patch_ids"]).items()},
                   actual=strs(d["actual"]), model=str(d.get("model", "rebase")),
                   derived=bool(d.get("derived", False)),
                   upstream_picks=str_map(d.get("upstream_picks", {})),
                   merge_changes={str(k): strs(v)
                                  for k, v in obj(d.get("merge_changes", {})).items()},
                   merge_patch_ids=str_map(d.get("merge_patch_ids", {})),
                   upstream_merged=strs(d.get("upstream_merged", [])),
                   upstream_merged_total=int(d.get("upstream_merged_total", 0)),
                   upstream_also_total=int(d.get("upstream_also_total", 0)),
                   upstream_also=strs(d.get("upstream_also", [])))


@dataclass(frozen=True)
class ReplayRecord:
    applied: int
    failed_commit: str | None
    error: str | None

    def to_json(self) -> dict[str, Any]:
        return {"applied": self.applied, "failed_commit": self.failed_commit, "error": self.error}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ReplayRecord:
        return cls(applied=int(d["applied"]), failed_commit=opt_str(d["failed_commit"]),
                   error=opt_str(d["error"]))


@dataclass(frozen=True)
class CommitRecord:
    """A listed commit and its diff stats (``{files, insertions, deletions}``) when read."""

    commit: SeriesCommit
    stats: Mapping[str, int] | None

    def to_json(self) -> dict[str, Any]:
        return {**self.commit.to_json(),
                "stats": dict(self.stats) if self.stats is not None else None}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> CommitRecord:
        stats = opt_obj(d.get("stats"))
        return cls(commit=SeriesCommit.from_json(d),
                   stats={str(k): int(v) for k, v in stats.items()} if stats is not None
                   else None)


@dataclass(frozen=True)
class ProofCheck:
    """What verify learns once both git and the bundle were read."""

    series: SeriesRecord
    replay: ReplayRecord
    compared_with: str  # "replayed series" or "head"
    bundle_matches_head: bool
    differences: tuple[JsonObject, ...]  # the first paths that differ (display only)
    differences_total: int
    anomalies: tuple[JsonObject, ...]  # display only; the findings carry what counts
    commits: tuple[CommitRecord, ...]

    def to_json(self) -> dict[str, Any]:
        return {"series": self.series.to_json(), "replay": self.replay.to_json(),
                "compared_with": self.compared_with,
                "bundle_matches_head": self.bundle_matches_head,
                "differences": [dict(x) for x in self.differences],
                "differences_total": self.differences_total,
                "anomalies": [dict(x) for x in self.anomalies],
                "commits": [c.to_json() for c in self.commits]}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ProofCheck:
        return cls(series=SeriesRecord.from_json(obj(d["series"])),
                   replay=ReplayRecord.from_json(obj(d["replay"])),
                   compared_with=str(d["compared_with"]),
                   bundle_matches_head=bool(d["bundle_matches_head"]),
                   differences=objects(d["differences"]),
                   differences_total=int(d["differences_total"]),
                   anomalies=objects(d["anomalies"]),
                   commits=tuple(CommitRecord.from_json(c) for c in objects(d["commits"])))


@dataclass(frozen=True)
class VerifyData(StageData):
    ok: bool
    upstream: UpstreamRef
    head: HeadRef
    expected_tree: str | None
    bundle_tree: str
    bundle: JsonObject  # path, kind, compression, ... (display only)
    bundle_format: JsonObject | None
    manifest_digest: str
    file_count: int
    proof: ProofCheck | None = None  # None when a ref did not resolve: the proof stopped early

    @property
    def listed(self) -> tuple[str, ...]:
        return self.proof.series.listed if self.proof is not None else ()

    @property
    def commits(self) -> tuple[CommitRecord, ...]:
        return self.proof.commits if self.proof is not None else ()

    def patch_id(self, sha: str) -> str | None:
        """The commit's ``git patch-id --stable`` (the series check's, else the commit's own)."""
        if self.proof is None:
            return None
        pid = self.proof.series.patch_ids.get(sha)
        if pid is not None:
            return pid
        return next((c.commit.patch_id for c in self.proof.commits if c.commit.sha == sha), None)

    def to_json(self) -> dict[str, Any]:
        out = {"ok": self.ok, "upstream": self.upstream.to_json(), "head": self.head.to_json(),
               "expected_tree": self.expected_tree, "bundle_tree": self.bundle_tree,
               "bundle": dict(self.bundle),
               "bundle_format": (dict(self.bundle_format) if self.bundle_format is not None
                                 else None),
               "manifest_digest": self.manifest_digest, "file_count": self.file_count}
        return out | (self.proof.to_json() if self.proof is not None else {})

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> VerifyData:
        return cls(ok=bool(d["ok"]), upstream=UpstreamRef.from_json(obj(d["upstream"])),
                   head=HeadRef.from_json(obj(d["head"])),
                   expected_tree=opt_str(d["expected_tree"]), bundle_tree=str(d["bundle_tree"]),
                   bundle=obj(d["bundle"]), bundle_format=opt_obj(d["bundle_format"]),
                   manifest_digest=str(d["manifest_digest"]),
                   file_count=int(d["file_count"]),
                   proof=ProofCheck.from_json(d) if "series" in d else None)
