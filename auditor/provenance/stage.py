"""The verify stage: is the bundle exactly upstream + the listed commits, by git tree hash?

Steps: resolve upstream (and its pin) and the series head; check the listed series against the
branch; replay it onto upstream; unpack and hash the bundle; compare; look for anomalies. The
proof holds when every step agrees. Whenever git worked and the bundle unpacked, the verified
:class:`~auditor.model.Workspace` is published for the later stages, even when the proof fails.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from auditor.errors import InputError
from auditor.fsutil import relative_path
from auditor.gitio import TreeEntry
from auditor.model import (
    Action,
    BundleFile,
    Category,
    Finding,
    Severity,
    StageResult,
    StageStatus,
    Workspace,
    fingerprint_of,
)
from auditor.policy import Policy, policy_of
from auditor.provenance.anomalies import Anomaly, AnomalyKind, find_anomalies
from auditor.provenance.bundlefiles import BundleFiles, DirFiles, GitFiles, LazyUnpack
from auditor.provenance.compare import compare, display, tree_entries
from auditor.provenance.gitview import ProofGit, ignored_state, open_repos
from auditor.provenance.proofcache import CachedProof, ProofCache, proof_key
from auditor.provenance.replay import Replay, replay
from auditor.provenance.series import (
    LIST_MAX,
    MergeChange,
    MergedUpstream,
    SeriesCheck,
    check_series,
    diff_stats,
    merge_changes,
    one_repository,
    upstream_picks,
    upstream_reach,
)
from auditor.provenance.treehash import hash_folder, manifest_digest, tree_of_entries
from auditor.provenance.unpack import (
    AmbiguousBundle,
    BundleScan,
    Unpacked,
    hash_bundle,
    unpack_bundle,
)
from auditor.results.verify import (
    CommitRecord,
    HeadRef,
    ProofCheck,
    ReplayRecord,
    SeriesRecord,
    UpstreamRef,
    VerifyData,
)
from auditor.spec import Spec
from auditor.stage import Context, Stage

DIFFERENCES_MAX = 500  # listed in the JSON; the total is always given


def finding_of(a: Anomaly, policy: Policy) -> Finding:
    category = Category.BINARY_ARTIFACT if a.kind is AnomalyKind.BINARY_ADDED \
        else Category.PROVENANCE
    rule = f"provenance.{a.kind.value}"
    path = display(a.path)
    return Finding(rule=rule, category=category, severity=a.severity,
                   action=policy.action_for(category, path, rule), path=path, line=0,
                   commit=a.commit, inherited=a.inherited, message=a.message, scanner="verify",
                   fingerprint=fingerprint_of(rule, path, a.evidence))


class VerifyStage(Stage):
    name = "verify"
    needs = ()

    def run(self, ctx: Context) -> StageResult:
        spec = ctx.spec
        policy = policy_of(spec)
        upstream_git, git = open_repos(spec.upstream.repo, spec.patches.repo)
        # the proof cache (auditor.provenance.proofcache): reused only when every input is the same
        key = proof_key(spec, policy.path, upstream_git, git)
        cache = ProofCache(ctx.cache_dir) if key is not None else None
        if key is not None and cache is not None:
            hit = cache.get(key)
            if hit is not None:
                ctx.progress(f"verify: the proof of bundle {spec.bundle.path.name} is cached "
                             f"({key.digest[:12]}); the bundle is unpacked only if a stage "
                             "needs the folder")
                ctx.workspace = cached_workspace(ctx, hit, upstream_git, git)
                return hit.result
        try:
            result = self._prove(ctx, policy, upstream_git, git)
        except AmbiguousBundle as exc:  # a member extractors read differently: a failed proof
            return StageResult(self.name, StageStatus.FAILED, reasons=(exc.message,))
        ws = ctx.workspace
        if key is not None and cache is not None and ws is not None:
            cache.put(key, result, ws, spec.bundle.path)
        return result

    def _prove(self, ctx: Context, policy: Policy, upstream_git: ProofGit,
               git: ProofGit) -> StageResult:
        spec = ctx.spec
        refs = _resolve_refs(spec, upstream_git, git)
        base, head = refs.base, refs.head

        # The trees, the series check, the replay, the tree listings and the diff stats only need
        # git; the unpacking and hashing only need the bundle. They run side by side (git works
        # in its own processes while Python writes and hashes files), and everything after waits
        # for both, so the results are the same.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="verify-git") as pool:
            git_side = (pool.submit(_git_side, ctx, upstream_git, git, base, head,
                                    spec.patches.commits,
                                    refs.also)
                        if base is not None and head is not None else None)
            bundle, files = _read_bundle(ctx, git)
            side = git_side.result() if git_side is not None else None
        if side is not None:
            upstream_tree: str | None = side.upstream_tree
            head_tree: str | None = side.head_tree
        else:
            upstream_tree = git.tree_of(base) if base else None
            head_tree = git.tree_of(head) if head else None
        data = VerifyData(
            ok=False,
            upstream=UpstreamRef(ref=spec.upstream.ref, commit=base, ref_commit=refs.ref_commit,
                                 pinned=spec.upstream.commit, tree=upstream_tree),
            head=HeadRef(ref=spec.patches.ref, commit=head, tree=head_tree),
            expected_tree=None, bundle_tree=bundle.tree, bundle=_bundle_json(spec, bundle.info),
            bundle_format=bundle.info.format.to_json() if bundle.info.format else None,
            manifest_digest=manifest_digest(bundle.manifest), file_count=len(bundle.manifest))
        if base is None or head is None or side is None:
            return StageResult(self.name, StageStatus.FAILED, data, reasons=refs.reasons)
        reasons = [*refs.reasons, *_series_reasons(ctx, side, policy)]
        # the commits the bundle may be `git archive` of: the one it records, the head
        archived = [c for c in (bundle.info.archive_commit, head)
                    if c and git.rev_parse(c) == c and git.tree_of(c) == side.against]
        differences = compare(git, side.against, bundle.manifest, files, ctx.workdir / "verify",
                              commits=archived)
        unexplained = [d for d in differences if d.explained is None]
        if unexplained:
            what = (f"the head of {spec.patches.ref}" if spec.patches.model == "merge"
                    else "the replayed series" if side.replay.tree
                    else f"{spec.patches.ref} (series did not apply)")
            reasons.append(f"bundle tree {bundle.tree[:12]} differs from {what} "
                           f"({len(unexplained)} path{'s' if len(unexplained) != 1 else ''})")
        anomalies = find_anomalies(
            git=git, upstream_commit=base, head_commit=head,
            upstream=side.upstream_entries, series=side.series_entries,
            manifest=bundle.manifest, files=files,
            git_entries=bundle.info.git_entries, differences=differences,
            modes=bundle.info.modes,
            own=[c for c in side.series.actual if c not in side.picks])
        findings = (*(finding_of(a, policy) for a in anomalies if a.is_finding),
                    *ignored_findings(upstream_git, git, policy))
        ok = not reasons
        rp = side.replay
        data = replace(data, ok=ok, expected_tree=rp.tree, proof=ProofCheck(
            series=replace(_series_record(side.series, spec), upstream_picks=side.picks,
                           upstream_merged=refs.merged.heads,
                           upstream_merged_total=refs.merged.total,
                           upstream_also_total=refs.also_total,
                           upstream_also=tuple(spec.upstream.also),
                           merge_changes={k: m.paths for k, m in side.merged.items()},
                           merge_patch_ids={k: m.patch_id for k, m in side.merged.items()
                                            if m.patch_id}),
            replay=ReplayRecord(applied=len(rp.applied), failed_commit=rp.failed_commit,
                                error=rp.error or None),
            compared_with=("replayed series" if rp.tree and spec.patches.model != "merge"
                           else "head"),
            bundle_matches_head=bundle.tree == side.head_tree,
            differences=tuple(d.to_json() for d in differences[:DIFFERENCES_MAX]),
            differences_total=len(differences),
            anomalies=tuple(a.to_json() for a in anomalies),
            commits=tuple(CommitRecord(c, side.stats.get(c.sha)) for c in side.series.commits)))
        ctx.workspace = Workspace(
            upstream_repo=upstream_git.repo, patches_repo=git.repo,
            upstream_commit=base, upstream_tree=side.upstream_tree, head_commit=head,
            head_tree=side.head_tree, expected_tree=rp.tree, commits=side.series.commits,
            bundle_root=bundle.root, bundle_tree=bundle.tree, manifest=bundle.manifest,
            proof_ok=ok, files=files, upstream_also=refs.also, upstream_picks=side.picks)
        return StageResult(self.name, StageStatus.OK if ok else StageStatus.FAILED, data,
                           findings=findings, reasons=tuple(reasons))


def ignored_findings(upstream_git: ProofGit, git: ProofGit, policy: Policy) -> list[Finding]:
    """What a given repository holds that would change the history git shows (replace refs,
    grafts, a shallow file): never used by the proof (:mod:`auditor.gitseal`), and reported, since
    a repository handed over for an audit has no reason to carry them. One finding per kind and
    content (one repository named twice in the spec gives one)."""
    out: dict[tuple[str, str], Finding] = {}
    for where, ign in ignored_state(upstream_git, git):
        refs = ign.replace_refs
        items = [("replace-refs", Severity.HIGH, "|".join(refs), "replace refs "
                  + ", ".join(refs[:5]) + (f" and {len(refs) - 5} more" if len(refs) > 5 else "")),
                 ("grafts", Severity.HIGH, ign.grafts or "", "info/grafts"),
                 ("shallow", Severity.MEDIUM, ign.shallow or "", "a shallow file")]
        for kind, severity, evidence, what in items:
            if not evidence or (kind, evidence) in out:
                continue
            rule = f"provenance.{kind}"
            # a shallow file only cuts history short: ignored, a missing object stops the proof
            action = (Action.INFO if kind == "shallow"
                      else policy.action_for(Category.PROVENANCE, "", rule))
            out[kind, evidence] = Finding(
                rule=rule, category=Category.PROVENANCE, severity=severity,
                action=action, path="", line=0,
                commit=None, scanner="verify", fingerprint=fingerprint_of(rule, "", evidence),
                message=f"{where} carries {what} (a rewrite of the history git shows): ignored; "
                        "the proof and every scan read the commits as their objects are")
    return list(out.values())


@dataclass(frozen=True)
class _Refs:
    """Upstream (its ref and pin) and the series head, resolved; why not, one line each."""

    base: str | None  # the proof's upstream commit: the pin when it exists, else the ref's
    ref_commit: str | None
    head: str | None
    reasons: tuple[str, ...]
    also: tuple[str, ...] = ()  # [upstream] also, resolved, and the merged upstream heads
    merged: MergedUpstream = MergedUpstream((), 0)
    also_total: int = 0  # commits of a merge-based fork's range that [upstream] also reaches


def _resolve_refs(spec: Spec, upstream_git: ProofGit, git: ProofGit) -> _Refs:
    reasons: list[str] = []
    ref_commit = upstream_git.rev_parse(spec.upstream.ref)
    base = ref_commit
    if ref_commit is None:
        reasons.append(f"upstream ref {spec.upstream.ref} does not resolve in "
                       f"{spec.upstream.repo}")
    pinned = spec.upstream.commit
    if pinned is not None:
        if upstream_git.rev_parse(pinned) != pinned:
            reasons.append(f"pinned upstream commit {pinned} does not exist in "
                           f"{spec.upstream.repo}")
        else:
            base = pinned
            if ref_commit is not None and ref_commit != pinned:
                reasons.append(f"upstream ref {spec.upstream.ref} resolves to "
                               f"{ref_commit[:12]}, not the pinned commit {pinned[:12]}: "
                               f"the tag was moved or re-created")
    head = git.rev_parse(spec.patches.ref)
    if head is None:
        reasons.append(f"patches ref {spec.patches.ref} does not resolve in "
                       f"{spec.patches.repo}")
    reach = upstream_reach(upstream_git, git, base, head, spec.upstream.also,
                           merge_model=spec.patches.model == "merge",
                           one_repository=one_repository(spec.upstream.repo, spec.patches.repo))
    reasons += [f"[upstream] also: {name} does not resolve in {spec.upstream.repo}"
                for name in reach.unresolved]
    return _Refs(base=base, ref_commit=ref_commit, head=head, reasons=tuple(reasons),
                 also=reach.also, merged=reach.merged, also_total=reach.also_total)


def _series_reasons(ctx: Context, side: _GitSide, policy: Policy) -> list[str]:
    """How the listed series differs from the branch, and whether it replays to the head."""
    spec = ctx.spec
    merge_model = spec.patches.model == "merge"
    allow_merges = spec.patches.allow_merges or policy.allow_merges or merge_model
    series, rp = side.series, side.replay
    reasons = series.reasons(allow_merges)
    if merge_model:  # nothing replayed: the proof is ancestry, the list and the head's tree
        return reasons
    if rp.tree is None:
        failed = next(c for c in series.commits if c.sha == rp.failed_commit)
        reasons.append(f"the series does not apply: commit {failed.sha[:12]} "
                       f"({display(failed.subject)[:60]}) conflicts after "
                       f"{len(rp.applied)} applied: {rp.error}")
    elif rp.tree != side.head_tree and not series.reasons(allow_merges=True):
        reasons.append(f"the replayed series gives tree {rp.tree[:12]}, but "
                       f"{spec.patches.ref} has tree {side.head_tree[:12]}")
    return reasons


def _series_record(series: SeriesCheck, spec: Spec) -> SeriesRecord:
    """The series check as the stage reports it (long lists capped; totals given)."""
    return SeriesRecord(
        model=spec.patches.model, derived=spec.patches.commits_range,
        listed=series.listed, unlisted=series.unlisted[:LIST_MAX],
        unlisted_total=len(series.unlisted), missing=tuple(m.listed for m in series.missing),
        missing_why={m.listed: m.why for m in series.missing}, duplicates=series.duplicates,
        merges=series.merges, order_ok=series.order_ok, patch_ids=series.patch_ids,
        actual=series.actual[:LIST_MAX])


@dataclass(frozen=True)
class _GitSide:
    """What the proof reads from git alone (no bundle): computed beside the unpacking."""

    upstream_tree: str
    head_tree: str
    series: SeriesCheck
    replay: Replay
    against: str  # the replayed tree, or the head's when the series did not apply
    upstream_entries: Mapping[str, TreeEntry]
    series_entries: Mapping[str, TreeEntry]
    stats: dict[str, dict[str, int]]
    picks: Mapping[str, str]  # listed commits that are upstream's applied again
    merged: Mapping[str, MergeChange]  # merges with lines of their own -> their change


def _git_side(ctx: Context, upstream_git: ProofGit, git: ProofGit, base: str, head: str,
              listed: Sequence[str], also: Sequence[str] = ()) -> _GitSide:
    upstream_tree, head_tree = git.tree_of(base), git.tree_of(head)
    # plain progress lines: the main thread may be showing a spinner, and rich allows one at a time
    ctx.progress("checking the series")
    spec = ctx.spec
    merge_model = spec.patches.model == "merge"
    series = check_series(git, base, head, None if spec.patches.commits_range else listed,
                          topo=merge_model, also=also)
    absent = [m.listed for m in series.missing if m.sha is None]
    if absent:  # bad input (exit 2), not a failed proof: the spec names commits nobody has
        raise InputError(
            f"{ctx.spec.patches.commits_source}: {len(absent)} listed commit(s) do not exist in "
            f"the patches repository {ctx.spec.patches.repo}: {', '.join(absent[:5])}"
            + (f" and {len(absent) - 5} more" if len(absent) > 5 else ""),
            hint="fetch the series into the patches repository, or fix the list")
    if merge_model:  # a fork branch that merges upstream: its head's tree is the claim
        rp = Replay(tree=head_tree, applied=tuple(c.sha for c in series.commits))
    else:
        ctx.progress(f"replaying {len(series.commits)} commits onto {base[:12]}")
        rp = replay(git, base, series.commits, ctx.workdir / "verify")
    against = rp.tree or head_tree
    merged = merge_changes(git, series.commits)
    stats = diff_stats(git, [c.sha for c in series.commits])
    # a merge's diff is its own lines (against git's own merge of its parents), as its review
    # hunks are; a clean merge keeps +0 -0
    stats.update({sha: m.stats for sha, m in merged.items() if m.stats is not None})
    return _GitSide(upstream_tree=upstream_tree, head_tree=head_tree, series=series, replay=rp,
                    against=against, upstream_entries=tree_entries(git, upstream_tree),
                    series_entries=tree_entries(git, against), stats=stats,
                    picks=upstream_picks(upstream_git, git, base, head, series.commits, also,
                                         refs=not one_repository(spec.upstream.repo, spec.patches.repo)),
                    merged=merged)


@dataclass(frozen=True)
class _Bundle:
    info: Unpacked | BundleScan
    tree: str
    manifest: Mapping[str, BundleFile]
    root: Path  # the unpacked copy; for a bundle read without unpacking, where none is yet


def _read_bundle(ctx: Context, git: ProofGit) -> tuple[_Bundle, BundleFiles]:
    """Hash the bundle: a file in one streaming pass that writes nothing (the later stages read
    its files from the proven git blobs; a copy is made only when one needs a folder or a blob git
    lacks); a folder, or a file whose sizes its headers misstate, by unpacking and hashing it."""
    spec = ctx.spec
    scanned = None
    unpacking = f"unpacking bundle {spec.bundle.path}"
    if not spec.bundle.path.is_dir():  # a folder is copied (and checked) entry by entry
        with ctx.status(f"reading and hashing bundle {spec.bundle.path}"):
            scanned = hash_bundle(spec.bundle)
        unpacking = "its sizes do not match its headers: unpacking it to hash the copy"
    if scanned is not None:
        tree = tree_of_entries((f.path, f.mode, f.blob) for f in scanned.manifest.values())
        lazy = LazyUnpack(spec.bundle, ctx.workdir, tree, jobs=ctx.options.jobs * 2)
        return (_Bundle(scanned, tree, scanned.manifest, ctx.workdir / _NOT_UNPACKED),
                GitFiles(git, scanned.manifest, lazy))
    with ctx.status(unpacking):
        unpacked = unpack_bundle(spec.bundle, ctx.workdir)
    with ctx.status(f"hashing {unpacked.files} bundle files"):
        hashed = hash_folder(unpacked.root, jobs=ctx.options.jobs * 2, known=unpacked.digests)
    return (_Bundle(unpacked, hashed.tree, hashed.manifest, unpacked.root),
            DirFiles(unpacked.root))


#: ``Workspace.bundle_root`` of a bundle that was not unpacked (nothing is there until a stage asks
#: for the folder through :func:`auditor.provenance.bundlefiles.bundle_root`)
_NOT_UNPACKED = "bundle-unpacked-on-demand"


def cached_workspace(ctx: Context, hit: CachedProof, upstream_git: ProofGit,
                     git: ProofGit) -> Workspace:
    """The workspace of a cached proof: files are read from git by their proven blobs, and the
    bundle is unpacked (and checked to have the proven tree) only when a stage needs a folder."""
    spec, w = ctx.spec, hit.workspace
    lazy = LazyUnpack(spec.bundle, ctx.workdir, w["bundle_tree"], jobs=ctx.options.jobs * 2)
    return Workspace(
        upstream_repo=upstream_git.repo, patches_repo=git.repo,
        upstream_commit=w["upstream_commit"], upstream_tree=w["upstream_tree"],
        head_commit=w["head_commit"], head_tree=w["head_tree"],
        expected_tree=w["expected_tree"], commits=hit.commits,
        bundle_root=ctx.workdir / _NOT_UNPACKED, bundle_tree=w["bundle_tree"],
        manifest=hit.manifest, proof_ok=w["proof_ok"], files=GitFiles(git, hit.manifest, lazy),
        upstream_also=tuple(w.get("upstream_also", ())),
        upstream_picks=dict(w.get("upstream_picks", {})))


def _bundle_json(spec: Spec, u: Unpacked | BundleScan) -> dict[str, Any]:
    return {"path": relative_path(spec.bundle.path, spec.root), "kind": u.kind.value, "compression": u.compression,
            "strip_components": spec.bundle.strip_components, "bytes": u.bytes,
            "archive_commit": u.archive_commit,
            "git_dirs": [display(p) for p in u.git_entries]}

