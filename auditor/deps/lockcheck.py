"""Deployed declarations checked against the lock (lock drift), and what the lock lacks.

A deployed PyPI declaration whose markers hold in the lock's environment must be satisfied by the
lock: its name present, the locked version inside its range. A direct URL or VCS declaration must
at least have its name in the lock. What the series adds and the lock lacks is reported too, on
or off the surface (off it, as low severity: the lock need not cover it, but the reviewer should
know the lock does not describe it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from auditor.deps.declaration import Declaration, Kind
from auditor.deps.diff import Issue
from auditor.deps.lock import Lock, marker_holds
from auditor.model import Severity


def _satisfies(spec: str, versions: Iterable[str | None]) -> bool:
    try:
        s = SpecifierSet(spec)
    except InvalidSpecifier:
        return True  # not comparable: the extractor already kept it as written
    for v in versions:
        if v is None:
            continue
        try:
            if s.contains(Version(v), prereleases=True):
                return True
        except InvalidVersion:
            if f"=={v}" == spec.replace(" ", ""):
                return True
    return False


def _shown(d: Declaration) -> str:
    text = f"{d.name} @ {d.url}" if d.url else f"{d.name}{d.specifier}"
    return text + (f"; {d.markers}" if d.markers else "")


def drift_issues(deployed: Sequence[Declaration], added: Sequence[Declaration], lock: Lock,
                 lock_label: str) -> list[Issue]:
    """Issues for deployed declarations the lock does not satisfy and added ones it lacks."""
    by_name = lock.by_name()
    issues: list[Issue] = []
    added_ids = {id(d) for d in added}
    for d in deployed:
        if not d.kind.is_package or d.group == "constraint":
            continue
        if not marker_holds(d.markers, lock.env):
            continue
        locked = by_name.get(d.name)
        where = "build requirement" if d.group in ("build-system", "setup_requires") else \
            "deployed requirement"
        shown = _shown(d)
        if not locked:
            rule = "dependency.not-in-lock" if id(d) in added_ids else "dependency.lock-drift"
            issues.append(Issue(rule, Severity.MEDIUM, d,
                                f"{where} {shown} is not in the lock {lock_label} "
                                f"(markers for CPython {lock.python}): the lock does not "
                                "describe what is deployed"))
            continue
        if d.kind is Kind.PYPI and d.specifier and not _satisfies(
                d.specifier, (p.version for p in locked)):
            have = ", ".join(sorted({str(p.version) for p in locked}))
            issues.append(Issue("dependency.lock-drift", Severity.MEDIUM, d,
                                f"{where} {shown} is not satisfied by the lock "
                                f"{lock_label}, which pins {d.name}=={have}"))
    deployed_ids = {id(d) for d in deployed}
    for d in added:
        if id(d) in deployed_ids or not d.kind.is_package:
            continue
        if marker_holds(d.markers, lock.env) and d.name not in by_name:
            issues.append(Issue("dependency.not-in-lock", Severity.LOW, d,
                                f"new dependency {d.name} ({d.file}, not on the deployed "
                                f"surface) is not in the lock {lock_label}"))
    return issues
