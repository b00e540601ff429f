"""report.md: the audit as a pull-request comment.

Order: the verdict and why, what was NOT checked, one line per stage, the tree proof, findings by
commit (the series in order) and by category, dependencies and vulnerabilities, the build, the SBOM,
the service unit's exposure. Every untrusted string goes through :func:`md` (no links, HTML,
emphasis or control bytes); secrets were already redacted by the view.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from auditor.model import AuditResult, Finding, StageStatus, Verdict
from auditor.report.interface import Formatter, RedactedAudit
from auditor.report.view import (
    CommitView,
    Counts,
    ReportView,
    UnsignedArea,
    as_text,
    build_view,
    decl_text,
    dep_text,
    diff_details,
    exposure_text,
    finding_state,
    module_groups,
    origin_counts,
    origin_words,
    reproducible_word,
    short,
    stats_text,
    vulnerabilities,
)
from auditor.results.deps import DepsData
from auditor.textsafe import document_safe, markdown_safe

#: a PR comment holds 65,536 characters: long tables are cut and point at report.html
MAX_ROWS = 60
#: finding rows in all the category tables together
MAX_FINDING_ROWS = 120

VERDICT_MARK = {Verdict.PASS: "✅", Verdict.REVIEW: "🟡", Verdict.FAIL: "❌",
                Verdict.INCOMPLETE: "⚠️"}
STATUS_MARK = {StageStatus.OK: "✅ ok", StageStatus.FAILED: "❌ failed",
               StageStatus.INCOMPLETE: "⚠️ incomplete", StageStatus.NOT_REQUESTED: "➖ not requested"}


_AUTOLINK = re.compile(r"(?i)\b(https?|ftp|file|javascript|vbscript|data|mailto)(:)")
_WWW = re.compile(r"(?i)\b(www)(\.)")


def md(text: Any) -> str:
    """Untrusted (already redacted) text as inert inline Markdown (escaped, one line). URL schemes and
    ``www.`` get an escaped ``:``/``.`` so that GitHub's autolinker makes no link of them."""
    out = markdown_safe(as_text(text))
    return _WWW.sub(r"\1\\\2", _AUTOLINK.sub(r"\1\\\2", out))


def code(text: Any) -> str:
    """A short identifier (sha, tree, ref) as inline code: no backticks, pipes or control bytes."""
    value = document_safe(as_text(text)).replace("\r", " ").replace("\n", " ")
    value = value.replace("`", "'").replace("|", "\\|")
    return f"`{value}`" if value.strip() else "—"


def table(header: Sequence[str], rows: Iterable[Sequence[str]], *, limit: int = MAX_ROWS,
          more: str = "in report.html") -> list[str]:
    rows = list(rows)
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows[:limit]]
    if len(rows) > limit:
        out.append("")
        out.append(f"… and {len(rows) - limit} more {more}.")
    return out


def counts_cell(c: Counts) -> str:
    return c.words() if c.total else "clean"


def location(f: Finding, unsigned: UnsignedArea | None = None) -> str:
    if unsigned is not None:  # many hunks, not one file and line
        return f"{unsigned.words()} (listed under “Unreviewed hunks”)"
    return md(f.path or "(no file)") + (f":{f.line}" if f.line >= 1 else "")


def rule_cell(f: Finding, *, with_fingerprint: bool = True) -> str:
    """The rule and the fingerprint a waiver names; a merged finding names its other rules, which
    a waiver of this finding covers."""
    text = f"{md(f.rule)} {code(f.fingerprint)}" if with_fingerprint else md(f.rule)
    if f.also:
        text += (f" (also {', '.join(md(r) for r in f.also)}: one line, one concern; a waiver of "
                 "this fingerprint covers them)")
    return text


def finding_row(f: Finding, *, with_commit: bool = True, with_fingerprint: bool = False,
                unsigned: UnsignedArea | None = None) -> list[str]:
    state = finding_state(f)
    if f.waived and f.waiver:
        state += f" ({md(f.waiver)})"
    row = [state, f.severity.value, md(f.category.value), location(f, unsigned)]
    if with_commit:
        row.append(code(short(f.commit)) if f.commit else md(origin_words(f)))
    row += [rule_cell(f, with_fingerprint=with_fingerprint), md(f.message)]
    return row


def render_view(v: ReportView, *, heading: str = "#") -> str:
    h2 = heading + "#"
    out: list[str] = []
    out.append(f"{heading} {VERDICT_MARK[v.verdict]} Audit verdict: **{v.verdict.value}**")
    out.append("")
    if v.title:
        out.append(md(v.title) + (f" · {md(v.tool)}" if v.tool else ""))
        out.append("")
    if v.review:
        out += [f"**Review coverage:** {md(v.review)}", ""]
    out += [f"- {md(r)}" for r in v.reasons]
    out.append("")

    out.append(f"{h2} Not checked")
    out.append("")
    if v.not_checked:
        out.append("**These requested checks did not run; nothing here is reported clean:**")
        out.append("")
        out += [f"- ⚠️ {md(x)}" for x in v.not_checked]
    else:
        out.append("Every requested check ran.")
    if v.not_requested:
        out.append("")
        out.append(f"Not requested by the spec, so not checked at all: "
                   f"{', '.join(md(n) for n in v.not_requested)}")
    out.append("")

    out.append(f"{h2} Stages")
    out.append("")
    out += table(["stage", "status", "summary"],
                 ([s.name, STATUS_MARK[s.status], md(s.summary)] for s in v.stages))
    out.append("")

    out += _proof(v, h2)
    out += _by_commit(v, h2)
    out += _by_category(v, h2)
    out += _unreviewed(v, h2)
    out += _deps(v, h2)
    out += _build(v, h2)
    out += _sbom_unit(v, h2)
    return "\n".join(out).rstrip("\n") + "\n"


def _proof(v: ReportView, h2: str) -> list[str]:
    out = [f"{h2} Tree proof", ""]
    p = v.proof
    if p is None:
        return out + ["Not requested: the bundle was not compared with upstream.", ""]
    word = {True: "✅ the bundle is exactly upstream + the listed commits",
            False: "❌ the bundle is NOT upstream + the listed commits",
            None: "⚠️ not decided"}[p.ok]
    out.append(f"**{word}**")
    out.append("")
    out.append(f"- upstream {code(p.upstream_ref)} → commit {code(p.upstream_commit)}, "
               f"tree {code(p.upstream_tree)}")
    out.append(f"- expected tree (upstream + series replayed): {code(p.expected_tree)}")
    out.append(f"- bundle tree: {code(p.bundle_tree)}")
    order = {True: "in order", False: "NOT in the listed order", None: "order unknown"}[p.order_ok]
    out.append(f"- series: {p.listed} listed, {order}; unlisted (hidden): "
               f"{_shas(p.unlisted)}; missing: {_shas(p.missing)}; merges: {_shas(p.merges)}")
    out.append("")
    if p.merge_changes:
        out.append("Changed while merging (lines git's own merge of the parents does not give; "
                   "scanned and reviewed as the merge's):")
        out.append("")
        for sha, paths in p.merge_changes[:MAX_ROWS]:
            shown = ", ".join(code(x) for x in paths[:10]) + (
                f" and {len(paths) - 10} more" if len(paths) > 10 else "")
            out.append(f"- merge {code(sha[:12])}: {shown}")
        out.append("")
    if p.upstream_picks:
        out.append("Upstream's commits applied again (same patch-id; their lines are upstream's, "
                   "not the fork's):")
        out.append("")
        out += [f"- {code(s[:12])} = upstream {code(u[:12])}" for s, u in p.upstream_picks[:MAX_ROWS]]
        out.append("")
    if p.differences:
        out.append("Paths that differ:")
        out.append("")
        out += table(["path", "change", "detail"],
                     ([md(d.get("path")), md(d.get("change")), md(_diff_detail(d))]
                      for d in p.differences))
        if p.differences_total > len(p.differences):
            out.append("")
            out.append(f"The stage listed {len(p.differences)} of {p.differences_total} "
                       "differences.")
        out.append("")
    if p.anomalies:
        out.append("Anomalies worth a look:")
        out.append("")
        out += [f"- {md(a)}" for a in p.anomalies[:MAX_ROWS]]
        if len(p.anomalies) > MAX_ROWS:
            out.append(f"- … and {len(p.anomalies) - MAX_ROWS} more in report.html")
        out.append("")
    return out


def _shas(values: Sequence[str]) -> str:
    if not values:
        return "none"
    shown = ", ".join(code(short(s)) for s in values[:10])
    return shown + (f" (+{len(values) - 10})" if len(values) > 10 else "")


def _diff_detail(d: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}: {as_text(val)}" for k, val in diff_details(d))


def _by_commit(v: ReportView, h2: str) -> list[str]:
    out = [f"{h2} Findings by commit", ""]
    if not v.commits and not v.others:
        return out + ["No series commits were recorded and no findings were made.", ""]
    if v.commits:
        out += table(["#", "commit", "subject", "diff", "findings", "by category"],
                     (_commit_row(c) for c in v.commits), limit=200)
        out.append("")
    for g in v.others:
        out.append(f"**{md(g.label)}**: {counts_cell(g.counts)}")
        out.append("")
    return out


def _commit_row(c: CommitView) -> list[str]:
    cats = "; ".join(f"{md(cat)}: {cnt.words()}" for cat, cnt in c.by_category) or "—"
    return [str(c.index), code(short(c.sha)), md(c.subject), stats_text(c.stats) or "—",
            counts_cell(c.counts), cats]


def _by_category(v: ReportView, h2: str) -> list[str]:
    out = [f"{h2} Findings by category", ""]
    if not v.by_category:
        scanned = any(s.name == "scan" and s.status is StageStatus.OK for s in v.stages)
        return out + ["No findings." if scanned else
                      "No findings — but the scan did not complete; see “Not checked”.", ""]
    budget = MAX_FINDING_ROWS
    for cat, group in v.by_category:
        out.append(f"{h2}# {md(cat)} — {Counts.of(group).words()}")
        out.append("")
        if budget <= 0:
            out += [f"{len(group)} finding(s): listed in report.html and findings.sarif.", ""]
            continue
        out += table(["action", "severity", "category", "location", "commit",
                      "rule and fingerprint", "message"],
                     (finding_row(f, with_fingerprint=True, unsigned=v.unsigned_of(f))
                      for f in group),
                     limit=min(MAX_ROWS, budget))
        budget -= min(len(group), MAX_ROWS)
        out.append("")
    return out


def _unreviewed(v: ReportView, h2: str) -> list[str]:
    """The review.unsigned findings as the hunks they stand for, area by area."""
    if not v.unsigned:
        return []
    out = [f"{h2} Unreviewed hunks", "",
           "Changed hunks of the series that no reviewer signed off ([review] required), by "
           "area; `auditor review plan` makes the packets, `auditor review sign` records a "
           "sign-off.", ""]
    for u in v.unsigned:
        state = "waived" if u.waived else u.action.value
        out.append(f"{h2}# {md(u.title)} ({md(u.area)}) — {u.words()}, {state}")
        out.append("")
        out += table(["hunk", "where", "commit", "lines"],
                     ([code(h.id), md(h.where), code(short(h.commit)), str(h.lines)]
                      for h in u.hunks))
        out.append("")
    return out


def _deps(v: ReportView, h2: str) -> list[str]:
    out = [f"{h2} Dependencies", ""]
    if v.deps is None:
        return out + ["Not requested.", ""]
    d = v.deps.data
    if d is None:
        return out + ["No dependency data (the stage did not complete).", ""]
    for label, texts in (("Added", [decl_text(x) for x in d.added]),
                         ("Removed", [decl_text(x) for x in d.removed]),
                         ("Changed", [dep_text(x) for x in d.changed])):
        if texts:
            out.append(f"- {label}: " + ", ".join(md(t) for t in texts[:MAX_ROWS])
                       + (f" … (+{len(texts) - MAX_ROWS})" if len(texts) > MAX_ROWS else ""))
        else:
            out.append(f"- {label}: none")
    out += _deps_surface(d)
    src = d.source
    out.append(f"- vulnerability data: {md(src.kind)}"
               + (f", digest {code(short(src.digest, 16))}" if src.digest else "")
               + (f", {md(src.date)}" if src.date else ""))
    out.append("")
    vulns = vulnerabilities(d.vulnerabilities)
    if vulns:
        out += table(["id", "aliases", "package", "version", "fixed in", "severity"],
                     ([md(x.id), md(x.aliases), md(x.package), md(x.version), md(x.fixed),
                       md(x.severity)] for x in vulns))
    else:
        out.append("No known vulnerabilities in the data consulted.")
    out.append("")
    return out


def _deps_surface(d: DepsData) -> list[str]:
    """The deployed surface in one line, the lock, and what is not deployed or not pinned."""
    out = []
    split = d.split
    if split is not None:
        out.append(f"- {md(split.surface.get('summary'))}")
    lock = d.lock
    if lock is not None:
        out.append(f"- lock: {code(lock.path)} ({md(lock.format)}, "
                   f"{len(lock.packages)} packages, markers for {md(lock.environment)})")
    unpinned = d.unpinned_deployed
    if unpinned:
        out.append(f"- unpinned deployed requirements, vulnerabilities not checked "
                   f"({len(unpinned)}): "
                   + ", ".join(md(f"{decl_text(x.decl)}:{x.decl.line}")
                               for x in unpinned[:MAX_ROWS])
                   + (f" … (+{len(unpinned) - MAX_ROWS})" if len(unpinned) > MAX_ROWS else ""))
    for note in d.notes[:MAX_ROWS]:
        out.append(f"- note: {md(note)}")
    if split is not None and (split.not_deployed or split.not_deployed_not_checked):
        off = split.not_deployed
        files = sorted({x.file for x in off})
        out += ["", "### Not deployed", "",
                f"{len(off)} declaration(s) in {len(files)} file(s) off the deployed surface: "
                "diffed and attributed when the series changes them, not looked up for "
                "vulnerabilities, and their unpinned ranges are no reason for INCOMPLETE.", ""]
        out.append("- files: " + ", ".join(code(f) for f in files[:MAX_ROWS])
                   + (f" … (+{len(files) - MAX_ROWS})" if len(files) > MAX_ROWS else ""))
        skipped = split.not_deployed_not_checked
        if skipped:
            out.append(f"- not read there ({len(skipped)}): "
                       + "; ".join(md(x.get("text")) for x in skipped[:20])
                       + (f" … (+{len(skipped) - 20})" if len(skipped) > 20 else ""))
        out.append("")
    return out


def _build(v: ReportView, h2: str) -> list[str]:
    out = [f"{h2} Build", ""]
    if v.build is None:
        return out + ["Not requested: nothing was built.", ""]
    d = v.build.data
    if d is None:
        return out + ["No build data (the stage did not complete).", ""]
    if d.wheel is not None:
        out.append(f"- wheel: {md(d.wheel.file)}, sha256 {code(d.wheel.sha256)}")
    groups = module_groups(d.modules)
    if not any(action == "built" for action, _ in groups):
        out.append("- compiled here: none")
    for action, names in groups:
        label = "compiled here" if action == "built" else f"modules, {md(action)}"
        out.append(f"- {label}: " + ", ".join(md(n) for n in names[:MAX_ROWS]))
    out.append(f"- {reproducible_word(d.reproducible)}")
    counts = origin_counts(d.origins)
    if counts:
        out.append("- origin of the wheel's files: "
                   + ", ".join(f"{md(k)}: {n}" for k, n in counts))
    out.append("")
    return out


def _sbom_unit(v: ReportView, h2: str) -> list[str]:
    out = [f"{h2} SBOM, provenance and service", ""]
    if v.sbom is None:
        out.append("- SBOM: not requested")
    else:
        sbom = v.sbom.data.sbom if v.sbom.data is not None else None
        prov = v.sbom.data.provenance if v.sbom.data is not None else None
        out.append(f"- SBOM: {md(sbom.file) if sbom else 'not written'}"
                   + (f", serial {code(sbom.serial)}" if sbom and sbom.serial else ""))
        out.append(f"- provenance: {md(prov.file or 'statement') if prov else 'not written'}")
    if v.unit is None:
        out.append("- service unit: not requested")
    else:
        unit = v.unit.data
        name = unit.unit if unit is not None else ""
        exposure = exposure_text(unit) if unit is not None else "exposure not measured"
        out.append(f"- service unit: {md(name or 'not written')}, **{md(exposure)}**")
    out.append("")
    return out


class MarkdownFormatter(Formatter):
    filename = "report.md"

    def document(self, audit: RedactedAudit) -> str:
        return render_view(build_view(audit)) + signed_section(audit)


def signed_section(audit: AuditResult, h2: str = "##") -> str:
    """"Signed": which files of the audit directory were signed, with which key id (or why
    nothing was); empty for an audit.json from before auditor signed anything."""
    from auditor.attest.sign import signed_lines

    lines = signed_lines(audit.tool)
    if lines is None:
        return ""
    head, *files = lines
    out = ["", f"{h2} Signed", "", md(head)]
    if files:
        out += [""] + [f"- {md(x)}" for x in files]
        out += ["", "Check each with `auditor attest verify FILE --key audit.pub` (see README, "
                "\"Signed attestations\")."]
    return "\n".join(out) + "\n"
