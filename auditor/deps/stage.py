"""The deps stage: what comes in with the patches (dependency diff) and known vulnerabilities.

Both trees are read statically (upstream through git, the bundle from its verified copy); nothing
is built, installed or run. Findings are attributed to the series commit that introduced the
declaring line, and get their action from the policy.

The deployed surface (:mod:`auditor.deps.surface`, from the engine target or ``[deps]
deployed``) decides what counts: declarations off it are still read, diffed and attributed, but
their unpinned ranges are not a reason and their pins are not looked up. With ``[deps] lock``
(:mod:`auditor.deps.lock`) the lock's versions are looked up instead, and a deployed declaration
the lock does not satisfy is a finding (:mod:`auditor.deps.lockcheck`).

Fail-closed choices:

* ``deps.vulns = "none"`` is recorded as not checked and so makes the stage INCOMPLETE: an audit
  that looked up no advisory data must not exit 0.
* Without a lock, deployed dependencies that cannot be looked up (not pinned to one version, a
  direct URL, a CMake fetch not pinned to content) are ONE not-checked reason naming their count
  and the fix; the list is ``unpinned_deployed`` in its result.
* What the extractors could not read in a *deployed* bundle file (a computed
  ``install_requires``, a malformed file, a ``pip install $X``) is not checked, unless the engine
  profile names the deployed file a computed ``install_requires`` is read from. The same off the
  surface is listed (``not_deployed_not_checked``); for *upstream* it is only listed
  (``upstream_not_checked``).
* An OSV snapshot whose newest record is older than ``[deps] max_age_days`` is not a check.
* A vulnerability whose record gives no usable severity is reported as ``high``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import assert_never

from auditor.deps.declaration import Declaration, Extraction, Kind, Skip, Topic
from auditor.deps.diff import DepsDiff, Issue, diff
from auditor.deps.extract import extract_tree
from auditor.deps.lock import Lock, marker_holds, read_lock
from auditor.deps.lockcheck import drift_issues
from auditor.deps.surface import Surface, build_surface, split
from auditor.deps.tree import BundleTree, DirTree, GitTree, Tree
from auditor.deps.typosquat import popular_packages
from auditor.deps.vulns.interface import (
    NoSource,
    Package,
    SourceKind,
    Vulnerability,
    VulnerabilitySource,
    VulnReport,
)
from auditor.deps.vulns.osv import OsvSnapshotSource
from auditor.deps.vulns.pipaudit import PipAuditSource
from auditor.fsutil import relative_path
from auditor.gitio import Git
from auditor.model import (
    Category,
    Finding,
    Severity,
    StageResult,
    Workspace,
    fingerprint_of,
    status_for,
)
from auditor.policy import Policy, apply_waivers, policy_of, waivers_of
from auditor.provenance.blame import UNEXPLAINED, line_origins
from auditor.provenance.bundlefiles import bundle_files
from auditor.results.deps import (
    DeclarationRecord,
    DeployedSplit,
    DepsData,
    FetchRecord,
    IndexRecord,
    LockedRecord,
    LockRecord,
    SourceRecord,
    UnpinnedRecord,
    VulnRecord,
)
from auditor.scan.docs import ceiling as docs_ceiling
from auditor.spec import DepsSpec, Spec
from auditor.stage import Context, Stage

SCANNER = "deps"


def source_kind(vulns: str) -> SourceKind:
    if vulns.startswith("osv:"):
        return SourceKind.OSV
    return SourceKind(vulns)


def make_source(deps: DepsSpec, workdir: Path, *, online: bool,
                lock: Lock | None = None, root: Path | None = None) -> VulnerabilitySource:
    """The vulnerability source the spec names (``root``: the spec's folder, which outputs name
    a snapshot relative to)."""
    kind = source_kind(deps.vulns)
    if kind is SourceKind.OSV:
        assert deps.osv_path is not None
        return OsvSnapshotSource(deps.osv_path,
                                 shown=relative_path(deps.osv_path, root) if root else None)
    if kind is SourceKind.PIP_AUDIT:
        hashed = lock is not None and lock.format == "requirements" and all(
            p.hashes for p in lock.packages) and len({p.name for p in lock.packages}) == len(
            lock.packages)
        return PipAuditSource(workdir / "deps", online=online, osv_url=deps.osv_url,
                              hashed_lock=lock.path if hashed and lock is not None else None)
    if kind is SourceKind.NONE:
        return NoSource()
    assert_never(kind)


def why_unpinned(d: Declaration) -> str:
    if d.kind is Kind.PYPI:
        return f"not pinned to one version ({d.specifier or 'any version'})"
    if d.kind in (Kind.URL, Kind.VCS):
        return "a direct URL/VCS requirement has no version to look up"
    return "a CMake fetch has no PyPI version to look up"


def partition_pins(decls: Sequence[Declaration]) -> tuple[list[Package], list[Declaration]]:
    """Exactly pinned PyPI packages to look up, and the package declarations that are not."""
    pinned: dict[tuple[str, str], Package] = {}
    others: list[Declaration] = []
    for d in decls:
        if d.kind is Kind.PYPI and d.pin:
            pinned[(d.name, d.pin)] = Package(d.name, d.pin)
        elif d.kind is Kind.INDEX or d.group == "constraint":
            continue
        elif d.kind in (Kind.CMAKE_GIT, Kind.CMAKE_URL) and (d.pinned_ref or d.hash):
            continue  # pinned to content; no advisory database covers it by version
        else:
            others.append(d)
    return sorted(pinned.values(), key=lambda p: (p.name, p.version)), others


class Attributor:
    """Which series commit introduced a declaration (cached git blame per file)."""

    def __init__(self, ws: Workspace, upstream: Tree) -> None:
        self.ws = ws
        self.upstream = upstream
        self._origins: dict[str, list[str | None]] = {}
        self._removals: dict[tuple[str, str], str | None] = {}
        self._upstream_lines: dict[str, list[str]] = {}

    def bundle_lines(self, path: str, first: int, last: int) -> tuple[str | None, bool, bool]:
        """(commit, inherited, unexplained) for lines ``first..last`` of a bundle file: the
        latest series commit among them, else unexplained if any line is, else upstream's."""
        if path not in self._origins:
            try:
                self._origins[path] = line_origins(self.ws, path)
            except OSError:
                self._origins[path] = []
        origins = self._origins[path]
        span = [origins[n - 1] if 0 < n <= len(origins) else UNEXPLAINED
                for n in range(first, max(first, last) + 1)]
        order = {c.sha: i for i, c in enumerate(self.ws.commits)}
        commits = [o for o in span if o is not None and o != UNEXPLAINED]
        if commits:
            return max(commits, key=lambda sha: order.get(sha, -1)), False, False
        if UNEXPLAINED in span:
            return None, False, True
        return None, True, False

    def removal(self, path: str, line: int) -> str | None:
        """The newest series commit that changed how often upstream's line ``line`` of ``path``
        occurs in that file (``git log -S``): the commit that removed it."""
        if path not in self._upstream_lines:
            self._upstream_lines[path] = (self.upstream.read_text(path) or "").splitlines()
        lines = self._upstream_lines[path]
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        key = (path, text)
        if key not in self._removals:
            sha = None
            if text.strip():
                res = Git(self.ws.patches_repo).run(
                    "log", "--format=%H", f"-S{text.strip()}",
                    *self.ws.series_revs, "--", path, check=False)
                shas = res.stdout.split() if res.returncode == 0 else []
                sha = shas[0] if shas else None
            self._removals[key] = sha
        return self._removals[key]


_SEVERITY = {"critical": Severity.CRITICAL, "high": Severity.HIGH, "medium": Severity.MEDIUM,
             "low": Severity.LOW}


def _finding(issue: Issue, att: Attributor, policy: Policy) -> Finding:
    d = issue.decl
    message = issue.message
    if issue.in_lock:
        commit, inherited = None, False
    elif issue.upstream_side:
        commit, inherited = att.removal(d.file, d.line), False
        message += f" (was line {d.line} upstream)"
    else:
        commit, inherited, unexplained = att.bundle_lines(d.file, d.line, d.end_line)
        if unexplained:
            message += " (this line comes from no listed commit)"
    code = d.text or f"{d.kind.value} {d.name} {d.specifier} {d.url or ''}"
    return Finding(
        rule=issue.rule, category=Category.DEPENDENCY, severity=issue.severity,
        # an install in the docs is at most reviewed (auditor.scan.docs)
        action=docs_ceiling(d.file, policy.action_for(Category.DEPENDENCY, d.file, issue.rule)),
        path=d.file,
        line=d.line, commit=commit, message=message, scanner=SCANNER,
        fingerprint=fingerprint_of(issue.rule, d.file, code), inherited=inherited,
        snippet=d.text, end_line=d.end_line or None)


def vulnerability_issues(vulns: Sequence[Vulnerability], bundle: Sequence[Declaration]
                         ) -> list[Issue]:
    out = []
    for v in vulns:
        for d in bundle:
            if d.kind is Kind.PYPI and d.name == v.package and d.pin == v.version:
                aliases = f" ({', '.join(v.aliases)})" if v.aliases else ""
                fixed = f"; fixed in {', '.join(v.fixed)}" if v.fixed else "; no fixed version"
                summary = f": {v.summary}" if v.summary else ""
                issue = Issue("dependency.vulnerable", _SEVERITY.get(v.severity or "",
                                                                     Severity.HIGH),
                              d, f"{d.name}=={v.version} is affected by {v.id}{aliases}"
                                 f"{fixed}{summary}")
                out.append(issue)
    return out


def lock_vulnerability_issues(vulns: Sequence[Vulnerability], deployed: Sequence[Declaration],
                              lock: Lock, lock_label: str) -> list[Issue]:
    """Vulnerabilities of the lock's versions: at each deployed declaration of the package, or
    at the lock's own line for a package only the lock names (a transitive dependency)."""
    out = []
    by_name = lock.by_name()
    for v in vulns:
        decls = [d for d in deployed if d.kind.is_package and d.name == v.package
                 and marker_holds(d.markers, lock.env) and d.group != "constraint"]
        aliases = f" ({', '.join(v.aliases)})" if v.aliases else ""
        fixed = f"; fixed in {', '.join(v.fixed)}" if v.fixed else "; no fixed version"
        summary = f": {v.summary}" if v.summary else ""
        severity = _SEVERITY.get(v.severity or "", Severity.HIGH)
        text = f"{v.package}=={v.version} (in the lock {lock_label}) is affected by {v.id}" \
            f"{aliases}{fixed}{summary}"
        for d in decls:
            out.append(Issue("dependency.vulnerable", severity, d, text))
        if not decls:
            entry = next((p for p in by_name.get(v.package, []) if p.version == v.version), None)
            line = entry.line if entry else 0
            lock_decl = Declaration(name=v.package, specifier=f"=={v.version}", pin=v.version,
                                    markers="", url=None, kind=Kind.PYPI, file=lock_label,
                                    line=line, group="lock", text=f"{v.package}=={v.version}")
            out.append(Issue("dependency.vulnerable", severity, lock_decl,
                             text + " (a dependency of a dependency: no deployed file names it)",
                             in_lock=True))
    return out


def snapshot_age(report: VulnReport, max_age_days: int, now: dt.datetime) -> str | None:
    """A not-checked line when the OSV snapshot is older than ``max_age_days``, else None."""
    if report.source.kind is not SourceKind.OSV or not report.source.records:
        return None
    date = report.source.date
    try:
        newest = dt.datetime.fromisoformat(str(date).replace("Z", "+00:00"))
    except ValueError:
        return (f"vulnerabilities: the OSV snapshot's date {date!r} cannot be read, so its age is "
                "unknown: not checked")
    if newest.tzinfo is None:
        newest = newest.replace(tzinfo=dt.UTC)
    age = (now - newest).days
    if age <= max_age_days:
        return None
    return (f"vulnerabilities: the OSV snapshot is {age} days old (newest record modified "
            f"{newest.date().isoformat()}; [deps] max_age_days = {max_age_days}): advisories "
            "published since are not checked; refresh it with `auditor osv fetch`")


def record(d: Declaration) -> DeclarationRecord:
    return DeclarationRecord(
        name=d.name, kind=d.kind, specifier=d.specifier, pin=d.pin, markers=d.markers,
        url=d.url, extras=d.extras, ref=d.ref, hash=d.hash, file=d.file, line=d.line,
        end_line=d.end_line or d.line, group=d.group)


def _fetch(d: Declaration) -> FetchRecord:
    return FetchRecord(name=d.name, kind=d.kind,
                       repository=d.url if d.kind is Kind.CMAKE_GIT else None, tag=d.ref,
                       url=d.url if d.kind is Kind.CMAKE_URL else None, hash=d.hash,
                       pinned=d.pinned_ref if d.kind is Kind.CMAKE_GIT else bool(d.hash),
                       file=d.file, line=d.line)


def _lock_record(lock: Lock, label: str) -> LockRecord:
    j = lock.to_json()
    return LockRecord(path=label, format=lock.format, environment=j["environment"],
                      packages=tuple(LockedRecord(name=p.name, version=p.version, line=p.line,
                                                  hashes=tuple(p.hashes), markers=p.markers,
                                                  url=p.url) for p in lock.packages),
                      indexes=tuple(j["indexes"]))


def _vuln_record(v: Vulnerability, waived: Sequence[Finding]) -> VulnRecord:
    """``v``, waived when it gave findings and a waiver covers every one of them."""
    is_waived = bool(waived) and all(f.waived for f in waived)
    return VulnRecord(id=v.id, aliases=v.aliases, package=v.package, version=v.version,
                      fixed=v.fixed, severity=v.severity, severity_source=v.severity_source,
                      summary=v.summary, modified=v.modified, waived=is_waived,
                      waiver=waived[0].waiver if is_waived else None)


@dataclass(frozen=True)
class Read:
    """What the deps stage read and decided, before it is reported."""

    up: Extraction
    bundle: Extraction
    diff: DepsDiff
    report: VulnReport
    surface: Surface | None = None
    lock: Lock | None = None
    lock_label: str = ""
    unpinned: Sequence[Declaration] = ()
    notes: Sequence[str] = ()
    skipped_off: Sequence[Skip] = ()
    shell_computed: Sequence[Skip] = ()


def deps_data(r: Read, vuln_findings: Mapping[int, Sequence[Finding]] | None = None
              ) -> DepsData:
    """The stage's typed result; ``vuln_findings``: the findings of each vulnerability (by its
    position in the report), after waivers."""
    b, surface = r.bundle, r.surface
    split = None if surface is None else DeployedSplit(
        surface=surface.to_json(),
        deployed=tuple(record(d) for d in b.declarations if surface.deployed(d)),
        not_deployed=tuple(record(d) for d in b.declarations if not surface.deployed(d)),
        not_deployed_not_checked=tuple(s.to_json() for s in r.skipped_off))
    by_vuln = vuln_findings or {}
    return DepsData(
        upstream=tuple(record(d) for d in r.up.declarations),
        bundle=tuple(record(d) for d in b.declarations),
        added=tuple(record(d) for d in r.diff.added),
        removed=tuple(record(d) for d in r.diff.removed),
        changed=tuple(c.to_json() for c in r.diff.changed),
        vulnerabilities=tuple(_vuln_record(v, by_vuln.get(i, ()))
                              for i, v in enumerate(r.report.vulnerabilities)),
        source=SourceRecord(**r.report.source.to_json()),
        cmake_fetches=tuple(_fetch(d) for d in b.declarations
                            if d.kind in (Kind.CMAKE_GIT, Kind.CMAKE_URL)),
        indexes=tuple(IndexRecord(option=d.name, url=d.url, file=d.file, line=d.line)
                      for d in b.declarations if d.kind is Kind.INDEX),
        checked=tuple((p.name, p.version) for p in r.report.checked),
        files={"upstream": r.up.files, "bundle": b.files},
        upstream_not_checked=r.up.not_checked, split=split,
        lock=_lock_record(r.lock, r.lock_label) if r.lock is not None else None,
        unpinned_deployed=tuple(UnpinnedRecord(record(d), why_unpinned(d)) for d in r.unpinned),
        notes=tuple(r.notes), shell_computed=tuple(sk.to_json() for sk in r.shell_computed))


def surface_for(spec: Spec, b: Extraction) -> Surface:
    deps = spec.deps
    assert deps is not None
    target = spec.profile.targets.get(spec.engine.target)
    if deps.deployed is not None:
        return build_surface(deps.deployed, b, target="custom", source="[deps] deployed",
                             computed_requires_from=target.computed_requires_from
                             if target else ())
    if target is None:
        return build_surface(("**",), b, target="all",
                             source=f"profile {spec.profile.name}: no targets, everything")
    return build_surface(target.deployed, b, target=target.name,
                         source=f"profile {spec.profile.name}, target {target.name}",
                         computed_requires_from=target.computed_requires_from)


def unpinned_reason(unpinned: Sequence[Declaration]) -> str:
    names = sorted({d.name for d in unpinned})
    head = ", ".join(names[:5]) + (f", … (+{len(names) - 5})" if len(names) > 5 else "")
    return (f"vulnerabilities of {len(unpinned)} unpinned deployed requirement(s) not checked "
            f"({head}): give [deps] lock (a pinned requirements file or pylock.toml of what is "
            "deployed); the list is in deps.unpinned_deployed")


class DepsStage(Stage):
    name = "deps"
    needs = ("verify",)

    def requested(self, spec: Spec) -> bool:
        return spec.deps is not None

    def run(self, ctx: Context) -> StageResult:
        ws = ctx.workspace
        deps = ctx.spec.deps
        assert ws is not None and deps is not None  # the pipeline checks both
        policy = policy_of(ctx.spec)
        with ctx.status("reading dependency declarations"):
            upstream_tree = GitTree(Git(ws.upstream_repo), ws.upstream_commit)
            up = extract_tree(upstream_tree)
            b = extract_tree(BundleTree(bundle_files(ws), ws.manifest) if ws.manifest
                             else DirTree(ws.bundle_root, ws.manifest))
        lock = read_lock(deps.lock) if deps.lock is not None else None
        lock_label = _lock_label(ctx.spec, deps.lock)
        surface = surface_for(ctx.spec, b)
        dd = diff(up.declarations, b.declarations, typosquat_distance=deps.typosquat_distance,
                  popular=popular_packages())
        deployed, _ = split(b.declarations, surface)
        todo = _lookups(lock, deployed)
        source = make_source(deps, ctx.workdir, online=ctx.options.online, lock=lock,
                             root=ctx.spec.root)
        with ctx.status(f"vulnerabilities of {len(todo.pinned)} pinned packages: {deps.vulns}"):
            report = source.check(todo.pinned)
        issues, of_vuln = _issues(dd, report, deployed, lock, lock_label)
        att = Attributor(ws, upstream_tree)
        findings = [_finding(i, att, policy) for i in issues]
        # the waivers keep the findings' order (expired waivers add findings at the end)
        findings = apply_waivers(findings, waivers_of(ctx.spec))
        by_vuln: dict[int, list[Finding]] = {}
        for n, v in enumerate(of_vuln):
            if v is not None:
                by_vuln.setdefault(v, []).append(findings[n])
        findings.sort(key=lambda f: (f.path, f.line, f.rule, f.message))
        notes = list(todo.notes)
        skips = _skips(b, surface, notes)
        reasons_nc = [*skips.deployed, *report.not_checked, *todo.gaps]
        if todo.unpinned:
            reasons_nc.append(unpinned_reason(todo.unpinned))
        too_old = snapshot_age(report, deps.max_age_days, dt.datetime.now(dt.UTC))
        if too_old:
            reasons_nc.append(too_old)
        not_checked = tuple(dict.fromkeys(reasons_nc))
        read = Read(up=up, bundle=b, diff=dd, report=report, surface=surface, lock=lock,
                    lock_label=lock_label, unpinned=todo.unpinned, notes=notes,
                    skipped_off=skips.off_surface, shell_computed=skips.shell)
        return StageResult(name=self.name, status=status_for(findings, not_checked, ()),
                           data=deps_data(read, by_vuln), findings=tuple(findings),
                           not_checked=not_checked)


@dataclass(frozen=True)
class _Lookups:
    """What to look vulnerabilities up for: the pinned packages, the deployed declarations that
    cannot be (without a lock), notes, and lock entries that cannot be (by URL, no version)."""

    pinned: list[Package]
    unpinned: list[Declaration]
    notes: tuple[str, ...]
    gaps: tuple[str, ...]


def _lookups(lock: Lock | None, deployed: Sequence[Declaration]) -> _Lookups:
    if lock is None:
        pinned, unpinned = partition_pins(deployed)
        return _Lookups(pinned, unpinned, (), ())
    pinned = sorted({Package(p.name, p.version) for p in lock.active()
                     if p.version and not p.url}, key=lambda p: (p.name, p.version))
    by_url = [p for p in lock.active() if p.url]
    notes = ((f"{len(by_url)} lock entr(ies) come from a URL, not the index: "
              + ", ".join(f"{p.name} ({p.url})" for p in by_url[:10])),) if by_url else ()
    gaps = tuple(f"vulnerabilities: {p.name} (lock line {p.line}) not checked: locked by URL "
                 "without a version" for p in by_url if not p.version)
    pinned += [Package(p.name, p.version) for p in by_url if p.version]
    return _Lookups(pinned, [], notes, gaps)


def _issues(dd: DepsDiff, report: VulnReport, deployed: Sequence[Declaration],
            lock: Lock | None, lock_label: str) -> tuple[list[Issue], list[int | None]]:
    """Every issue, and for each the position of its vulnerability in ``report`` (or None)."""
    issues = list(dd.issues)
    of_vuln: list[int | None] = [None] * len(issues)
    for n, v in enumerate(report.vulnerabilities):
        found = (lock_vulnerability_issues([v], deployed, lock, lock_label) if lock is not None
                 else vulnerability_issues([v], deployed))
        issues += found
        of_vuln += [n] * len(found)
    if lock is not None:
        drift = drift_issues(deployed, dd.added, lock, lock_label)
        issues += drift
        of_vuln += [None] * len(drift)
    return issues, of_vuln


@dataclass(frozen=True)
class _Skips:
    deployed: list[str]  # not-checked lines for deployed files
    off_surface: list[Skip]
    shell: list[Skip]  # pip install arguments computed by the shell, in deployed files


def _skips(b: Extraction, surface: Surface, notes: list[str]) -> _Skips:
    """What extraction could not read in the bundle, by whether it matters (adds to ``notes``)."""
    on: list[str] = []
    off: list[Skip] = []
    shell: dict[str, list[Skip]] = {}
    for sk in b.skipped:
        if not surface.skip_deployed(sk):
            off.append(sk)
            continue
        covered = surface.covers_computed(sk)
        if covered is not None:
            notes.append(f"{sk}: the engine profile reads it from {covered}, which is on "
                         "the deployed surface")
        elif sk.topic is Topic.SHELL_COMPUTED:
            shell.setdefault(sk.file, []).append(sk)
        else:
            on.append(str(sk))
    # one reason per deployed file for what its shell computes (the list is in the result)
    on += [f"{file}: {len(sks)} pip install argument(s) or package source(s) "
           "computed by the shell: what they install is not checked (listed in "
           "deps.shell_computed)" for file, sks in sorted(shell.items())]
    return _Skips(on, off, [sk for sks in shell.values() for sk in sks])


def _lock_label(spec: Spec, lock: Path | None) -> str:
    """The lock as findings name it: relative to the spec's folder when inside it."""
    if lock is None:
        return ""
    try:
        return lock.relative_to(spec.root).as_posix()
    except ValueError:
        return lock.name
