"""Review packets: one Markdown file and one self-contained HTML page per reviewer.

A packet holds, area by area, the area's checklist and then each hunk: where it is, the commit and
its subject, the findings on it (from a scan of the series, when one ran), and the hunk's lines with
their context. Everything from the series (paths, subjects, code, messages) is untrusted: a packet
is made of the plan and findings redacted once (:func:`redacted_plan`, the packets' boundary, as
:func:`auditor.report.interface.redacted` is the reports'), then escaped here — in Markdown, code goes in a fence longer than any backtick run inside it;
in HTML, every value is escaped and the page loads nothing.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from auditor.model import Finding, SeriesCommit
from auditor.outputs import write_audit_file
from auditor.redaction import Redacted, dump_json, from_redacted, redact, redact_tree
from auditor.report.markdown import code as md_code
from auditor.report.markdown import md
from auditor.review.hunks import Hunk
from auditor.review.plan import Packet, Plan
from auditor.textsafe import html_safe, terminal_safe

_BACKTICKS = re.compile(r"`+")
SHORT = 200  # characters of a not-checked reason shown on a hunk


@dataclass(frozen=True)
class Findings:
    """Findings to show in the packets: by hunk digest, and how they were obtained."""

    by_hunk: Mapping[str, tuple[Finding, ...]]
    source: str  # one line for the packet: what scan ran, or that none did
    unchecked: Mapping[str, str] = field(default_factory=dict)  # path -> why the scan could not


def unchecked_paths(hunks: Sequence[Hunk], not_checked: Sequence[str]) -> dict[str, str]:
    """The scan's "path: reason" lines, for the paths of ``hunks``."""
    out: dict[str, str] = {}
    for h in hunks:
        for line in not_checked:
            if line.startswith(h.path + ": "):
                out[h.path] = line[len(h.path) + 2:][:SHORT]
    return out


def attach_findings(hunks: Sequence[Hunk], findings: Sequence[Finding], source: str) -> Findings:
    """Each finding goes to a hunk of its file: one of its commit whose lines it overlaps, else the
    nearest hunk of its commit (findings carry the head's line numbers), else any overlapping one."""
    out: dict[str, list[Finding]] = {}
    by_path: dict[str, list[Hunk]] = {}
    for h in hunks:
        by_path.setdefault(h.path, []).append(h)
    for f in findings:
        mine = by_path.get(f.path, [])
        end = f.end_line or f.line
        of_commit = [h for h in mine if f.commit is not None and h.commit == f.commit]
        overlap = [h for h in (of_commit or mine) if h.start <= end and f.line <= h.end]
        if overlap:
            target = overlap[0]
        elif of_commit:
            target = min(of_commit, key=lambda h: min(abs(h.start - f.line), abs(h.end - f.line)))
        else:
            continue
        out.setdefault(target.digest, []).append(f)
    return Findings({k: tuple(v) for k, v in out.items()}, source)


def file_stem(reviewer: str) -> str:
    return "packet-" + re.sub(r"[^A-Za-z0-9._@+-]", "_", reviewer)


def write_packets(plan: Plan, out: Path, findings: Findings, spec_name: str) -> list[Path]:
    """plan.json plus ``packet-<name>.md`` and ``.html`` for each reviewer, into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    clean, clean_findings = redacted_plan(plan, findings)  # once for every packet and format
    for p, cp in zip(plan.packets, clean.packets, strict=True):
        for ext, text in (
                ("md", from_redacted(_packet_markdown(clean, cp, clean_findings, spec_name))),
                ("html", from_redacted(_packet_html(clean, cp, clean_findings, spec_name)))):
            target = out / f"{file_stem(p.reviewer)}.{ext}"
            write_audit_file(target, text)
            written.append(target)
    target = out / "plan.json"
    write_audit_file(target, dump_json(plan.to_json()))
    written.append(target)
    return written


def redacted_plan(plan: Plan, findings: Findings) -> tuple[Plan, Findings]:
    """The plan (its packets among it) and the findings with every string from the series
    redacted: the one pass packets are made from (before they are escaped, after which a secret
    is no longer recognised). Ids and digests stay: they are hex."""
    def finding(f: Finding) -> Finding:
        return Finding.from_json(redact_tree(f.to_json()))

    series = replace(plan.series,
                     commits=tuple(SeriesCommit.from_json(redact_tree(c.to_json()))
                                   for c in plan.series.commits),
                     hunks=tuple(_redacted_hunk(h) for h in plan.series.hunks),
                     warnings=tuple(redact(w) for w in plan.series.warnings))
    clean = Findings(by_hunk={k: tuple(finding(f) for f in v) for k, v in findings.by_hunk.items()},
                     source=redact(findings.source),
                     unchecked={k: redact(v) for k, v in findings.unchecked.items()})
    return (replace(plan, series=series, packets=tuple(_redacted_packet(q) for q in plan.packets)),
            clean)


def _redacted_hunk(h: Hunk) -> Hunk:
    return replace(h, path=redact(h.path), header=redact(h.header), text=redact(h.text))


def _redacted_packet(p: Packet) -> Packet:
    return replace(p, reviewer=redact(p.reviewer), hunks=tuple(_redacted_hunk(h) for h in p.hunks))


def _groups(plan: Plan, p: Packet) -> list[tuple[str, str, tuple[str, ...], list[Hunk]]]:
    out = []
    for area in plan.series.areas:
        hunks = [h for h in p.hunks if plan.series.area(h) == area.name]
        if hunks:
            out.append((area.name, area.title, area.checklist, hunks))
    return out


def _body(h: Hunk) -> str:
    """The hunk's lines (redacted), each line escaped on its own (newlines stay line breaks; a
    CR, an ESC or a line separator inside a line is shown as an escape)."""
    if not h.text:
        return ""
    return "\n".join(terminal_safe(line) for line in h.text.split("\n"))


def _header(h: Hunk) -> str:
    """The ``@@`` line: its function context is text from the file, so escaped like the body."""
    return terminal_safe(h.header)


def _repeat(h: Hunk) -> str:
    """A note on a hunk whose exact content came earlier in the series: it is reviewed again."""
    return (f" · occurrence {h.occurrence} of the same lines and context (an id of its own)"
            if h.occurrence > 1 else "")


def _commit_line(plan: Plan, h: Hunk) -> str:
    return plan.series.subject(h.commit)


# ---------------------------------------------------------------- Markdown


def fence(text: str) -> str:
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=0)
    return "`" * max(3, longest + 1)


def packet_markdown(plan: Plan, p: Packet, findings: Findings, spec_name: str) -> Redacted:
    """The packet in Markdown, made from :func:`redacted_plan`."""
    clean, clean_findings = redacted_plan(plan, findings)
    return from_redacted(_packet_markdown(clean, _redacted_packet(p), clean_findings, spec_name))


def _packet_markdown(plan: Plan, p: Packet, findings: Findings, spec_name: str) -> str:
    out = [f"# Review packet: {md(p.reviewer)}", ""]
    out.append(f"{len(p.hunks)} hunk(s), {p.lines} changed line(s) of {plan.lines_total} in the "
               f"series; areas: {', '.join(md(a) for a in p.areas) or 'none'}.")
    out.append("")
    out.append(f"Findings: {md(findings.source)}")
    out.append("")
    for w in plan.series.warnings:
        out.append(f"- ⚠️ {md(w)}")
    if plan.series.warnings:
        out.append("")
    out.append("Sign off one hunk, or the whole packet once every hunk is read:")
    out.append("")
    out.append("```")
    out.append(f"auditor review sign {spec_name} --reviewer {p.reviewer} --hunk ID "
               "[--verdict ok|concern|blocker] [--note TEXT]")
    out.append(f"auditor review sign {spec_name} --reviewer {p.reviewer} --all-of {p.reviewer}")
    out.append("```")
    out.append("")
    for name, title, checklist, hunks in _groups(plan, p):
        out.append(f"## {md(title)} ({md(name)}): {len(hunks)} hunk(s), "
                   f"{sum(h.lines for h in hunks)} line(s)")
        out.append("")
        if checklist:
            out.append("What to look for:")
            out.append("")
            out += [f"- [ ] {md(c)}" for c in checklist]
            out.append("")
        for h in hunks:
            out.append(f"### Hunk {md_code(h.id)} — {md(h.path)}"
                       + (f" lines {h.start}–{h.end}" if h.start else f" ({md(h.kind.value)})"))
            out.append("")
            out.append(f"Commit {md_code(h.commit[:12])} {md(_commit_line(plan, h))} · "
                       f"+{h.added} −{h.removed}{_repeat(h)}")
            out.append("")
            if h.path in findings.unchecked:
                out.append(f"- ⚠️ **not checked by the scan**: {md(findings.unchecked[h.path])}")
            for f in findings.by_hunk.get(h.digest, ()):
                out.append(f"- **{md(f.action.value)}** {md(f.rule)} ({md(f.severity.value)}) "
                           f"line {f.line}: {md(f.message)}")
            if findings.by_hunk.get(h.digest) or h.path in findings.unchecked:
                out.append("")
            body = _body(h)
            header = _header(h)
            marker = fence(header + "\n" + body)
            out += [f"{marker}diff", header, body, marker, ""]
    return "\n".join(out).rstrip("\n") + "\n"


# ---------------------------------------------------------------- HTML

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:70em;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ccc;margin-top:2em}
h3{font-size:1em;margin-top:1.5em}code,pre{font-family:ui-monospace,monospace;font-size:.9em}
pre{background:#f6f8fa;padding:.6em;overflow-x:auto;border:1px solid #ddd}
.add{background:#e6ffec;display:block}.del{background:#ffebe9;display:block}
.ctx{display:block}.hdr{color:#666;display:block}.muted{color:#666}
.f-block{color:#a00;font-weight:bold}.f-review{color:#a60}.f-info{color:#555}
.warn{background:#fff8e1;border:1px solid #e0c060;padding:.4em}
"""


def _h(value: object) -> str:
    return html_safe(str(value))


def packet_html(plan: Plan, p: Packet, findings: Findings, spec_name: str) -> Redacted:
    """The packet as a self-contained HTML page, made from :func:`redacted_plan`."""
    clean, clean_findings = redacted_plan(plan, findings)
    return from_redacted(_packet_html(clean, _redacted_packet(p), clean_findings, spec_name))


def _packet_html(plan: Plan, p: Packet, findings: Findings, spec_name: str) -> str:
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
           'style-src \'unsafe-inline\'">',
           f"<title>Review packet: {_h(p.reviewer)}</title>",
           f"<style>{_STYLE}</style></head><body>",
           f"<h1>Review packet: {_h(p.reviewer)}</h1>",
           f"<p>{len(p.hunks)} hunk(s), {p.lines} changed line(s) of {plan.lines_total} in the "
           f"series; areas: {_h(', '.join(p.areas) or 'none')}.</p>",
           f"<p>Findings: {_h(findings.source)}</p>"]
    for w in plan.series.warnings:
        out.append(f'<p class="warn">{_h(w)}</p>')
    out.append(f"<pre>auditor review sign {_h(spec_name)} --reviewer {_h(p.reviewer)} --hunk ID "
               f"[--verdict ok|concern|blocker] [--note TEXT]\nauditor review sign "
               f"{_h(spec_name)} --reviewer {_h(p.reviewer)} --all-of {_h(p.reviewer)}</pre>")
    for name, title, checklist, hunks in _groups(plan, p):
        out.append(f"<h2>{_h(title)} ({_h(name)}): {len(hunks)} hunk(s), "
                   f"{sum(h.lines for h in hunks)} line(s)</h2>")
        if checklist:
            out.append("<p>What to look for:</p><ul>"
                       + "".join(f"<li>☐ {_h(c)}</li>" for c in checklist) + "</ul>")
        for h in hunks:
            where = f" lines {h.start}–{h.end}" if h.start else f" ({_h(h.kind.value)})"
            out.append(f'<h3 id="h-{_h(h.id)}">Hunk <code>{_h(h.id)}</code> — '
                       f"<code>{_h(h.path)}</code>{where}</h3>")
            out.append(f'<p class="muted">Commit <code>{_h(h.commit[:12])}</code> '
                       f"{_h(_commit_line(plan, h))} · +{h.added} −{h.removed}"
                       f"{_h(_repeat(h))}</p>")
            mine = findings.by_hunk.get(h.digest, ())
            if h.path in findings.unchecked:
                out.append(f'<p class="warn">not checked by the scan: '
                           f"{_h(findings.unchecked[h.path])}</p>")
            if mine:
                out.append("<ul>" + "".join(
                    f'<li class="f-{_h(f.action.value)}">{_h(f.action.value)} {_h(f.rule)} '
                    f"({_h(f.severity.value)}) line {f.line}: {_h(f.message)}</li>"
                    for f in mine) + "</ul>")
            out.append("<pre>" + _diff_html(h) + "</pre>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def _diff_html(h: Hunk) -> str:
    rows = [f'<span class="hdr">{html.escape(_header(h))}</span>']
    for line in _body(h).split("\n"):
        cls = {"+": "add", "-": "del", "\\": "hdr"}.get(line[:1], "ctx")
        rows.append(f'<span class="{cls}">{html_safe(line) or " "}</span>')
    return "".join(rows)
