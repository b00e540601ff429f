"""``auditor waive``: waiver stanzas for findings of a saved audit, so nobody types fingerprints.

The stanzas are in the format :func:`auditor.policy.load_waivers` reads (``[[waiver]]`` with rule,
path, fingerprint, reason, owner, expires). A finding is named by its fingerprint as audit.json,
report.md, report.html and the SARIF ``partialFingerprints`` show it, or by a unique prefix of at
least :data:`MIN_PREFIX` characters. A finding merged from several rules on one line is waived by
its one stanza: the waiver of the shown finding covers the rules merged into it
(:mod:`auditor.scan.merge`); the stanza's comment names them.

Refused (exit 2): an empty reason or owner, an expiry date in the past, a fingerprint that names no
finding (or more than one, as a prefix), and the audit's own waiver findings (renew or remove the
waiver instead). The text written is checked by reading it back as a waivers file.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from auditor.errors import InputError
from auditor.model import AuditResult, Finding
from auditor.policy import EXPIRED_RULE, UNUSED_RULE
from auditor.redaction import cut, redacted_text

MIN_PREFIX = 8
_GLOB = re.compile(r"([*?\[])")
_COMMENT_MAX = 160


@dataclass(frozen=True)
class WaiverRequest:
    fingerprints: tuple[str, ...]
    reason: str
    owner: str
    expires: dt.date


def parse_expires(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text.strip())
    except ValueError:
        raise InputError(f"--expires {text!r}: expected a date YYYY-MM-DD") from None


def check_request(req: WaiverRequest, today: dt.date) -> None:
    if not req.reason.strip():
        raise InputError("--reason: empty; say why the finding is accepted")
    if not req.owner.strip():
        raise InputError("--owner: empty; name who answers for the waiver")
    if req.expires < today:
        raise InputError(f"--expires {req.expires.isoformat()}: the date is in the past "
                         f"(today is {today.isoformat()})")
    if not req.fingerprints:
        raise InputError("--finding: give at least one fingerprint")


def find_findings(audit: AuditResult, fingerprints: Iterable[str]) -> list[Finding]:
    """The findings the fingerprints name, one per distinct (rule, path, fingerprint), in the
    order asked; an unknown or ambiguous fingerprint is an InputError."""
    every = audit.findings
    out: dict[tuple[str, str, str], Finding] = {}
    for asked in fingerprints:
        fp = asked.strip().lower()
        exact = [f for f in every if f.fingerprint == fp]
        hits = exact or ([f for f in every if f.fingerprint.startswith(fp)]
                         if len(fp) >= MIN_PREFIX else [])
        if not hits:
            raise InputError(f"--finding {asked!r}: no finding of the audit has this fingerprint"
                             + (f" (a prefix needs at least {MIN_PREFIX} characters)"
                                if len(fp) < MIN_PREFIX else ""))
        if len({f.fingerprint for f in hits}) > 1:
            raise InputError(f"--finding {asked!r}: the prefix names {len(hits)} findings; "
                             "give more of the fingerprint")
        for f in hits:
            if f.rule in (EXPIRED_RULE, UNUSED_RULE):
                raise InputError(f"--finding {asked!r}: {f.rule} is about a waiver itself; "
                                 "renew or remove that waiver in the waivers file")
            out.setdefault((f.rule, f.path, f.fingerprint), f)
    return list(out.values())


def glob_literal(path: str) -> str:
    """``path`` as an fnmatch glob that matches only itself."""
    return _GLOB.sub(r"[\1]", path)


def _toml_string(text: str) -> str:
    # JSON's escapes (\" \\ \n \t \uXXXX ...) are all TOML basic-string escapes
    return json.dumps(text, ensure_ascii=False)


def _comment(text: str) -> str:
    one = cut(" ".join(text.split()), _COMMENT_MAX - 1, "…")  # redacted, then cut
    return "".join(c if c.isprintable() else "?" for c in one)


def stanza(f: Finding, req: WaiverRequest) -> str:
    where = f"{f.path}:{f.line}" if f.line >= 1 else f.path
    lines = [f"# {_comment(f'{f.rule} at {where}: {f.message}')}"]
    if f.also:
        lines.append(f"# also covers the rules merged into this finding: "
                     f"{_comment(', '.join(f.also))}")
    lines += [
        "[[waiver]]",
        f"rule = {_toml_string(f.rule)}",
        f"path = {_toml_string(glob_literal(f.path))}",
        f"fingerprint = {_toml_string(f.fingerprint)}",
        f"reason = {_toml_string(req.reason.strip())}",
        f"owner = {_toml_string(req.owner.strip())}",
        f"expires = {req.expires.isoformat()}",
    ]
    return "\n".join(lines) + "\n"


def waiver_text(audit: AuditResult, req: WaiverRequest, today: dt.date | None = None) -> str:
    """The stanzas for the findings ``req`` names (checked, see the module's text)."""
    today = today or dt.date.today()
    check_request(req, today)
    return "\n".join(stanza(f, req) for f in find_findings(audit, req.fingerprints))


def appended(existing: str, text: str) -> str:
    """``text`` after an existing waivers file's content (one blank line between)."""
    if not existing.strip():
        return text
    return existing.rstrip("\n") + "\n\n" + text


def check_waivers_text(text: str, label: str, findings: Sequence[Finding] = ()) -> None:
    """Read ``text`` back as a waivers file (a bug here would write a file the audit refuses)."""
    import tempfile

    from auditor.errors import SpecError
    from auditor.policy import load_waivers

    with tempfile.TemporaryDirectory(prefix="auditor-waive-") as tmp:
        path = Path(tmp) / "waivers.toml"
        path.write_text(text, encoding="utf-8")
        try:
            waivers = load_waivers(path)
        except SpecError as exc:
            raise InputError(f"{label}: the waivers would not load: {exc.message}") from None
    missed = [f for f in findings if not any(w.matches(f) for w in waivers)]
    if missed:
        raise InputError(f"{label}: the stanza for {missed[0].rule} would not match its finding")


def waive(audit_json: Path, req: WaiverRequest, output: Path | None,
          today: dt.date | None = None) -> str:
    """The stanzas for ``req`` from a saved audit; with ``output``, appended to that waivers file
    (created when missing) after checking that the whole file still loads. Returns the stanzas."""
    from auditor.inputs import read_input_text
    from auditor.outputs import write_output_text
    from auditor.report import load_audit

    audit = load_audit(audit_json)
    text = waiver_text(audit, req, today)
    found = find_findings(audit, req.fingerprints)
    check_waivers_text(text, "auditor waive", found)
    if output is not None and str(output) != "-":
        existing = read_input_text(output, "-o") if output.exists() else ""
        whole = appended(existing, text)
        check_waivers_text(whole, f"-o {output}", found)
        write_output_text(output, redacted_text(whole), "-o")
    return text
