"""What every report shows, read defensively from an :class:`~auditor.model.AuditResult`.

The formatters (Markdown, HTML, console, GitHub) render the same :class:`ReportView`; only the
escaping differs. Stage details are other stages' JSON, so every field is optional here: what is
missing is shown as missing, never guessed. Untrusted text is *redacted* here (secrets never reach any
format) but not escaped: each formatter escapes for its own syntax.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

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
from auditor.textsafe import redact

ACTIONS: tuple[Action, ...] = (Action.BLOCK, Action.REVIEW, Action.INFO)


# ---------------------------------------------------------------- defensive readers


def as_map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def as_text(value: Any) -> str:
    return "" if value is None else str(value)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def short(sha: Any, n: int = 10) -> str:
    text = as_text(sha)
    return text[:n] if text else "—"


def clean_finding(f: Finding) -> Finding:
    """The finding with every free-text field passed through :func:`~auditor.textsafe.redact`."""
    return replace(f, message=redact(f.message), snippet=redact(f.snippet), path=redact(f.path),
                   waiver=redact(f.waiver) if f.waiver else f.waiver, help=redact(f.help))


def finding_state(f: Finding) -> str:
    """``block``/``review``/``info``, or ``waived`` when a waiver applies."""
    return "waived" if f.waived else f.action.value


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
    deps: Mapping[str, Any] | None
    build: Mapping[str, Any] | None
    sbom: Mapping[str, Any] | None
    unit: Mapping[str, Any] | None
    tool: str
    review: str | None = None  # the review coverage line, when the spec asks for review


def build_view(audit: AuditResult) -> ReportView:
    stages = {name: audit.stages.get(name, StageResult.not_requested(name)) for name in STAGES}
    review = stages.pop("review")  # human review is optional: listed only when the spec asks
    if review.status is not StageStatus.NOT_REQUESTED:
        stages["review"] = review
    findings = tuple(clean_finding(f) for f in audit.findings)
    lines = tuple(_stage_line(st, [clean_finding(f) for f in st.findings])
                  for st in stages.values())
    not_checked: list[str] = []
    for st in stages.values():
        if st.status is StageStatus.INCOMPLETE:
            items = st.not_checked or st.reasons or ("the stage did not finish",)
            not_checked += [f"{st.name}: {redact(x)}" for x in items]
        elif st.not_checked:  # failed stages may also have left things unchecked
            not_checked += [f"{st.name}: {redact(x)}" for x in st.not_checked]
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
        reasons=tuple(redact(r) for r in audit.reasons),
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
        deps=_details(stages["deps"]),
        build=_details(stages["build"]),
        sbom=_details(stages["sbom"]),
        unit=_details(stages["unit"]),
        tool=f"{as_text(audit.tool.get('name')) or 'auditor'} {as_text(audit.tool.get('version'))}"
             .strip(),
        review=(redact(_review_summary(review.details))
                if review.status is StageStatus.OK else None),
    )


def _details(st: StageResult) -> Mapping[str, Any] | None:
    return None if st.status is StageStatus.NOT_REQUESTED else st.details


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
    return redact(" · ".join(p for p in parts if p))


# ---------------------------------------------------------------- per stage


def _stage_line(st: StageResult, findings: Sequence[Finding]) -> StageLine:
    counts = Counts.of(findings)
    problems = tuple(redact(r) for r in st.reasons) + tuple(
        f"not checked: {redact(x)}" for x in st.not_checked)
    if st.status is StageStatus.NOT_REQUESTED:
        summary = "not requested by the spec"
    else:
        try:
            summary = redact(_SUMMARIES.get(st.name, _generic)(st.details))
        except Exception as exc:  # details of an unexpected shape: say so, do not crash the report
            summary = f"details unreadable ({type(exc).__name__})"
        if st.status is StageStatus.INCOMPLETE:
            what = "; ".join(redact(x) for x in (st.not_checked or st.reasons)) or "did not finish"
            summary = f"incomplete: {what}" + (f" — {summary}" if summary else "")
        elif st.status is StageStatus.FAILED:
            what = "; ".join(redact(x) for x in st.reasons) or "failed"
            summary = f"failed: {what}" + (f" — {summary}" if summary else "")
    if counts.total and st.status is not StageStatus.NOT_REQUESTED:
        summary += f"; findings: {counts.words()}"
    return StageLine(st.name, st.status, summary, problems, counts)


def _generic(d: Mapping[str, Any]) -> str:
    return ""


def _verify_summary(d: Mapping[str, Any]) -> str:
    if not d:
        return ""
    up = as_map(d.get("upstream"))
    n = len(as_list(as_map(d.get("series")).get("listed")))
    ok = d.get("ok")
    ref = as_text(up.get("ref")) or "?"
    if ok is True:
        return f"proof holds: bundle tree {short(d.get('bundle_tree'))} = upstream {ref} + {n} " \
               f"listed commit(s)"
    if ok is False:
        diffs = len(as_list(d.get("differences")))
        return f"proof FAILED: bundle is not upstream {ref} + the {n} listed commit(s)" + (
            f"; {diffs} path(s) differ" if diffs else "")
    return "proof not decided"


def _scan_summary(d: Mapping[str, Any]) -> str:
    parts = []
    if d.get("scope"):
        parts.append(f"scope {as_text(d.get('scope'))}")
    checked = d.get("checked_files")
    if isinstance(checked, (list, tuple)):
        parts.append(f"{len(checked)} file(s) checked")
    elif isinstance(checked, int):
        parts.append(f"{checked} file(s) checked")
    scanners = d.get("scanners")
    if isinstance(scanners, Mapping):
        names = [f"{k} {as_text(v.get('version')) if isinstance(v, Mapping) else as_text(v)}"
                 .strip() for k, v in scanners.items()]
        parts.append("scanners: " + ", ".join(names))
    elif isinstance(scanners, (list, tuple)):
        parts.append("scanners: " + ", ".join(
            as_text(s.get("name")) if isinstance(s, Mapping) else as_text(s) for s in scanners))
    cache = as_map(d.get("cache"))
    if cache:
        hits = cache.get("hits")
        if hits is not None:
            parts.append(f"cache hits {as_text(hits)}")
    return "; ".join(parts)


def _deps_summary(d: Mapping[str, Any]) -> str:
    if not d:
        return ""
    added, removed, changed = (len(as_list(d.get(k))) for k in ("added", "removed", "changed"))
    vulns = len(as_list(d.get("vulnerabilities")))
    text = f"{added} added, {removed} removed, {changed} changed dependencies; " \
           f"{vulns} known vulnerabilit{'y' if vulns == 1 else 'ies'}"
    src = as_map(d.get("source"))
    if src:
        text += f" (source: {as_text(src.get('kind')) or '?'}"
        if src.get("date"):
            text += f", {as_text(src.get('date'))}"
        text += ")"
    return text


def reproducible_word(value: Any) -> str:
    if value is True:
        return "reproducible (two builds identical)"
    if value is False:
        return "NOT reproducible (two builds differ)"
    return "reproducibility not checked"


def module_groups(modules: Any) -> list[tuple[str, list[str]]]:
    """Module names grouped by what the build did with them: ``built`` first, then the rest
    (``official`` …); a module without an ``action`` counts as built."""
    groups: dict[str, list[str]] = {}
    for m in as_list(modules):
        if isinstance(m, Mapping):
            name = as_text(m.get("name") or m.get("wheel_path") or m.get("path") or m.get("file"))
            action = as_text(m.get("action")) or "built"
        else:
            name, action = as_text(m), "built"
        groups.setdefault(action, []).append(redact(name))
    return sorted(groups.items(), key=lambda kv: (kv[0] != "built", kv[0]))


def origin_counts(origins: Any) -> list[tuple[str, int]]:
    """How many files of the wheel have each origin (``official``, ``built``, ``generated`` …),
    from ``{path: {origin: …}}`` or ``{origin: [paths]}``."""
    counts: dict[str, int] = {}
    for key, value in as_map(origins).items():
        if isinstance(value, Mapping):
            kind = as_text(value.get("origin")) or "unknown"
            counts[kind] = counts.get(kind, 0) + 1
        elif isinstance(value, (list, tuple)):
            counts[as_text(key)] = counts.get(as_text(key), 0) + len(value)
        else:
            kind = as_text(value) or "unknown"
            counts[kind] = counts.get(kind, 0) + 1
    return sorted(counts.items())


def _build_summary(d: Mapping[str, Any]) -> str:
    if not d:
        return ""
    parts = []
    wheel = as_map(d.get("wheel"))
    if wheel:
        parts.append(f"wheel {as_text(wheel.get('file')) or '?'} (sha256 "
                     f"{short(wheel.get('sha256'), 16)})")
    built = dict(module_groups(d.get("modules"))).get("built", [])
    parts.append(f"{len(built)} module(s) compiled here")
    if "reproducible" in d:
        parts.append(reproducible_word(d.get("reproducible")))
    return "; ".join(parts)


def _sbom_summary(d: Mapping[str, Any]) -> str:
    parts = []
    sbom = as_map(d.get("sbom"))
    if sbom:
        parts.append(f"SBOM {as_text(sbom.get('file')) or '?'}")
    prov = as_map(d.get("provenance"))
    if prov:
        parts.append(f"provenance {as_text(prov.get('file')) or 'statement'}")
    return "; ".join(parts)


def exposure_text(d: Mapping[str, Any]) -> str:
    exp = as_map(d.get("exposure"))
    if not exp or exp.get("score") is None:
        return "exposure not measured"
    return f"exposure {as_text(exp.get('score'))} {as_text(exp.get('label'))}".strip()


def _unit_summary(d: Mapping[str, Any]) -> str:
    if not d:
        return ""
    unit = d.get("unit")
    name = as_text(unit.get("file") or unit.get("name")) if isinstance(unit, Mapping) \
        else as_text(unit)
    return f"{name or 'unit'}: {exposure_text(d)}"


def _review_summary(d: Mapping[str, Any]) -> str:
    return as_text(d.get("summary"))


_SUMMARIES = {"verify": _verify_summary, "scan": _scan_summary, "deps": _deps_summary,
              "build": _build_summary, "sbom": _sbom_summary, "unit": _unit_summary,
              "review": _review_summary}


# ---------------------------------------------------------------- the proof and the series


def _strs(values: Any) -> tuple[str, ...]:
    out = []
    for v in as_list(values):
        if isinstance(v, Mapping):
            v = v.get("sha") or v.get("commit") or v.get("path") or v.get("message") or v
        out.append(redact(as_text(v)))
    return tuple(out)


def _anomaly_text(a: Any) -> str:
    if isinstance(a, Mapping):
        kind = as_text(a.get("kind") or a.get("type") or a.get("anomaly"))
        path = as_text(a.get("path"))
        detail = as_text(a.get("detail") or a.get("message") or a.get("reason"))
        text = " ".join(p for p in (kind, path) if p)
        if detail:
            text += f" ({detail})" if text else detail
        return redact(text or as_text(dict(a)))
    return redact(as_text(a))


def _proof(st: StageResult) -> Proof:
    d = st.details
    up = as_map(d.get("upstream"))
    series = as_map(d.get("series"))
    ok = d.get("ok") if isinstance(d.get("ok"), bool) else None
    if st.status is StageStatus.FAILED:
        ok = False
    order = series.get("order_ok")
    diffs = tuple({k: (redact(v) if isinstance(v, str) else v) for k, v in x.items()}
                  for x in as_list(d.get("differences")) if isinstance(x, Mapping))
    return Proof(
        ok=ok,
        upstream_ref=redact(as_text(up.get("ref"))),
        upstream_commit=as_text(up.get("commit")),
        upstream_tree=as_text(up.get("tree")),
        expected_tree=as_text(d.get("expected_tree")),
        bundle_tree=as_text(d.get("bundle_tree")),
        listed=len(as_list(series.get("listed"))),
        unlisted=_strs(series.get("unlisted")),
        missing=_strs(series.get("missing")),
        merges=_strs(series.get("merges")),
        order_ok=order if isinstance(order, bool) else None,
        differences=diffs,
        differences_total=max(len(diffs), _int(d.get("differences_total"))),
        anomalies=tuple(_anomaly_text(a) for a in as_list(d.get("anomalies"))),
    )


def patch_ids(details: Mapping[str, Any]) -> dict[str, str | None]:
    """sha -> patch-id from the verify details (``series.patch_ids`` as a mapping or a list,
    then each commit's own ``patch_id``)."""
    out: dict[str, str | None] = {}
    series = as_map(details.get("series"))
    raw = series.get("patch_ids")
    if isinstance(raw, Mapping):
        out.update({str(k): (None if v is None else str(v)) for k, v in raw.items()})
    else:
        listed = [as_text(x) for x in as_list(series.get("listed"))]
        for i, item in enumerate(as_list(raw)):
            if isinstance(item, Mapping):
                sha = as_text(item.get("sha") or item.get("commit"))
                pid = item.get("patch_id") or item.get("patch-id")
                if sha:
                    out[sha] = None if pid is None else str(pid)
            elif i < len(listed):
                out[listed[i]] = None if item is None else str(item)
    for c in as_list(details.get("commits")):
        if isinstance(c, Mapping) and c.get("sha") and out.get(str(c["sha"])) is None:
            pid = c.get("patch_id")
            out[str(c["sha"])] = None if pid is None else str(pid)
    return out


def series_commits(details: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The listed series, in order, as mappings with at least ``sha`` (from ``commits`` when the
    stage gave them, else from ``series.listed``)."""
    commits = [c for c in as_list(details.get("commits"))
               if isinstance(c, Mapping) and c.get("sha")]
    if commits:
        return commits
    return [{"sha": as_text(s)} for s in as_list(as_map(details.get("series")).get("listed"))
            if as_text(s)]


def _commits(verify: StageResult, findings: Sequence[Finding]
             ) -> tuple[tuple[CommitView, ...], tuple[Group, ...]]:
    pids = patch_ids(verify.details)
    series = series_commits(verify.details)
    by_commit: dict[str | None, list[Finding]] = {}
    for f in findings:
        by_commit.setdefault(f.commit, []).append(f)
    views = []
    for i, c in enumerate(series, 1):
        sha = as_text(c.get("sha"))
        own = tuple(sorted(by_commit.pop(sha, []), key=_finding_order))
        stats = c.get("stats")
        cats = []
        for cat in Category:
            sub = [f for f in own if f.category is cat]
            if sub:
                cats.append((cat.value, Counts.of(sub)))
        author = as_text(c.get("author_name"))
        if c.get("author_email"):
            author += f" <{as_text(c.get('author_email'))}>"
        views.append(CommitView(
            index=i, sha=sha, subject=redact(as_text(c.get("subject"))),
            body=redact(as_text(c.get("message")).partition("\n")[2].strip("\n")),
            author=redact(author),
            date=as_text(c.get("author_date")), patch_id=as_text(pids.get(sha)),
            stats=stats if isinstance(stats, Mapping) else None, findings=own,
            counts=Counts.of(own), by_category=tuple(cats)))
    others = []
    upstream = by_commit.pop(None, [])
    if upstream:
        others.append(Group("upstream or inherited code (no series commit)",
                            tuple(sorted(upstream, key=_finding_order)), Counts.of(upstream)))
    for other, group in sorted(by_commit.items(), key=lambda kv: kv[0] or ""):
        label = ("lines the series does not explain" if other == "unexplained"
                 else f"commit {short(other)} (not in the listed series)")
        others.append(Group(redact(label), tuple(sorted(group, key=_finding_order)),
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


def dep_text(item: Any) -> str:
    """One dependency entry as text: ``name version`` / ``name old -> new`` / the raw value."""
    if not isinstance(item, Mapping):
        return redact(as_text(item))
    name = as_text(item.get("name") or item.get("package"))
    old = item.get("old") or item.get("from") or item.get("old_version")
    new = item.get("new") or item.get("to") or item.get("new_version")
    if old is not None or new is not None:
        return redact(f"{name} {as_text(old) or '∅'} -> {as_text(new) or '∅'}")
    spec = item.get("version") or item.get("specifier") or item.get("spec") or ""
    where = item.get("file") or item.get("source") or ""
    text = f"{name} {as_text(spec)}".strip()
    if where:
        text += f" ({as_text(where)})"
    return redact(text or as_text(dict(item)))


@dataclass(frozen=True)
class Vuln:
    id: str
    aliases: str
    package: str
    version: str
    fixed: str
    severity: str


def vulnerabilities(d: Mapping[str, Any] | None) -> tuple[Vuln, ...]:
    out = []
    for v in as_list(as_map(d).get("vulnerabilities")):
        if not isinstance(v, Mapping):
            out.append(Vuln(redact(as_text(v)), "", "", "", "", ""))
            continue
        fixed = v.get("fixed")
        out.append(Vuln(
            id=redact(as_text(v.get("id"))),
            aliases=redact(", ".join(as_text(a) for a in as_list(v.get("aliases")))),
            package=redact(as_text(v.get("package"))),
            version=redact(as_text(v.get("version"))),
            fixed=redact(", ".join(as_text(x) for x in fixed) if isinstance(fixed, (list, tuple))
                         else as_text(fixed)),
            severity=redact(as_text(v.get("severity"))),
        ))
    return tuple(out)


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
