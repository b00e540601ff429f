"""The scan plan: for every target and every rule (or scanner), how the target is read.

This module answers the newcomer's question "which rules ran on this file, and if not, why".
A :class:`ScanPlan` is a frozen value built before anything runs: for each target (by key) a
:class:`Reading` per semgrep rule, or per scanner for scanners that run all their checks at once
(bandit, builtin ...). A reading is one of

- ``whole``: the rule reads the file as it is;
- ``slice``: a diff-scope slice of it (:mod:`auditor.scan.diffslice`: untouched function bodies
  left out, lines in place);
- ``view``: a view of it for this rule (:mod:`auditor.scan.taintviews`, bandit's
  :mod:`auditor.scan.banditviews`: function bodies the rule cannot match left out);
- ``skipped`` with a :class:`Why`: not a language the rule reads, not in the rule's paths, the
  rule's prefilter words are absent, no function can hold a match, no bandit test can match.

The plan starts from what semgrep itself decides (:func:`semgrep_plan`: languages, paths) and is
refined by *reducers*, pure functions from plan to plan (:func:`by_prefilter`,
:func:`by_taint_views`, :func:`by_slices`, :func:`widened`). The executors only run a plan: the
staged runner (:mod:`auditor.scan.gating` lays the plan out as folders and ``paths.include``,
:mod:`auditor.scan.semgrep` and :mod:`auditor.scan.bandit` run it, shared among processes) and the
reference runner (:mod:`auditor.scan.reference`: plain semgrep with the shipped rules and plain
bandit over whole files, the plan of :func:`semgrep_plan` alone). Every reducer only ever leaves
out what cannot be reported; ``tests/scan/test_scan_reference_equivalence.py`` runs both runners
and requires the same findings and the same not-checked reasons.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from auditor.scan.interface import Scanner, ScannerRun, ScanTarget
    from auditor.scan.rules import RuleMeta

#: the rule name of a reading that stands for all of a scanner's checks
ALL = "*"


class How(StrEnum):
    WHOLE = "whole"
    SLICE = "slice"
    VIEW = "view"
    SKIPPED = "skipped"


class Why(StrEnum):
    """Why a rule (or a scanner) does not read a target."""

    LANGUAGE = "not a language it reads"
    PATHS = "not in the rule's paths"
    PREFILTER = "prefilter words absent"
    NO_FUNCTION = "no function can hold a match (taint view)"
    NOTHING_TO_MATCH = "no test can match (bandit view)"
    SUPERSEDED = "read through its derived reading instead"


@dataclass(frozen=True)
class Reading:
    """How one rule (``rule``; :data:`ALL` for all of ``scanner``'s checks) reads one target."""

    scanner: str
    rule: str
    how: How
    why: Why | None = None
    note: str = ""  # e.g. "ungated: include budget", "of the slice"
    # a view's text (how == VIEW); not part of the value's identity
    text: str | None = field(default=None, compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"scanner": self.scanner, "rule": self.rule,
                               "reading": self.how.value}
        if self.why is not None:
            out["reason"] = self.why.value
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class ScanPlan:
    """Target key -> its readings (one per rule, or one per scanner), in rule id order."""

    readings: Mapping[str, tuple[Reading, ...]] = field(
        default_factory=lambda: MappingProxyType({}))

    @staticmethod
    def of(readings: Mapping[str, Iterable[Reading]]) -> ScanPlan:
        return ScanPlan(MappingProxyType({k: tuple(v) for k, v in readings.items()}))

    def reading(self, key: str, rule: str) -> Reading | None:
        return self._index.get((key, rule))

    @cached_property
    def _index(self) -> dict[tuple[str, str], Reading]:
        return {(k, r.rule): r for k, rows in self.readings.items() for r in rows}

    def reads(self, key: str, rule: str) -> bool:
        r = self.reading(key, rule)
        return r is not None and r.how is not How.SKIPPED

    def merged(self, other: ScanPlan) -> ScanPlan:
        """This plan with ``other``'s readings added (``other`` wins for a target both hold)."""
        return ScanPlan.of({**self.readings, **other.readings})

    def _map(self, keys: Iterable[str] | None, fn: Any) -> ScanPlan:
        wanted = None if keys is None else set(keys)
        return ScanPlan.of({k: tuple(fn(k, r) for r in rs) if wanted is None or k in wanted
                            else rs for k, rs in self.readings.items()})


def whole_plan(scanner: str, targets: Sequence[ScanTarget]) -> ScanPlan:
    """Every target read whole by all of ``scanner``'s checks (a scanner with no shortcut)."""
    return ScanPlan.of({t.key: (Reading(scanner, ALL, How.WHOLE),) for t in targets})


def rule_languages(m: RuleMeta) -> frozenset[str]:
    from auditor.scan.files import canonical_language

    return frozenset(canonical_language(lang) for lang in m.languages)


def semgrep_plan(targets: Sequence[ScanTarget], meta: Mapping[str, RuleMeta],
                 scanner: str = "semgrep") -> ScanPlan:
    """What plain semgrep does with every rule and target: a rule reads the targets of its
    languages (a ``generic``/``regex`` rule any text) that its ``paths: include`` names."""
    from auditor.scan.coverage import aimed_at
    from auditor.scan.files import FAMILIES

    out: dict[str, list[Reading]] = {}
    for t in targets:
        langs = FAMILIES[t.family][0] if t.family is not None else frozenset()
        rows = out.setdefault(t.key, [])
        for rid, m in sorted(meta.items()):
            mine = rule_languages(m)
            if not (mine & {"generic", "regex"} or mine & langs):
                rows.append(Reading(scanner, rid, How.SKIPPED, Why.LANGUAGE))
            elif m.paths_include and not aimed_at(t.path, m.paths_include):
                rows.append(Reading(scanner, rid, How.SKIPPED, Why.PATHS))
            else:
                rows.append(Reading(scanner, rid, How.WHOLE))
    return ScanPlan.of(out)


def by_prefilter(plan: ScanPlan, targets: Sequence[ScanTarget],
                 meta: Mapping[str, RuleMeta]) -> ScanPlan:
    """A rule with ``metadata.prefilter`` (:mod:`auditor.scan.prefilter`) skips the targets
    whose text lacks its words: it could not match there."""
    from auditor.scan.prefilter import Prefilter, signature

    rules = [m for _, m in sorted(meta.items()) if m.prefilter]
    if not rules:
        return plan
    pfs = [Prefilter(m.prefilter, m.sink_group) for m in rules]
    out: dict[str, tuple[Reading, ...]] = dict(plan.readings)
    for t in targets:
        mask = signature(t.text, pfs)
        absent = {m.id for i, m in enumerate(rules) if not mask >> i & 1}
        if absent and t.key in out:
            out[t.key] = tuple(replace(r, how=How.SKIPPED, why=Why.PREFILTER, text=None)
                               if r.rule in absent and r.how is not How.SKIPPED else r
                               for r in out[t.key])
    return ScanPlan.of(out)


def by_taint_views(plan: ScanPlan, targets: Sequence[ScanTarget],
                   meta: Mapping[str, RuleMeta]) -> ScanPlan:
    """A taint rule with a prefilter reads its view of a Python target
    (:func:`~auditor.scan.taintviews.taint_views`), or skips it when no function nor the module
    code can hold a match. Computed on every core when there is much (the answers are the same
    wherever they run: :mod:`auditor.scan.pool`)."""
    from auditor.scan.pool import map_in_processes
    from auditor.scan.prefilter import Prefilter

    taint = [m for _, m in sorted(meta.items()) if m.prefilter and m.taint]
    pfs = {m.id: Prefilter(m.prefilter, m.sink_group) for m in taint}
    asked: list[tuple[ScanTarget, tuple[str, ...]]] = []
    for t in targets:
        if t.family != "python":
            continue
        mine = tuple(m.id for m in taint if plan.reads(t.key, m.id))
        if mine:
            asked.append((t, mine))
    answers = map_in_processes(_views, asked, workers=os.cpu_count() or 1,
                               given=lambda job: (job[0].text, tuple(pfs[r] for r in job[1])),
                               work=lambda job: len(job[0].text))
    out: dict[str, tuple[Reading, ...]] = dict(plan.readings)
    for (t, mine), views in zip(asked, answers, strict=True):
        got = {rid: v for rid, v in zip(mine, views, strict=True) if v is not None}
        rows: list[Reading] = []
        for r in out[t.key]:
            v = got.get(r.rule)
            if v is None:
                rows.append(r)
            elif v.text is None:
                rows.append(replace(r, how=How.SKIPPED, why=Why.NO_FUNCTION))
            else:
                rows.append(replace(r, how=How.VIEW, text=v.text,
                                    note=f"{v.functions} function bod(ies) left out"))
        out[t.key] = tuple(rows)
    return ScanPlan.of(out)


def _views(job: tuple[str, tuple[Any, ...]]) -> list[Any]:
    """:func:`~auditor.scan.taintviews.taint_views` of one file (a process pool's work)."""
    from auditor.scan.taintviews import taint_views

    return taint_views(*job)


def by_slices(plan: ScanPlan, sliced: Iterable[str]) -> ScanPlan:
    """The targets ``sliced`` (keys) were scanned as diff-scope slices: what read them whole
    read the slice, and a view is a view of the slice."""

    def one(_k: str, r: Reading) -> Reading:
        if r.how is How.WHOLE:
            return replace(r, how=How.SLICE)
        if r.how is How.VIEW:
            return replace(r, note="of the slice" + (f"; {r.note}" if r.note else ""))
        return r

    return plan._map(sliced, one)


def widened(plan: ScanPlan, rules: Iterable[str], note: str) -> ScanPlan:
    """The ``rules`` ran ungated (``note`` says why): they read every target of their languages
    and paths whole, whatever a reducer said."""
    wide = set(rules)
    if not wide:
        return plan

    def one(_k: str, r: Reading) -> Reading:
        if r.rule in wide and (r.how is How.VIEW or r.why in (Why.PREFILTER, Why.NO_FUNCTION)):
            return Reading(r.scanner, r.rule, How.WHOLE, note=note)
        return r

    return plan._map(None, one)


def of_run(scanners: Sequence[Scanner], runs: Mapping[str, ScannerRun],
           targets: Sequence[ScanTarget], sliced: Iterable[str]) -> ScanPlan:
    """The plan a scan ran, for every target: each scanner's own for the targets it scanned
    now (:attr:`ScannerRun.plan`), its :meth:`Scanner.plan` for those whose results came from
    the cache (the same pure reducers), a skipped reading for the targets it was not given;
    the diff-scope slices (``sliced``: target keys) marked."""
    out: dict[str, list[Reading]] = {t.key: [] for t in targets}
    for s in scanners:
        given = [t for t in targets if (s.reads_raw or not t.superseded) and s.accepts(t)]
        ran = runs.get(s.name)
        own = ran.plan if ran is not None and ran.plan is not None else ScanPlan()
        rest = [t for t in given if t.key not in own.readings]
        plan = own.merged(s.plan(rest)) if rest else own
        given_keys = {t.key for t in given}
        for t in targets:
            if t.key in given_keys:
                out[t.key].extend(plan.readings.get(t.key, ()))
            else:
                why = Why.SUPERSEDED if t.superseded and s.accepts(t) else Why.LANGUAGE
                out[t.key].append(Reading(s.name, ALL, How.SKIPPED, why))
    return by_slices(ScanPlan.of(out), sliced)


def explained(plan: ScanPlan, owners: Mapping[str, tuple[str, str]],
              ) -> dict[str, list[dict[str, Any]]]:
    """The plan by bundle path, for ``--explain``: per path, its readings grouped by target
    (``owners``: target key -> (path, the target's name: ``file`` or a derived reading)),
    scanner, reading and reason, each with its rules (sorted, deterministic)."""
    groups: dict[str, dict[tuple[str, str, str, str, str], list[str]]] = {}
    for key, rows in plan.readings.items():
        if key not in owners:
            continue
        path, target = owners[key]
        mine = groups.setdefault(path, {})
        for r in rows:
            g = (target, r.scanner, r.how.value, r.why.value if r.why else "", r.note)
            mine.setdefault(g, []).append(r.rule)
    out: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(groups):
        rows_out: list[dict[str, Any]] = []
        for (target, scanner, how, why, note), rules in sorted(groups[path].items()):
            row: dict[str, Any] = {"target": target, "scanner": scanner, "reading": how,
                                   "rules": sorted(rules)}
            if why:
                row["reason"] = why
            if note:
                row["note"] = note
            rows_out.append(row)
        out[path] = rows_out
    return out
