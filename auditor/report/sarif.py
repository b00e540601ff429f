"""findings.sarif: SARIF 2.1.0 for code-scanning services.

One run, tool ``auditor`` with one rule per finding rule (short description, help, category and
``security-severity`` properties); one result per finding with a level from its action, a relative
location (a finding without a line points at line 1 of its file, and one without a file at the spec),
``partialFingerprints`` and, for waived findings, an external suppression carrying the waiver's reason.
What could not be checked becomes a tool execution notification and ``executionSuccessful: false``.

Text is made inert for SARIF viewers: control bytes are escaped, secrets redacted, and ``[``/``]``
escaped as SARIF §3.11.6 asks so that no embedded link ``[text](target)`` is ever formed. ``<``, ``>``
and ``&`` are written as ``\\u003c``-style JSON escapes, so a viewer that pastes the file into HTML
cannot be tricked either.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from auditor.model import Action, AuditResult, Category, Finding, Severity, StageResult, StageStatus
from auditor.outputs import write_output_file
from auditor.redaction import Redacted, from_redacted
from auditor.report.interface import Formatter, RedactedAudit, redacted_stage
from auditor.report.view import (
    UnreviewedHunk,
    UnsignedArea,
    clean_finding,
    is_unsigned,
    unsigned_areas,
)
from auditor.rules_doc import HOMEPAGE
from auditor.textsafe import document_safe, dump_json

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
FINGERPRINT_KEY = "auditorFingerprint/v1"
#: where a finding that names no file points (policy findings about the spec itself)
NO_FILE_URI = "audit.toml"

LEVEL = {Action.BLOCK: "error", Action.REVIEW: "warning", Action.INFO: "note"}
#: GitHub code scanning reads properties.security-severity: >= 9 critical, >= 7 high, >= 4 medium
SECURITY_SEVERITY = {Severity.CRITICAL: "9.5", Severity.HIGH: "8.0", Severity.MEDIUM: "5.5",
                     Severity.LOW: "3.0", Severity.INFO: "0.0"}

CATEGORY_HELP: Mapping[Category, str] = {
    Category.NETWORK: "The patch opens outbound connections. An inference server should not talk to "
                      "hosts its operator did not configure.",
    Category.SECRET_ACCESS: "The patch reads API keys, tokens or credentials. Check where the value "
                            "goes: a file, a log or the network.",
    Category.PROMPT_LOGGING: "The patch logs, prints or writes request content (prompts, messages, "
                             "token ids).",
    Category.UNSAFE_DESERIALIZATION: "The patch deserialises data with pickle-like loaders that run "
                                     "code; dangerous on data from sockets or shared memory.",
    Category.TELEMETRY: "The patch adds or changes usage statistics, or weakens do-not-track.",
    Category.PROCESS_EXEC: "The patch runs processes, evaluates code or loads native code.",
    Category.OBFUSCATION: "The patch hides what it does: decoded data executed, names built from "
                          "strings, long encoded literals.",
    Category.BINARY_ARTIFACT: "The bundle carries a binary (ELF, wheel, pickle, weights) that was not "
                              "built from the audited source.",
    Category.CONTAINER_PRIVILEGE: "Containers run privileged, with extra capabilities, host "
                                  "namespaces or the Docker socket.",
    Category.API_EXPOSURE: "The engine's API is exposed without a key, or with the key visible on "
                           "the command line.",
    Category.FILESYSTEM: "Fixed names in shared temporary folders, world-writable modes, umask(0).",
    Category.DEPENDENCY: "A dependency was added or changed, is unpinned, or has a known "
                         "vulnerability.",
    Category.POLICY: "The audit's own policy: an expired waiver or a rule that could not apply.",
    Category.SERVICE: "The systemd unit for the engine is missing a hardening setting.",
    Category.PROVENANCE: "The bundle differs from upstream plus the listed commits, or carries "
                         "something a reviewer should see.",
}


def sarif_text(text: str) -> str:
    """Plain SARIF message text (of a redacted audit): no control bytes, no embedded links
    (§3.11.6)."""
    out = document_safe(text)
    return out.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def artifact_uri(path: str) -> str:
    """A relative URI reference for a bundle path (percent-encoded, never absolute)."""
    rel = path.replace("\\", "/").lstrip("/")
    while rel.startswith("./"):
        rel = rel[2:]
    return quote(rel, safe="/-._~") if rel else NO_FILE_URI


def _rule(f: Finding) -> dict[str, Any]:
    from auditor.rules_doc import help_uri, page_for, render_page

    doc = page_for(f.rule) or page_for(f.category.value)
    short = doc.title if doc is not None else CATEGORY_HELP.get(f.category, f.rule)
    full = (doc.what if doc is not None and not doc.family else "") or \
        CATEGORY_HELP.get(f.category, f.rule)
    help_text = f.help.strip() or (doc.check if doc is not None else "") or \
        CATEGORY_HELP.get(f.category, "")
    rule: dict[str, Any] = {
        "id": f.rule,
        "name": "".join(p.capitalize() for p in f.rule.replace("-", ".").replace("_", ".")
                        .split(".") if p) or f.rule,
        "shortDescription": {"text": sarif_text(short)},
        "fullDescription": {"text": sarif_text(full)},
        "help": {"text": sarif_text(help_text or f.rule)},
    }
    if doc is not None:  # the rule's page: its text here, its address in the repository
        rule["helpUri"] = help_uri(doc)
        rule["help"]["markdown"] = render_page(doc)
    return rule | {
        "defaultConfiguration": {"level": LEVEL[f.action]},
        "properties": {
            "category": f.category.value,
            "security-severity": SECURITY_SEVERITY[f.severity],
            "tags": ["security", f.category.value],
        },
    }


#: locations of one review.unsigned result (one per unreviewed hunk)
HUNK_LOCATIONS = 100


def _hunk_location(h: UnreviewedHunk) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": artifact_uri(h.path)}}
    if h.start >= 1:
        physical["region"] = {"startLine": h.start, "endLine": max(h.start, h.end)}
    return {"physicalLocation": physical,
            "message": {"text": sarif_text(f"hunk {h.id} of commit {h.commit[:12]}, "
                                           f"{h.lines} changed line(s), not signed off")}}


def _unsigned_result(f: Finding, rule_index: int, u: UnsignedArea) -> dict[str, Any]:
    """A review.unsigned finding as what it is: one location per unreviewed hunk."""
    result = _result(f, rule_index)
    more = len(u.hunks) - HUNK_LOCATIONS
    result["message"] = {"text": sarif_text(
        f"{u.words()} of {u.title} are not signed off ([review] required)"
        + (f"; the first {HUNK_LOCATIONS} are located here, every hunk is in report.md"
           if more > 0 else ""))}
    if u.hunks:
        result["locations"] = [_hunk_location(h) for h in u.hunks[:HUNK_LOCATIONS]]
    result["properties"]["hunks"] = len(u.hunks)
    return result


def _result(f: Finding, rule_index: int) -> dict[str, Any]:
    region: dict[str, Any] = {"startLine": f.line if f.line >= 1 else 1}
    if f.line >= 1 and f.end_line and f.end_line >= f.line:
        region["endLine"] = f.end_line
    if f.snippet and f.line >= 1:
        region["snippet"] = {"text": document_safe(f.snippet)}
    message = f.message if f.line >= 1 else f"{f.message} (applies to the whole file)"
    if not f.path:
        message = f"{f.message} (not tied to a file of the bundle)"
    result: dict[str, Any] = {
        "ruleId": f.rule,
        "ruleIndex": rule_index,
        "level": LEVEL[f.action],
        "message": {"text": sarif_text(message)},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": artifact_uri(f.path)},
                                            "region": region}}],
        "partialFingerprints": {FINGERPRINT_KEY: f.fingerprint},
        "properties": {
            "category": f.category.value,
            "severity": f.severity.value,
            "action": f.action.value,
            "commit": f.commit,
            "inherited": f.inherited,
            "scanner": f.scanner,
        },
    }
    if f.also:  # rules merged into this finding: a waiver of its fingerprint covers them
        result["properties"]["also"] = list(f.also)
    if f.waived:
        result["suppressions"] = [{"kind": "external", "status": "accepted",
                                   "justification": sarif_text(f.waiver or "waived")}]
    return result


def sarif_document(findings: Iterable[Finding], *, tool_version: str = "",
                   not_checked: Sequence[str] = (),
                   unsigned: Sequence[UnsignedArea] = ()) -> dict[str, Any]:
    """The SARIF log for these findings; ``not_checked`` lines become notifications;
    ``unsigned``: the review.unsigned findings' hunks (:func:`~auditor.report.view.unsigned_areas`)."""
    areas = {u.fingerprint: u for u in unsigned}
    cleaned = [clean_finding(f) for f in findings]
    rules: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    results = []
    for f in cleaned:
        if f.rule not in index:
            index[f.rule] = len(rules)
            rules.append(_rule(f))
        area = areas.get(f.fingerprint) if is_unsigned(f) else None
        results.append(_result(f, index[f.rule]) if area is None
                       else _unsigned_result(f, index[f.rule], area))
    driver: dict[str, Any] = {"name": "auditor", "informationUri": HOMEPAGE, "rules": rules}
    if tool_version:
        driver["version"] = tool_version
    invocation: dict[str, Any] = {"executionSuccessful": not not_checked}
    if not_checked:
        invocation["toolExecutionNotifications"] = [
            {"level": "error", "message": {"text": sarif_text(f"not checked: {x}")}}
            for x in not_checked]
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": driver},
            "invocations": [invocation],
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }


def dumps(doc: Mapping[str, Any]) -> Redacted:
    text = dump_json(doc).rstrip("\n")
    # Valid JSON with the same values; inert if some viewer pastes it into HTML (an escaping of
    # redacted JSON: still redacted)
    return from_redacted(
        text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") + "\n")


def _stage_not_checked(stages: Iterable[StageResult]) -> list[str]:
    out = []
    for st in stages:
        if st.status is StageStatus.INCOMPLETE:
            out += [f"{st.name}: {x}" for x in (st.not_checked or st.reasons
                                                 or ("the stage did not finish",))]
        else:
            out += [f"{st.name}: {x}" for x in st.not_checked]
    return out


def audit_sarif(audit: AuditResult) -> dict[str, Any]:
    return sarif_document(audit.findings, tool_version=str(audit.tool.get("version", "")),
                          not_checked=_stage_not_checked(audit.stages.values()),
                          unsigned=unsigned_areas(audit))


def write_stage_sarif(result: StageResult, path: Path) -> None:
    """``auditor scan --sarif FILE``: one stage's findings; ``-`` writes to stdout."""
    from auditor import __version__

    result = redacted_stage(result)  # the one pass, as a report's redacted(audit)
    text = dumps(sarif_document(result.findings, tool_version=__version__,
                                not_checked=_stage_not_checked([result])))
    if str(path) == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        write_output_file(path, text, "--sarif")


class SarifFormatter(Formatter):
    filename = "findings.sarif"

    def document(self, audit: RedactedAudit) -> str:
        return dumps(audit_sarif(audit))
