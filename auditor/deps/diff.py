"""The dependency diff between upstream and the bundle, and the issues it raises.

Packages are compared by canonical name: a name only the bundle has is *added*, a name only
upstream has is *removed*. A bundle declaration of a known name that upstream does not declare
identically is *changed*, classified against upstream's declaration in the same file (re-pinned,
downgraded, pin removed, loosened, tightened, source changed). Declarations compare per declaring
file: where upstream's copy of the file declares the name, only a declaration identical to one
there is unchanged (a pin changed in one file is a change, whatever other files declare); a file
upstream does not declare the name in may repeat a declaration of upstream's other files. Every
bundle declaration that is not identical to one of upstream's is also checked on its own: direct URLs and VCS requirements,
new package indexes, CMake fetches not pinned to a full commit sha or without a URL hash, and new
names that look like a trusted one (typosquats).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from auditor.deps.declaration import Declaration, Kind
from auditor.deps.typosquat import lookalikes
from auditor.model import Severity

CMAKE = (Kind.CMAKE_GIT, Kind.CMAKE_URL)


@dataclass(frozen=True)
class Issue:
    """One thing the diff found, before it becomes a :class:`~auditor.model.Finding`."""

    rule: str
    severity: Severity
    decl: Declaration
    message: str
    upstream_side: bool = False  # the declaration is upstream's (a removal)
    in_lock: bool = False  # the "declaration" is an entry of the lock, outside the tree


@dataclass(frozen=True)
class Change:
    name: str
    change: str  # repinned, downgraded, pin-removed, pinned, loosened, tightened, ...
    before: Declaration
    after: Declaration

    def to_json(self) -> dict[str, Any]:
        def side(d: Declaration) -> dict[str, Any]:
            return {"specifier": d.specifier, "version": d.pin, "url": d.url, "ref": d.ref,
                    "hash": d.hash, "markers": d.markers, "file": d.file, "line": d.line}

        return {"name": self.name, "kind": self.after.kind.value, "change": self.change,
                "before": side(self.before), "after": side(self.after)}


@dataclass(frozen=True)
class DepsDiff:
    added: tuple[Declaration, ...]
    removed: tuple[Declaration, ...]
    changed: tuple[Change, ...]
    issues: tuple[Issue, ...]


def _version(v: str | None) -> Version | None:
    try:
        return Version(v) if v is not None else None
    except InvalidVersion:
        return None


def _samples(*specs: SpecifierSet) -> list[Version]:
    """Versions around every bound of the specifiers: enough to see which allows more."""
    out = {Version("0"), Version("0.0.1"), Version("99999")}
    for spec in specs:
        for s in spec:
            v = _version(s.version.replace(".*", ""))
            if v is None:
                continue
            rel = list(v.release)
            out.add(v)
            for i in range(len(rel)):
                up = rel[: i] + [rel[i] + 1]
                out.add(Version(".".join(map(str, up))))
                if rel[i] > 0:
                    down = rel[: i] + [rel[i] - 1] + [999]
                    out.add(Version(".".join(map(str, down))))
            out.add(Version(".".join(map(str, rel + [1]))))
    return sorted(out)


def classify(before: Declaration, after: Declaration) -> tuple[str, Severity, str] | None:
    """(change, severity, rule) for a changed package declaration; None when equivalent."""
    if before.kind is not after.kind or before.url != after.url:
        return "source-changed", Severity.MEDIUM, "dependency.changed"
    if before.hash and not after.hash:
        return "hash-removed", Severity.MEDIUM, "dependency.loosened"
    if before.pin and after.pin:
        b, a = _version(before.pin), _version(after.pin)
        if before.pin == after.pin or (a is not None and a == b):
            if before.markers != after.markers or before.extras != after.extras:
                return "markers-or-extras", Severity.LOW, "dependency.changed"
            return None
        if a is not None and b is not None and a < b:
            return "downgraded", Severity.MEDIUM, "dependency.downgraded"
        return "repinned", Severity.LOW, "dependency.repinned"
    if before.pin and not after.pin:
        return "pin-removed", Severity.MEDIUM, "dependency.loosened"
    if after.pin and not before.pin:
        return "pinned", Severity.INFO, "dependency.changed"
    try:
        sb, sa = SpecifierSet(before.specifier), SpecifierSet(after.specifier)
    except InvalidSpecifier:
        return "changed", Severity.LOW, "dependency.changed"
    samples = _samples(sb, sa)
    allowed_b = {v for v in samples if sb.contains(v, prereleases=True)}
    allowed_a = {v for v in samples if sa.contains(v, prereleases=True)}
    if allowed_a - allowed_b:
        return "loosened", Severity.MEDIUM, "dependency.loosened"
    if allowed_b - allowed_a:
        return "tightened", Severity.INFO, "dependency.changed"
    if before.markers != after.markers or before.extras != after.extras:
        return "markers-or-extras", Severity.LOW, "dependency.changed"
    return None


def _counterpart(d: Declaration, ups: Sequence[Declaration]) -> Declaration:
    for test in (lambda u: u.file == d.file and u.group == d.group,
                 lambda u: u.file == d.file, lambda u: True):
        for u in ups:
            if test(u):
                return u
    raise AssertionError("no upstream declaration")  # callers pass a non-empty list


def _describe(d: Declaration) -> str:
    if d.kind in (Kind.URL, Kind.VCS):
        return f"{d.name} @ {d.url}"
    return f"{d.name}{d.specifier}" + (f"; {d.markers}" if d.markers else "")


def diff(upstream: Iterable[Declaration], bundle: Iterable[Declaration], *,
         typosquat_distance: int, popular: frozenset[str]) -> DepsDiff:
    upstream = sorted(upstream, key=lambda d: d.sort_key)
    bundle = sorted(bundle, key=lambda d: d.sort_key)
    up_identities = {d.identity() for d in upstream}
    up_in_file = {(d.file, d.identity()) for d in upstream}
    up_names_in_file = {(d.file, d.kind.is_package, d.name) for d in upstream}
    up_pkgs = _packages(upstream)
    b_pkgs = _packages(bundle)
    up_cmake = {d.name: d for d in upstream if d.kind in CMAKE}
    b_cmake = {d.name for d in bundle if d.kind in CMAKE}

    added = [d for d in bundle if d.kind.is_package and d.name not in up_pkgs]
    removed = [d for d in upstream if d.kind.is_package and d.name not in b_pkgs]
    removed += [d for d in upstream if d.kind in CMAKE and d.name not in b_cmake]
    changed: list[Change] = []

    trusted = [(n, "upstream") for n in up_pkgs] + [(n, "popular") for n in sorted(popular)]
    issues = _added_issues(added, trusted, popular, typosquat_distance)
    issues += [Issue("dependency.removed", Severity.INFO, d,
                     f"dependency {_describe(d)} removed", upstream_side=True) for d in removed]

    for d in bundle:
        if (d.file, d.identity()) in up_in_file:
            continue  # exactly as upstream's copy of this file declares it
        if (d.file, d.kind.is_package, d.name) not in up_names_in_file \
                and d.identity() in up_identities:
            continue  # this file never declared it; upstream declares it so elsewhere
        if d.kind.is_package and d.name in up_pkgs:
            issues += _package_change(d, up_pkgs[d.name], changed)
        if d.kind in (Kind.URL, Kind.VCS):
            issues += _direct_issues(d)
        elif d.kind is Kind.INDEX:
            what = {"trusted-host": "TLS verification switched off for host"}.get(
                d.name, f"new package source ({d.name})")
            issues.append(Issue("dependency.new-index", Severity.HIGH, d, f"{what}: {d.url}"))
        elif d.kind in CMAKE:
            issues += _cmake_issues(d, up_cmake.get(d.name), added, changed)
    key = attrgetter("sort_key")
    return DepsDiff(tuple(sorted(added, key=key)), tuple(sorted(removed, key=key)),
                    tuple(changed), tuple(issues))


def _packages(decls: Iterable[Declaration]) -> dict[str, list[Declaration]]:
    """The package declarations by name."""
    out: dict[str, list[Declaration]] = defaultdict(list)
    for d in decls:
        if d.kind.is_package:
            out[d.name].append(d)
    return out


def _added_issues(added: Sequence[Declaration], trusted: list[tuple[str, str]],
                  popular: frozenset[str], typosquat_distance: int) -> list[Issue]:
    """An issue per new package, and one per new name that looks like a trusted one."""
    issues: list[Issue] = []
    squat_seen: set[str] = set()
    for d in added:
        issues.append(Issue("dependency.added", Severity.LOW, d,
                            f"new dependency {_describe(d)}"
                            + (f" ({d.group})" if d.group else "")))
        if d.name in popular or d.name in squat_seen or typosquat_distance <= 0:
            continue
        squat_seen.add(d.name)
        near = lookalikes(d.name, trusted, typosquat_distance)
        if near:
            best = near[0]
            issues.append(Issue(
                "dependency.typosquat", Severity.HIGH, d,
                f"new dependency {d.name!r} is {best.distance} edit(s) from "
                f"{'a dependency upstream already has' if best.source == 'upstream' else 'the popular package'}"
                f" {best.resembles!r}: possible typosquat"))
    return issues


def _package_change(d: Declaration, ups: Sequence[Declaration],
                    changed: list[Change]) -> list[Issue]:
    """How bundle declaration ``d`` of a package upstream declares differs from upstream's."""
    before = _counterpart(d, ups)
    if before.identity() == d.identity():
        return []  # as upstream declares it in another file the declaring file never named
    verdict = classify(before, d)
    if verdict is None:
        return []
    change, severity, rule = verdict
    changed.append(Change(d.name, change, before, d))
    return [Issue(rule, severity, d, f"{d.name}: {change.replace('-', ' ')} "
                                     f"({_describe(before)} -> {_describe(d)})")]


def _direct_issues(d: Declaration) -> list[Issue]:
    """A direct URL or VCS requirement bypasses the index; a VCS one may also move."""
    what = "VCS" if d.kind is Kind.VCS else "direct URL"
    issues = [Issue("dependency.direct-url", Severity.HIGH, d,
                    f"{what} requirement {d.name} from {d.url}: bypasses the index"
                    + ("" if d.hash else " and has no --hash"))]
    if d.kind is Kind.VCS and not d.pinned_ref:
        issues.append(Issue("dependency.unpinned-fetch", Severity.HIGH, d,
                            f"{d.name} is fetched from {d.url} at "
                            f"{'ref ' + repr(d.ref) if d.ref else 'the default branch'}, "
                            "not a full commit sha"))
    return issues


def _cmake_issues(d: Declaration, old: Declaration | None, added: list[Declaration],
                  changed: list[Change]) -> list[Issue]:
    """A CMake fetch against upstream's of the same name (``old``), and its pinning."""
    issues: list[Issue] = []
    if old is None:
        added.append(d)
        issues.append(Issue("dependency.added", Severity.LOW, d,
                            f"new CMake fetch {d.name} from {d.url}"))
    elif old.url != d.url or old.kind is not d.kind:
        changed.append(Change(d.name, "source-changed", old, d))
        issues.append(Issue("dependency.changed", Severity.MEDIUM, d,
                            f"CMake fetch {d.name} now comes from {d.url} "
                            f"(upstream: {old.url})"))
    elif old.ref != d.ref or old.hash != d.hash:
        changed.append(Change(d.name, "repinned", old, d))
        issues.append(Issue("dependency.repinned", Severity.LOW, d,
                            f"CMake fetch {d.name} moved from "
                            f"{old.ref or old.hash} to {d.ref or d.hash}"))
    if d.kind is Kind.CMAKE_GIT and not d.pinned_ref:
        issues.append(Issue("dependency.unpinned-fetch", Severity.HIGH, d,
                            f"CMake fetch {d.name} from {d.url} uses "
                            f"{'GIT_TAG ' + repr(d.ref) if d.ref else 'no GIT_TAG'}: "
                            "a branch or tag name can move; pin a full commit sha"))
    elif d.kind is Kind.CMAKE_URL and not d.hash:
        issues.append(Issue("dependency.unpinned-fetch", Severity.HIGH, d,
                            f"CMake fetch {d.name} downloads {d.url} without URL_HASH"))
    return issues
