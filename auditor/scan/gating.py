"""The staged runner's layout of a scan plan: folders and ``paths: include`` for semgrep.

Which rule reads which target, and how, is the scan plan's (:mod:`auditor.scan.plan`; the
prefilters and taint views are its reducers). Semgrep is given copies of the targets
(:mod:`auditor.scan.staging`), laid out here so that a rule with a prefilter
(:mod:`auditor.scan.prefilter`) reads only what the plan gives it:

- ``g<mask>/``: a file as it is, in one folder per set of prefiltered rules that read it whole
  (``mask`` has bit i for the i-th such rule, in rule id order), so a gated rule names a few
  folders in its ``paths: include`` instead of hundreds of files;
- ``v<mask>/``: a taint rule's *view* of a Python file (:mod:`auditor.scan.taintviews`): the
  function bodies it cannot match left out, lines in place. The rules of ``mask`` read the view
  instead of the file (its ``g`` folder then lacks their bits); every other rule excludes the
  ``v`` folders, so nothing is read twice by one rule.

A staged copy maps back to its target, whatever folder it is in: findings and errors of a view
are the file's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from auditor.scan.files import FAMILIES, canonical_language
from auditor.scan.interface import ScanTarget
from auditor.scan.plan import How, ScanPlan, by_prefilter, by_taint_views, semgrep_plan
from auditor.scan.prefilter import include_cover
from auditor.scan.rules import RuleMeta
from auditor.scan.staging import stage

# path patterns semgrep's own front end matches against every target (in Python): beyond this
# many across all rules, the rules that admit the most files run ungated instead
_INCLUDE_BUDGET = 400
# a staged path that is safe to write as a semgrep path pattern without escaping
_PLAIN_PATH = re.compile(r"^[A-Za-z0-9._/@+=,~-]+$")


@dataclass(frozen=True)
class Staging:
    """The staged copies (relative path -> target) and, for each prefiltered rule, the copies it
    may read (a copy of a file its prefilter admits, or its view of one)."""

    files: dict[str, ScanTarget]
    readers: dict[str, frozenset[str]] = field(default_factory=dict)
    views: int = 0  # views staged

    @property
    def view_folders(self) -> list[str]:
        return sorted({rel.split("/", 1)[0] for rel in self.files if rel.startswith("v")})


def prefiltered(meta: Mapping[str, RuleMeta]) -> list[RuleMeta]:
    """The rules with a prefilter, in the order their bits are given."""
    return [m for _, m in sorted(meta.items()) if m.prefilter]


def stage_plan(files: Sequence[ScanTarget], root: Path, transform: Callable[[ScanTarget], str],
               meta: Mapping[str, RuleMeta], plan: ScanPlan) -> Staging:
    """Stage ``files`` below ``root`` as ``plan`` says (the module docstring's layout): a file in
    the ``g`` folder of the prefiltered rules that read it whole, each view in the ``v`` folder
    of the rules that read that text."""
    rules = prefiltered(meta)
    groups: dict[str, list[ScanTarget]] = {}
    view_count = 0
    for t in files:
        mask = 0
        by_text: dict[str, int] = {}
        for i, m in enumerate(rules):
            r = plan.reading(t.key, m.id)
            if r is None or r.how is How.SKIPPED:
                continue
            if r.how is How.VIEW and r.text is not None:
                by_text[r.text] = by_text.get(r.text, 0) | 1 << i
            else:
                mask |= 1 << i
        groups.setdefault(f"g{mask}", []).append(t)
        for text, bits in by_text.items():
            groups.setdefault(f"v{bits}", []).append(replace(t, text=text))
            view_count += 1
    out: dict[str, ScanTarget] = {}
    originals = {t.key: t for t in files}
    for folder, group in sorted(groups.items()):
        for rel, t in stage(group, root / folder, transform).items():
            out[f"{folder}/{rel}"] = originals[t.key]
    readers: dict[str, frozenset[str]] = {}
    for i, m in enumerate(rules):
        readers[m.id] = frozenset(rel for rel in out if int(rel[1:rel.index("/")]) >> i & 1)
    return Staging(out, readers, view_count)


def staged_plan(files: Sequence[ScanTarget], meta: Mapping[str, RuleMeta], *,
                views: bool = True) -> ScanPlan:
    """The staged runner's plan: plain semgrep's, less what the prefilters and (with ``views``)
    the taint views leave out (:mod:`auditor.scan.plan`)."""
    plan = by_prefilter(semgrep_plan(files, meta), files, meta)
    return by_taint_views(plan, files, meta) if views else plan


def stage_by_gates(files: Sequence[ScanTarget], root: Path, transform: Callable[[ScanTarget], str],
                   meta: Mapping[str, RuleMeta], *, views: bool = True) -> Staging:
    """:func:`stage_plan` of :func:`staged_plan` (no ``v`` folders when ``views`` is false)."""
    return stage_plan(files, root, transform, meta, staged_plan(files, meta, views=views))


def gated_rules(doc: Mapping[str, Any], meta: Mapping[str, RuleMeta],
                staging: Staging) -> dict[str, Any]:
    """The rules document with each prefiltered rule limited to the staged copies it may read.

    A rule whose copies are every staged file of its languages is left as it is; one with none
    is left out (it could not report anything); otherwise it gets ``paths.include`` naming
    exactly its copies, anchored at the staging root (whole folders where every file of its
    languages there is its: :func:`~auditor.scan.prefilter.include_cover`). A rule that already
    has ``paths``, or a file name that would need escaping in a path pattern, leaves the rule
    ungated: the pre-pass only ever saves time, it never decides what is checked. Semgrep's
    front end matches every include pattern against every target, so at most
    ``_INCLUDE_BUDGET`` patterns are written, for the rules that need the fewest; the others run
    ungated. Every rule that is not gated excludes the view folders (it reads the files whole).
    """
    staged = staging.files
    rules: list[Any] = []
    gated: dict[int, list[str]] = {}  # index in rules -> include patterns
    for raw in doc.get("rules") or []:
        rid = raw.get("id") if isinstance(raw, dict) else None
        m = meta.get(rid) if isinstance(rid, str) else None
        if m is None or not m.prefilter or "paths" in raw:
            rules.append(raw)
            continue
        langs = {canonical_language(lang) for lang in m.languages}
        mine = {rel: t for rel, t in staged.items()
                if t.family is not None and FAMILIES[t.family][0] & langs}
        if not all(_PLAIN_PATH.match(rel) for rel in mine):
            rules.append(raw)
            continue
        keep = sorted(staging.readers.get(m.id, frozenset()) & mine.keys())
        if not keep:
            continue  # it could not report anything
        if len(keep) < len(mine):
            gated[len(rules)] = include_cover(keep, mine)
        rules.append(raw)
    budget = _INCLUDE_BUDGET
    written: set[int] = set()
    for i, patterns in sorted(gated.items(), key=lambda kv: len(kv[1])):
        if len(patterns) <= budget:
            budget -= len(patterns)
            rules[i] = {**rules[i], "paths": {"include": patterns}}
            written.add(i)
    exclude = [f"/{folder}/" for folder in staging.view_folders]
    if exclude:
        rules = [raw if i in written else _excluding(raw, exclude) for i, raw in enumerate(rules)]
    return {**doc, "rules": rules}


def ungated(doc: Mapping[str, Any], gated: Mapping[str, Any],
            meta: Mapping[str, RuleMeta]) -> set[str]:
    """The prefiltered rules of ``doc`` that :func:`gated_rules` (which gave ``gated``) left to
    read every file of their languages whole: written without ``paths: include`` of its own."""
    before = {r.get("id"): r for r in doc.get("rules") or [] if isinstance(r, dict)}
    out: set[str] = set()
    for raw in gated.get("rules") or []:
        rid = raw.get("id") if isinstance(raw, dict) else None
        m = meta.get(rid) if isinstance(rid, str) else None
        if m is None or not m.prefilter:
            continue
        paths = raw.get("paths")
        if "paths" in before.get(rid, {}) or not (isinstance(paths, dict) and "include" in paths):
            out.add(m.id)
    return out


def _excluding(raw: Any, exclude: list[str]) -> Any:
    """``raw`` with ``exclude`` added to its ``paths: exclude``."""
    if not isinstance(raw, dict):
        return raw
    paths = raw.get("paths")
    if not isinstance(paths, dict):
        return {**raw, "paths": {"exclude": exclude}}
    old = paths.get("exclude")
    return {**raw, "paths": {**paths, "exclude": [*(old if isinstance(old, list) else []),
                                                  *exclude]}}
