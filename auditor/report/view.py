"""What every report shows, read from an :class:`~auditor.model.AuditResult`'s typed stage results.

The formatters (Markdown, HTML, console, GitHub) render the same :class:`ReportView`; only the
escaping differs. The summaries, the proof and the series come from the typed results
(:mod:`auditor.results`), and so do the deps, build, sbom and unit tables (:class:`Shown`): a live
audit and ``auditor report AUDIT_JSON`` (audit.json read back into the same types) render alike.
The view is made of the *redacted* audit (:func:`~auditor.report.interface.redacted`, one pass
over every string, at the top of :func:`build_view`): nothing here redacts again, and nothing is
escaped: each formatter escapes for its own syntax.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

from auditor.model import (
    STAGES,
    Action,
    AuditResult,
    Category,
    Finding,
    StageResult,
    StageStatus,
    Verdict,
)
from auditor.redaction import cut
from auditor.report.interface import redacted
from auditor.results.base import StageData
from auditor.results.build import BuildData, ModuleRecord
from auditor.results.deps import DeclarationRecord, DepsData, VulnRecord
from auditor.results.review import ReviewData
from auditor.results.sbom import SbomData
from auditor.results.scan import ScanData
from auditor.results.unit import UnitData
from auditor.results.verify import VerifyData

ACTIONS: tuple[Action, ...] = (Action.BLOCK, Action.REVIEW, Action.INFO)


# ---------------------------------------------------------------- defensive readers


def as_map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def as_text(value: Any) -> str:
    return "" if value is None else str(value)



def short(sha: Any, n: int = 10) -> str:
    text = as_text(sha)
    return text[:n] if text else "—"


#: the most characters of one untrusted text a report shows (the full text stays in audit.json)
SUBJECT_MAX = 200
MESSAGE_MAX = 1000
PATH_MAX = 400
BODY_MAX = 4000
SNIPPET_MAX = 4000
CONTEXT_MAX = 20  # lines of a finding's context (the scan records at most 5 + 2 * 3)


def capped(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out; redacted before it
    is cut (:func:`~auditor.redaction.cut`: a secret cut in half is no longer recognised)."""
    return cut(text, limit, lambda n: f"… [{n} more characters in audit.json]")


def shown_finding(f: Finding) -> Finding:
    """The finding (of a redacted audit) cut to what a report shows (:func:`capped`)."""
    return replace(f, message=capped(f.message, MESSAGE_MAX), snippet=capped(f.snippet, SNIPPET_MAX),
                   path=capped(f.path, PATH_MAX), rule=capped(f.rule, SUBJECT_MAX),
                   waiver=capped(f.waiver, MESSAGE_MAX) if f.waiver else f.waiver,
                   help=capped(f.help, MESSAGE_MAX),
                   context=tuple(replace(c, text=capped(c.text, SUBJECT_MAX))
                                 for c in f.context[:CONTEXT_MAX]))


def clean_finding(f: Finding) -> Finding:
    """:func:`shown_finding` of a finding not yet redacted (the pipeline's, as a stage gives
    it): the same, since :func:`capped` redacts each field before it cuts it."""
    return shown_finding(f)


def finding_state(f: Finding) -> str:
    """``block``/``review``/``info``, or ``waived`` when a waiver applies."""
    return "waived" if f.waived else f.action.value


UNSIGNED_PREFIX = "review.unsigned."


def is_unsigned(f: Finding) -> bool:
    """A ``review.unsigned.<area>`` finding: the series' hunks of one area nobody signed off."""
    return f.rule.startswith(UNSIGNED_PREFIX)


def origin_words(f: Finding) -> str:
    """Which code a finding is about, in words: its series commit, upstream's code (only when the
    finding is inherited), the series' unreviewed hunks, or nothing tied to one commit."""
    if f.commit:
        return f"commit {short(f.commit)}"
    if is_unsigned(f):
        return "unreviewed hunks of the series"
    if f.inherited:
        return "upstream code (inherited)"
    return "not tied to one commit"


def origin_cell(f: Finding) -> str:
    """:func:`origin_words` for a table's commit column (the bare short sha for a commit)."""
    return short(f.commit) if f.commit else origin_words(f)


@dataclass(frozen=True)
class UnreviewedHunk:
    id: str
    path: str
    commit: str
    start: int
    end: int
    lines: int

    @property
    def where(self) -> str:
        """``path:start-end`` (``path`` alone for a hunk without new lines)."""
        if self.start < 1:
            return self.path
        return f"{self.path}:{self.start}" + (f"-{self.end}" if self.end > self.start else "")


@dataclass(frozen=True)
class UnsignedArea:
    """One ``review.unsigned.<area>`` finding as what it is: the area's hunks nobody signed off."""

    area: str
    title: str
    rule: str
    fingerprint: str
    action: Action
    waived: bool
    hunks: tuple[UnreviewedHunk, ...]

    @property
    def lines(self) -> int:
        return sum(h.lines for h in self.hunks)

    @property
    def files(self) -> int:
        return len({h.path for h in self.hunks})

    @property
    def commits(self) -> int:
        return len({h.commit for h in self.hunks})

    def words(self) -> str:
        """"3 hunk(s), 12 line(s) in 2 file(s) from 2 commit(s)"."""
        return (f"{len(self.hunks)} hunk(s), {self.lines} line(s) in {self.files} file(s) from "
                f"{self.commits} commit(s)")


def unsigned_areas(audit: AuditResult) -> tuple[UnsignedArea, ...]:
    """Each ``review.unsigned.<area>`` finding of the review stage with its unreviewed hunks,
    read from the stage's own data (its hunks and counted sign-offs), in the stage's order."""
    st = audit.stages.get("review")
    data = st.data_as(ReviewData) if st is not None else None
    if st is None or data is None:
        return ()
    signed = {s.digest for s in data.signoffs}
    titles = {a.name: a.title for a in data.areas}
    out = []
    for f in st.findings:
        if not is_unsigned(f):
            continue
        area = f.rule[len(UNSIGNED_PREFIX):]
        hunks = tuple(UnreviewedHunk(id=h.id, path=capped(h.path, PATH_MAX),
                                     commit=h.commit, start=h.start, end=h.end, lines=h.lines)
                      for h in data.hunks if h.area == area and h.digest not in signed)
        out.append(UnsignedArea(area=area, title=titles.get(area, area),
                                rule=f.rule, fingerprint=f.fingerprint, action=f.action,
                                waived=f.waived, hunks=hunks))
    return tuple(out)


# ---------------------------------------------------------------- the view


@dataclass(frozen=True)
class Counts:
    block: int = 0
    review: int = 0
    info: int = 0
    waived: int = 0

    @property
    def total(self) -> int:
        return self.block + self.review + self.info + self.waived

    @classmethod
    def of(cls, findings: Iterable[Finding]) -> Counts:
        b = r = i = w = 0
        for f in findings:
            if f.waived:
                w += 1
            elif f.action is Action.BLOCK:
                b += 1
            elif f.action is Action.REVIEW:
                r += 1
            else:
                i += 1
        return cls(b, r, i, w)

    def words(self) -> str:
        parts = [f"{n} {w}" for n, w in ((self.block, "block"), (self.review, "review"),
                                          (self.info, "info"), (self.waived, "waived")) if n]
        return ", ".join(parts) if parts else "none"


@dataclass(frozen=True)
class StageLine:
    name: str
    status: StageStatus
    summary: str  # one line on what the stage found (untrusted parts redacted, not escaped)
    problems: tuple[str, ...]  # failure reasons and what was not checked
    counts: Counts


@dataclass(frozen=True)
class Proof:
    ok: bool | None
    upstream_ref: str
    upstream_commit: str
    upstream_tree: str
    expected_tree: str
    bundle_tree: str
    listed: int
    unlisted: tuple[str, ...]
    missing: tuple[str, ...]
    merges: tuple[str, ...]
    order_ok: bool | None
    differences: tuple[Mapping[str, Any], ...]
    differences_total: int  # the stage may list only the first ones
    anomalies: tuple[str, ...]
    #: merges with lines of their own (sha, paths changed while merging); upstream's commits
    #: applied again through the fork (series sha, upstream sha)
    merge_changes: tuple[tuple[str, tuple[str, ...]], ...] = ()
    upstream_picks: tuple[tuple[str, str], ...] = ()
    model: str = "rebase"  # "merge": the head's tree is the claim, nothing replayed
    statement: str = ""  # the proof in one sentence (what the console and report.md say)


@dataclass(frozen=True)
class CommitView:
    index: int  # 1-based position in the listed series
    sha: str
    subject: str
    body: str  # the commit message after its subject line (redacted)
    author: str
    date: str
    patch_id: str
    stats: Mapping[str, Any] | None  # {files, insertions, deletions} when the stage gave them
    findings: tuple[Finding, ...]
    counts: Counts
    by_category: tuple[tuple[str, Counts], ...]


@dataclass(frozen=True)
class Group:
    """Findings not tied to a listed series commit (upstream, inherited, or unknown commits)."""

    label: str
    findings: tuple[Finding, ...]
    counts: Counts


_D = TypeVar("_D", bound=StageData)


@dataclass(frozen=True)
class Shown(Generic[_D]):
    """A requested stage's typed result for its table; ``data`` None: the stage gave none (it
    crashed or stopped first)."""

    data: _D | None


@dataclass(frozen=True)
class ReportView:
    verdict: Verdict
    reasons: tuple[str, ...]
    title: str
    stages: tuple[StageLine, ...]
    not_checked: tuple[str, ...]  # "stage: what" for every requested check that did not run
    not_requested: tuple[str, ...]  # stage names the spec left out
    proof: Proof | None
    commits: tuple[CommitView, ...]
    others: tuple[Group, ...]
    by_category: tuple[tuple[str, tuple[Finding, ...]], ...]
    findings: tuple[Finding, ...]
    counts: Counts
    deps: Shown[DepsData] | None  # None: the spec left the stage out
    build: Shown[BuildData] | None
    sbom: Shown[SbomData] | None
    unit: Shown[UnitData] | None
    tool: str
    review: str | None = None  # the review coverage line, when the spec asks for review
    #: the review.unsigned.<area> findings as the hunks they stand for (by fingerprint too)
    unsigned: tuple[UnsignedArea, ...] = ()

    def unsigned_of(self, f: Finding) -> UnsignedArea | None:
        """The unreviewed hunks a ``review.unsigned.*`` finding stands for (None otherwise)."""
        if not is_unsigned(f):
            return None
        return next((u for u in self.unsigned if u.fingerprint == f.fingerprint), None)


def build_view(audit: AuditResult) -> ReportView:
    """What the reports show of ``audit``, made from it redacted (once: a
    :class:`~auditor.report.interface.RedactedAudit` is taken as it is)."""
    audit = redacted(audit)
    stages = {name: audit.stages.get(name, StageResult.not_requested(name)) for name in STAGES}
    review = stages.pop("review")  # human review is optional: listed only when the spec asks
    if review.status is not StageStatus.NOT_REQUESTED:
        stages["review"] = review
    findings = tuple(shown_finding(f) for f in audit.findings)
    lines = tuple(_stage_line(st, [shown_finding(f) for f in st.findings])
                  for st in stages.values())
    not_checked: list[str] = []
    for st in stages.values():
        if st.status is StageStatus.INCOMPLETE:
            items = st.not_checked or st.reasons or ("the stage did not finish",)
            not_checked += [f"{st.name}: {capped(x, MESSAGE_MAX)}" for x in items]
        elif st.not_checked:  # failed stages may also have left things unchecked
            not_checked += [f"{st.name}: {capped(x, MESSAGE_MAX)}" for x in st.not_checked]
    not_requested = tuple(n for n, st in stages.items() if st.status is StageStatus.NOT_REQUESTED)
    verify = stages["verify"]
    proof = _proof(verify) if verify.status is not StageStatus.NOT_REQUESTED else None
    commits, others = _commits(verify, findings)
    categories = [c.value for c in Category]
    by_cat = []
    for cat in categories:
        group = tuple(sorted((f for f in findings if f.category.value == cat), key=_finding_order))
        if group:
            by_cat.append((cat, group))
    return ReportView(
        verdict=audit.verdict,
        reasons=tuple(capped(r, MESSAGE_MAX) for r in audit.reasons),
        title=_title(audit),
        stages=lines,
        not_checked=tuple(not_checked),
        not_requested=not_requested,
        proof=proof,
        commits=commits,
        others=others,
        by_category=tuple(by_cat),
        findings=findings,
        counts=Counts.of(findings),
        deps=_shown(stages["deps"], DepsData),
        build=_shown(stages["build"], BuildData),
        sbom=_shown(stages["sbom"], SbomData),
        unit=_shown(stages["unit"], UnitData),
        tool=f"{as_text(audit.tool.get('name')) or 'auditor'} {as_text(audit.tool.get('version'))}"
             .strip(),
        review=(_review_summary(review.data_as(ReviewData))
                if review.status is StageStatus.OK else None),
        unsigned=unsigned_areas(audit),
    )


def _shown(st: StageResult, cls: type[_D]) -> Shown[_D] | None:
    """The stage's typed result for the tables (None when the spec left the stage out)."""
    if st.status is StageStatus.NOT_REQUESTED:
        return None
    return Shown(st.data_as(cls))


_ACTION_RANK = {Action.BLOCK: 0, Action.REVIEW: 1, Action.INFO: 2}


def _finding_order(f: Finding) -> tuple[int, int, str, int, str]:
    return (int(f.waived), _ACTION_RANK[f.action], f.path, f.line, f.rule)


def _title(audit: AuditResult) -> str:
    engine = as_map(audit.inputs.get("engine"))
    upstream = as_map(audit.inputs.get("upstream"))
    parts = []
    if engine:
        parts.append(f"{as_text(engine.get('profile'))} {as_text(engine.get('version'))}".strip())
    if upstream.get("ref"):
        parts.append(f"upstream {as_text(upstream.get('ref'))}")
    patches = as_map(audit.inputs.get("patches"))
    if patches.get("ref"):
        n = len(as_list(patches.get("commits")))
        parts.append(f"series {as_text(patches.get('ref'))} ({n} commits)")
    return " · ".join(p for p in parts if p)


# ---------------------------------------------------------------- per stage


def _stage_line(st: StageResult, findings: Sequence[Finding]) -> StageLine:
    counts = Counts.of(findings)
    problems = st.reasons + tuple(f"not checked: {x}" for x in st.not_checked)
    if st.status is StageStatus.NOT_REQUESTED:
        summary = "not requested by the spec"
    else:
        summary = _summary(st)
        if st.status is StageStatus.INCOMPLETE:
            what = "; ".join(st.not_checked or st.reasons) or "did not finish"
            summary = f"incomplete: {what}" + (f" — {summary}" if summary else "")
        elif st.status is StageStatus.FAILED:
            what = "; ".join(st.reasons) or "failed"
            summary = f"failed: {what}" + (f" — {summary}" if summary else "")
    if counts.total and st.status is not StageStatus.NOT_REQUESTED:
        summary += f"; findings: {counts.words()}"
    return StageLine(st.name, st.status, summary, problems, counts)


def _summary(st: StageResult) -> str:
    """One line on what the stage found ("" when it has no result to tell of)."""
    d = st.data
    if isinstance(d, VerifyData):
        return _verify_summary(d)
    if isinstance(d, ScanData):
        return _scan_summary(d)
    if isinstance(d, DepsData):
        return _deps_summary(d)
    if isinstance(d, BuildData):
        return _build_summary(d)
    if isinstance(d, SbomData):
        return _sbom_summary(d)
    if isinstance(d, UnitData):
        return f"{d.unit or 'unit'}: {_exposure_words(d)}"
    if isinstance(d, ReviewData):
        return _review_summary(d)
    return ""


def _verify_summary(d: VerifyData) -> str:
    n = len(d.listed)
    ref = d.upstream.ref or "?"
    if d.proof is not None and d.proof.series.model == "merge":
        merges = len(d.proof.series.merges)
        contains = (f"upstream {ref} (commit {short(d.upstream.commit or '')}) and {n} listed "
                    f"commit(s) ({merges} merge{'s' if merges != 1 else ''})")
        if d.proof.series.upstream_also_total:
            contains += (f", besides {d.proof.series.upstream_also_total} upstream commit(s) "
                         f"that [upstream] also ({', '.join(d.proof.series.upstream_also)}) reaches")
        if d.proof.series.upstream_merged_total:
            contains += (f", besides {d.proof.series.upstream_merged_total} upstream commit(s) "
                         "that upstream's other branches or tags reach")
        if d.ok:
            return (f"proof holds: bundle tree {short(d.bundle_tree)} = head "
                    f"{short(d.head.commit or '')} of {d.head.ref}, which contains {contains}")
        return (f"proof FAILED: bundle is not the head of {d.head.ref} containing {contains}")
    if d.ok:
        return f"proof holds: bundle tree {short(d.bundle_tree)} = upstream {ref} + {n} " \
               f"listed commit(s)"
    diffs = len(d.proof.differences) if d.proof is not None else 0
    return f"proof FAILED: bundle is not upstream {ref} + the {n} listed commit(s)" + (
        f"; {diffs} path(s) differ" if diffs else "")


def _scan_summary(d: ScanData) -> str:
    parts = [f"scope {d.scope.value}", f"{len(d.checked_files)} file(s) checked"]
    if d.scanners:
        parts.append("scanners: " + ", ".join(f"{k} {v}".strip() for k, v in d.scanners.items()))
    if d.cache is not None:
        parts.append(f"cache hits {d.cache.hits}")
    return "; ".join(parts)


def _deps_summary(d: DepsData) -> str:
    vulns = len(d.vulnerabilities)
    text = f"{len(d.added)} added, {len(d.removed)} removed, {len(d.changed)} changed " \
           f"dependencies; {vulns} known vulnerabilit{'y' if vulns == 1 else 'ies'}"
    text += f" (source: {d.source.kind or '?'}"
    if d.source.date:
        text += f", {d.source.date}"
    return text + ")"


def reproducible_word(value: Any) -> str:
    if value is True:
        return "reproducible (two builds identical)"
    if value is False:
        return "NOT reproducible (two builds differ)"
    return "reproducibility not checked"


def module_groups(modules: Sequence[ModuleRecord]) -> list[tuple[str, list[str]]]:
    """Module names grouped by what the build did with them: ``built`` first, then the rest
    (``official`` …); a module without an ``action`` counts as built."""
    groups: dict[str, list[str]] = {}
    for m in modules:
        groups.setdefault(m.action or "built", []).append(m.name or m.wheel_path)
    return sorted(groups.items(), key=lambda kv: (kv[0] != "built", kv[0]))


def origin_counts(origins: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, int]]:
    """How many files of the wheel have each origin (``official``, ``built``, ``generated`` …)."""
    counts: dict[str, int] = {}
    for value in origins.values():
        kind = as_text(value.get("origin")) or "unknown"
        counts[kind] = counts.get(kind, 0) + 1
    return sorted(counts.items())


def _build_summary(d: BuildData) -> str:
    parts = []
    if d.wheel is not None:
        parts.append(f"wheel {d.wheel.file} (sha256 {short(d.wheel.sha256, 16)})")
    if d.imported is not None:
        parts.append(f"{len(d.built)} module(s) compiled on the build host, imported from "
                     f"{d.imported.source}/{d.imported.record} (sha256 "
                     f"{short(d.imported.record_sha256, 16)})")
    else:
        parts.append(f"{len(d.built)} module(s) compiled here")
    parts.append(reproducible_word(d.reproducible))
    return "; ".join(parts)


def _sbom_summary(d: SbomData) -> str:
    parts = []
    if d.sbom is not None:
        parts.append(f"SBOM {d.sbom.file}")
    if d.provenance is not None:
        parts.append(f"provenance {d.provenance.file}")
    return "; ".join(parts)


def _exposure_words(d: UnitData) -> str:
    if d.exposure is None:
        return "exposure not measured"
    return f"exposure {d.exposure.score} {d.exposure.label}".strip()


def exposure_text(d: UnitData) -> str:
    return _exposure_words(d)


def _review_summary(d: ReviewData | None) -> str:
    return d.summary if d is not None else ""


# ---------------------------------------------------------------- the proof and the series


def _anomaly_text(a: Any) -> str:
    if isinstance(a, Mapping):
        kind = as_text(a.get("kind") or a.get("type") or a.get("anomaly"))
        path = as_text(a.get("path"))
        detail = as_text(a.get("detail") or a.get("message") or a.get("reason"))
        text = " ".join(p for p in (kind, path) if p)
        if detail:
            text += f" ({detail})" if text else detail
        return text or as_text(dict(a))
    return as_text(a)


def _proof(st: StageResult) -> Proof:
    d = st.data_as(VerifyData)
    if d is None:  # the stage crashed before it had anything to say
        return Proof(ok=False if st.status is StageStatus.FAILED else None, upstream_ref="",
                     upstream_commit="", upstream_tree="", expected_tree="", bundle_tree="",
                     listed=0, unlisted=(), missing=(), merges=(), order_ok=None, differences=(),
                     differences_total=0, anomalies=())
    p = d.proof
    diffs = tuple(dict(x)
                  for x in (p.differences if p is not None else ()))
    return Proof(
        ok=False if st.status is StageStatus.FAILED else d.ok,
        upstream_ref=d.upstream.ref,
        upstream_commit=as_text(d.upstream.commit),
        upstream_tree=as_text(d.upstream.tree),
        expected_tree=as_text(d.expected_tree),
        bundle_tree=d.bundle_tree,
        listed=len(d.listed),
        unlisted=tuple(p.series.unlisted) if p is not None else (),
        missing=tuple(p.series.missing) if p is not None else (),
        merges=tuple(p.series.merges) if p is not None else (),
        order_ok=p.series.order_ok if p is not None else None,
        differences=diffs,
        differences_total=max(len(diffs), p.differences_total if p is not None else 0),
        anomalies=tuple(_anomaly_text(a) for a in (p.anomalies if p is not None else ())),
        merge_changes=tuple((k, tuple(v))
                            for k, v in (p.series.merge_changes.items() if p is not None else ())),
        upstream_picks=tuple(p.series.upstream_picks.items()) if p is not None else (),
        model=p.series.model if p is not None else "rebase",
        statement=_verify_summary(d),
    )


def _commits(verify: StageResult, findings: Sequence[Finding]
             ) -> tuple[tuple[CommitView, ...], tuple[Group, ...]]:
    data = verify.data_as(VerifyData)
    series = data.commits if data is not None else ()
    by_commit: dict[str | None, list[Finding]] = {}
    for f in findings:
        by_commit.setdefault(f.commit, []).append(f)
    views = []
    for i, record in enumerate(series, 1):
        c = record.commit
        own = tuple(sorted(by_commit.pop(c.sha, []), key=_finding_order))
        cats = []
        for cat in Category:
            sub = [f for f in own if f.category is cat]
            if sub:
                cats.append((cat.value, Counts.of(sub)))
        author = c.author_name + (f" <{c.author_email}>" if c.author_email else "")
        assert data is not None
        views.append(CommitView(
            index=i, sha=c.sha, subject=capped(c.subject, SUBJECT_MAX),
            body=capped(c.message.partition("\n")[2].strip("\n"), BODY_MAX),
            author=capped(author, SUBJECT_MAX), date=c.author_date, patch_id=as_text(data.patch_id(c.sha)),
            stats=record.stats, findings=own, counts=Counts.of(own), by_category=tuple(cats)))
    others = []
    none = by_commit.pop(None, [])
    for label, group in (
            ("upstream code (inherited)", [f for f in none if f.inherited and not is_unsigned(f)]),
            ("unreviewed hunks of the series (no sign-off yet; listed area by area)",
             [f for f in none if is_unsigned(f)]),
            ("not tied to one commit (the audit, its policy, the build or the service unit)",
             [f for f in none if not f.inherited and not is_unsigned(f)])):
        if group:
            others.append(Group(label, tuple(sorted(group, key=_finding_order)),
                                Counts.of(group)))
    for other, group in sorted(by_commit.items(), key=lambda kv: kv[0] or ""):
        label = ("lines the series does not explain" if other == "unexplained"
                 else f"commit {short(other)} (not in the listed series)")
        others.append(Group(label, tuple(sorted(group, key=_finding_order)),
                            Counts.of(group)))
    return tuple(views), tuple(others)


def stats_text(stats: Mapping[str, Any] | None) -> str:
    """``+12 −3 in 2 file(s)`` from a commit's diff stats, or "" when there are none."""
    if not stats:
        return ""
    return (f"+{as_text(stats.get('insertions', '?'))} −{as_text(stats.get('deletions', '?'))} "
            f"in {as_text(stats.get('files', '?'))} file(s)")


_DIFF_SKIP = ("path", "change", "diff")


def diff_details(d: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The readable extra fields of one bundle difference (no blob ids, no empty values)."""
    return [(k, v) for k, v in d.items()
            if k not in _DIFF_SKIP and not k.endswith("_blob") and v not in (None, "", [], {})
            and isinstance(v, (str, int, float, bool))]


# ---------------------------------------------------------------- dependencies


def decl_text(d: DeclarationRecord) -> str:
    """One declaration as text: ``name version (file)``."""
    text = f"{d.name} {d.pin or d.specifier}".strip()
    return f"{text} ({d.file})" if d.file else text


def dep_text(item: Any) -> str:
    """One dependency entry as text: ``name version`` / ``name old -> new`` / the raw value."""
    if not isinstance(item, Mapping):
        return as_text(item)
    name = as_text(item.get("name") or item.get("package"))
    old = item.get("old") or item.get("from") or item.get("old_version")
    new = item.get("new") or item.get("to") or item.get("new_version")
    if old is not None or new is not None:
        return f"{name} {as_text(old) or '∅'} -> {as_text(new) or '∅'}"
    spec = item.get("version") or item.get("specifier") or item.get("spec") or ""
    where = item.get("file") or item.get("source") or ""
    text = f"{name} {as_text(spec)}".strip()
    if where:
        text += f" ({as_text(where)})"
    return text or as_text(dict(item))


@dataclass(frozen=True)
class Vuln:
    id: str
    aliases: str
    package: str
    version: str
    fixed: str
    severity: str


def vulnerabilities(records: Sequence[VulnRecord]) -> tuple[Vuln, ...]:
    """The vulnerabilities (of a redacted audit or gate result) as table rows."""
    return tuple(Vuln(id=v.id, aliases=", ".join(v.aliases), package=v.package, version=v.version,
                      fixed=", ".join(v.fixed), severity=as_text(v.severity))
                 for v in records)


def snippet_lines(f: Finding) -> list[tuple[int, str, bool]]:
    """(line number, text, highlighted) for the finding's snippet, which starts at ``f.line``;
    the number is 0 (unknown) when the finding has no line."""
    text = f.snippet.rstrip("\n")
    if not text:
        return []
    end = f.end_line if f.end_line and f.end_line >= f.line else f.line
    out = []
    for i, line in enumerate(text.split("\n")):
        n = f.line + i if f.line >= 1 else 0
        out.append((n, line.rstrip("\r"), f.line >= 1 and n <= end))
    return out
