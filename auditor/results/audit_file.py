"""audit.json as a file: its JSON Schema (``docs/audit.schema.json``) and the one loader.

``auditor report`` and ``auditor gate`` read a saved audit.json only through :func:`load_audit`:
the file is read with the input caps, parsed, checked against the schema of its ``schema`` field,
and only then turned into typed results. Every problem is one line naming the file (and, for a
schema failure, the first failing path): exit 2. ``auditor audit`` checks what it is about to
write with :func:`check_before_writing`: a failure there is a bug in auditor (exit 3).

The check is :mod:`auditor.results.jsoncheck` (the schema's keywords, without the CPU that
importing jsonschema costs); :func:`warm_jsonschema` is for the stages that use jsonschema.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from auditor import jsonschemas
from auditor.errors import AuditError, InputError, InternalError
from auditor.inputs import MAX_AUDIT_JSON_BYTES, bounded_depth, read_input_text
from auditor.model import AUDIT_SCHEMA, AuditResult
from auditor.results.jsoncheck import AmbiguousJson, Checker, strict_loads

#: the schema of audit.json (``docs/audit.schema.json``, shipped inside the package)
SCHEMA_FILE = Path(__file__).with_name("audit.schema.json")
#: how the schema is named in messages
SCHEMA_NAME = "docs/audit.schema.json"
_MESSAGE_MAX = 240


@cache
def warm_jsonschema() -> None:
    """Import jsonschema (:func:`auditor.jsonschemas.load`: ~0.4 s of CPU) in a background
    thread, once per process; whoever needs it meanwhile waits on that function's lock for the
    rest of the import, so nothing is ever used half-loaded."""

    threading.Thread(target=jsonschemas.load, name="auditor-warm-jsonschema", daemon=True).start()


@cache
def audit_schema() -> dict[str, Any]:
    data = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


@cache
def _checker() -> Checker:
    return Checker(audit_schema())


def schema_problem(data: Any) -> str | None:
    """None when ``data`` fits the audit.json schema; else ``PATH: what is wrong`` for the first
    place (depth first, in document order) that does not."""
    problem = _checker().first_problem(data)
    if problem is None:
        return None
    message = " ".join(problem.message.split())
    if len(message) > _MESSAGE_MAX:
        message = message[:_MESSAGE_MAX] + "…"
    return f"{problem.where}: {message}"


def check_before_writing(data: Mapping[str, Any]) -> None:
    """The audit.json about to be written must fit its schema; if not, auditor has a bug."""
    problem = schema_problem(data)
    if problem is not None:
        raise InternalError(f"the audit.json auditor made does not fit {SCHEMA_NAME} at "
                            f"{problem}: this is a bug in auditor; nothing was written",
                            hint="report it with the audit's spec; run with --verbose")


def load_audit(path: Path, *, label: str = "", error: type[AuditError] = InputError,
               hint: str | None = None) -> AuditResult:
    """A saved audit.json, checked and typed. ``label`` prefixes the file in messages
    (``baseline``); ``error`` is the error class raised (exit 2 either way)."""
    shown = f"{label} {path}" if label else str(path)
    try:
        text = read_input_text(path, label or "audit.json", MAX_AUDIT_JSON_BYTES)
    except FileNotFoundError:
        raise error(f"{shown}: file not found", hint=hint) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"{shown}: cannot be read: {exc}") from None
    try:
        data = bounded_depth(strict_loads(text), path, label or "audit.json")
    except RecursionError:
        raise error(f"{shown}: nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise error(f"{shown}: not JSON ({exc.msg} at line {exc.lineno})") from None
    except AmbiguousJson as exc:
        raise error(f"{shown}: malformed audit.json: {exc}") from None
    if not isinstance(data, dict):
        raise error(f"{shown}: not an audit.json (a JSON object is expected)")
    if data.get("schema") != AUDIT_SCHEMA:
        raise error(f"{shown}: schema is {data.get('schema')!r}, expected {AUDIT_SCHEMA!r}")
    problem = schema_problem(data)
    if problem is not None:
        raise error(f"{shown}: malformed audit.json: does not fit {SCHEMA_NAME} at {problem}")
    try:
        return AuditResult.from_json(data)
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        raise error(f"{shown}: malformed audit.json ({type(exc).__name__}: {exc})") from None
