"""The deps stage: what comes in with the patches (dependency diff) and known vulnerabilities.

Both trees are read statically (upstream through git, the bundle from its verified copy); nothing
is built, installed or run. Findings are attributed to the series commit that introduced the
declaring line, and get their action from the policy.

Fail-closed choices:

* ``deps.vulns = "none"`` is recorded as not checked and so makes the stage INCOMPLETE: an audit
  that looked up no advisory data must not exit 0.
* Every bundle dependency that cannot be looked up (not pinned to one version, a direct URL, a
  CMake fetch) is listed as not checked, one line per package.
* What the extractors could not read in the *bundle* (a computed ``install_requires``, a malformed
  file) is not checked. The same for *upstream* is only listed (``upstream_not_checked``): a blind
  spot in the baseline can only make the bundle's dependencies look more new, never less.
* A vulnerability whose record gives no usable severity is reported as ``high``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, assert_never

from auditor.deps.declaration import Declaration, Extraction, Kind
from auditor.deps.diff import DepsDiff, Issue, diff
from auditor.deps.extract import extract_tree
from auditor.deps.tree import DirTree, GitTree, Tree
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
from auditor.policy import Policy, apply_waivers, load_policy, load_waivers
from auditor.provenance.blame import UNEXPLAINED, line_origins
from auditor.spec import POLICIES_DIR, DepsSpec, Spec
from auditor.stage import Context, Stage

SCANNER = "deps"


def source_kind(vulns: str) -> SourceKind:
    if vulns.startswith("osv:"):
        return SourceKind.OSV
    return SourceKind(vulns)


def make_source(deps: DepsSpec, workdir: Path, *, online: bool) -> VulnerabilitySource:
    kind = source_kind(deps.vulns)
    if kind is SourceKind.OSV:
        assert deps.osv_path is not None
        return OsvSnapshotSource(deps.osv_path)
    if kind is SourceKind.PIP_AUDIT:
        return PipAuditSource(workdir / "deps", online=online, osv_url=deps.osv_url)
    if kind is SourceKind.NONE:
        return NoSource()
    assert_never(kind)


def policy_for(spec: Spec) -> Policy:
    return load_policy(spec.scan.policy if spec.scan else POLICIES_DIR / "default.toml")


def split_pins(bundle: Sequence[Declaration]) -> tuple[list[Package], list[str]]:
    """Exactly pinned PyPI packages to look up, and one not-checked line per other package."""
    pinned: dict[tuple[str, str], Package] = {}
    others: dict[str, list[Declaration]] = defaultdict(list)
    for d in bundle:
        if d.kind is Kind.PYPI and d.pin:
            pinned[(d.name, d.pin)] = Package(d.name, d.pin)
        elif d.kind is not Kind.INDEX:
            others[d.name].append(d)
    lines = []
    for name in sorted(others):
        decls = others[name]
        first = decls[0]
        where = f"{first.file}:{first.line}" + (f" and {len(decls) - 1} more" if len(decls) > 1
                                                 else "")
        if first.kind is Kind.PYPI:
            why = f"not pinned to one version ({first.specifier or 'any version'})"
        elif first.kind in (Kind.URL, Kind.VCS):
            why = "a direct URL/VCS requirement has no version to look up"
        else:
            why = "a CMake fetch has no PyPI version to look up"
        lines.append(f"vulnerabilities: {name} not checked: {why} at {where}")
    return sorted(pinned.values(), key=lambda p: (p.name, p.version)), lines


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
                    f"{self.ws.upstream_commit}..{self.ws.head_commit}", "--", path, check=False)
                shas = res.stdout.split() if res.returncode == 0 else []
                sha = shas[0] if shas else None
            self._removals[key] = sha
        return self._removals[key]


_SEVERITY = {"critical": Severity.CRITICAL, "high": Severity.HIGH, "medium": Severity.MEDIUM,
             "low": Severity.LOW}


def _finding(issue: Issue, att: Attributor, policy: Policy) -> Finding:
    d = issue.decl
    message = issue.message
    if issue.upstream_side:
        commit, inherited = att.removal(d.file, d.line), False
        message += f" (was line {d.line} upstream)"
    else:
        commit, inherited, unexplained = att.bundle_lines(d.file, d.line, d.end_line)
        if unexplained:
            message += " (this line comes from no listed commit)"
    code = d.text or f"{d.kind.value} {d.name} {d.specifier} {d.url or ''}"
    return Finding(
        rule=issue.rule, category=Category.DEPENDENCY, severity=issue.severity,
        action=policy.action_for(Category.DEPENDENCY, d.file, issue.rule), path=d.file,
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


def _fetch_json(d: Declaration) -> dict[str, Any]:
    return {"name": d.name, "kind": d.kind.value, "repository": d.url if d.kind is Kind.CMAKE_GIT
            else None, "tag": d.ref, "url": d.url if d.kind is Kind.CMAKE_URL else None,
            "hash": d.hash, "pinned": d.pinned_ref if d.kind is Kind.CMAKE_GIT else bool(d.hash),
            "file": d.file, "line": d.line}


def build_details(up: Extraction, b: Extraction, dd: DepsDiff, report: VulnReport
                  ) -> dict[str, Any]:
    return {
        "upstream": [d.to_json() for d in up.declarations],
        "bundle": [d.to_json() for d in b.declarations],
        "added": [d.to_json() for d in dd.added],
        "removed": [d.to_json() for d in dd.removed],
        "changed": [c.to_json() for c in dd.changed],
        "vulnerabilities": [v.to_json() for v in report.vulnerabilities],
        "source": report.source.to_json(),
        "cmake_fetches": [_fetch_json(d) for d in b.declarations
                          if d.kind in (Kind.CMAKE_GIT, Kind.CMAKE_URL)],
        "indexes": [{"option": d.name, "url": d.url, "file": d.file, "line": d.line}
                    for d in b.declarations if d.kind is Kind.INDEX],
        "checked": [{"name": p.name, "version": p.version} for p in report.checked],
        "files": {"upstream": list(up.files), "bundle": list(b.files)},
        "upstream_not_checked": list(up.not_checked),
    }


class DepsStage(Stage):
    name = "deps"
    needs = ("verify",)

    def requested(self, spec: Spec) -> bool:
        return spec.deps is not None

    def run(self, ctx: Context) -> StageResult:
        ws = ctx.workspace
        deps = ctx.spec.deps
        assert ws is not None and deps is not None  # the pipeline checks both
        policy = policy_for(ctx.spec)
        with ctx.status("reading dependency declarations"):
            upstream_tree = GitTree(Git(ws.upstream_repo), ws.upstream_commit)
            up = extract_tree(upstream_tree)
            b = extract_tree(DirTree(ws.bundle_root, ws.manifest))
        dd = diff(up.declarations, b.declarations, typosquat_distance=deps.typosquat_distance,
                  popular=popular_packages())
        pinned, unpinned = split_pins(b.declarations)
        source = make_source(deps, ctx.workdir, online=ctx.options.online)
        with ctx.status(f"vulnerabilities of {len(pinned)} pinned packages: {deps.vulns}"):
            report = source.check(pinned)
        att = Attributor(ws, upstream_tree)
        issues = list(dd.issues) + vulnerability_issues(report.vulnerabilities, b.declarations)
        findings = [_finding(i, att, policy) for i in issues]
        if ctx.spec.scan is not None and ctx.spec.scan.waivers is not None:
            findings = apply_waivers(findings, load_waivers(ctx.spec.scan.waivers))
        findings.sort(key=lambda f: (f.path, f.line, f.rule, f.message))
        not_checked = tuple(dict.fromkeys([*b.not_checked, *report.not_checked, *unpinned]))
        return StageResult(
            name=self.name,
            status=status_for(findings, not_checked, ()),
            details=build_details(up, b, dd, report),
            findings=tuple(findings),
            not_checked=not_checked,
        )
