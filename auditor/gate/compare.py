"""Findings and dependencies of the new audit compared with the baseline's.

Findings are compared by fingerprint (rule + path + normalised code: stable across a rebase). A new
finding whose fingerprint the baseline had is *carried* as already reviewed when the baseline
accepted it — a ``review``/``info`` finding, or a waived one — and its action is not stricter now.
A blocking finding is never carried: accepting a block takes a waiver, which the new audit applies
itself. Everything else counts as new.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from auditor.model import Action, Finding
from auditor.results.base import JsonObject
from auditor.results.deps import DeclarationRecord, DepsData, VulnRecord

_RANK = {Action.INFO: 0, Action.REVIEW: 1, Action.BLOCK: 2}


@dataclass(frozen=True)
class FindingDiff:
    new: tuple[Finding, ...]  # not in the baseline, or no longer acceptable: these count
    carried: tuple[Finding, ...]  # in the baseline and accepted there: already reviewed
    resolved: tuple[Finding, ...]  # baseline findings the new audit no longer has

    @property
    def carried_fingerprints(self) -> frozenset[str]:
        return frozenset(f.fingerprint for f in self.carried)


def accepted_in(baseline: Iterable[Finding]) -> dict[str, Finding]:
    """fingerprint -> the baseline finding, for the findings the baseline accepted."""
    out: dict[str, Finding] = {}
    for b in baseline:
        if b.waived or b.action is not Action.BLOCK:
            prev = out.get(b.fingerprint)
            if prev is None or _RANK[b.action] > _RANK[prev.action]:
                out[b.fingerprint] = b
    return out


def is_carried(f: Finding, accepted: Mapping[str, Finding]) -> bool:
    b = accepted.get(f.fingerprint)
    if b is None or (f.action is Action.BLOCK and not f.waived):
        return False
    return f.waived or b.waived or _RANK[f.action] <= _RANK[b.action]


def compare_findings(baseline: Sequence[Finding], current: Sequence[Finding]) -> FindingDiff:
    accepted = accepted_in(baseline)
    new = tuple(f for f in current if not is_carried(f, accepted))
    carried = tuple(f for f in current if is_carried(f, accepted))
    now = {f.fingerprint for f in current}
    resolved = tuple(b for b in baseline if b.fingerprint not in now)
    return FindingDiff(new, carried, resolved)


@dataclass(frozen=True)
class DepsDiff:
    """What the dependency picture gained since the baseline (entries as the deps stage gave them)."""

    added: tuple[DeclarationRecord, ...]
    removed: tuple[DeclarationRecord, ...]
    changed: tuple[JsonObject, ...]
    vulnerabilities: tuple[VulnRecord, ...]
    compared: bool  # False when either audit has no dependency data

    def to_json(self) -> dict[str, Any]:
        return {"compared": self.compared, "added": [d.to_json() for d in self.added],
                "removed": [d.to_json() for d in self.removed],
                "changed": [dict(c) for c in self.changed],
                "vulnerabilities": [v.to_json() for v in self.vulnerabilities]}

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed or self.vulnerabilities)


def decl_text(d: DeclarationRecord) -> str:
    """``name version (file)``: how a declaration is shown, and what identifies it here."""
    text = f"{d.name} {d.pin or d.specifier}".strip()
    return f"{text} ({d.file})" if d.file else text


def _change_key(c: JsonObject) -> str:
    return str(c.get("name", ""))


def _vuln_key(v: VulnRecord) -> str:
    return f"{v.id}\0{v.package}\0{v.version}"


_T = TypeVar("_T")


def _since(old: Sequence[_T], new: Sequence[_T], key: Callable[[_T], str]) -> tuple[_T, ...]:
    seen = {key(x) for x in old}
    return tuple(x for x in new if key(x) not in seen)


def compare_deps(old: DepsData | None, new: DepsData | None) -> DepsDiff:
    """What ``new`` has that ``old`` has not (everything of ``new`` when ``old`` has no data)."""
    if new is None:
        return DepsDiff((), (), (), (), compared=False)
    return DepsDiff(
        added=_since(old.added if old else (), new.added, decl_text),
        removed=_since(old.removed if old else (), new.removed, decl_text),
        changed=_since(old.changed if old else (), new.changed, _change_key),
        vulnerabilities=_since(old.vulnerabilities if old else (), new.vulnerabilities,
                               _vuln_key),
        compared=old is not None,
    )
