"""Loading the approved baseline (an earlier ``audit.json``) and checking that it fits this spec.

Every problem is a :class:`~auditor.errors.BaselineError` (exit 2) with a one-line message that
names the file: missing or unreadable, not JSON, another schema, malformed, or made for another
engine profile or package.
"""

from __future__ import annotations

import json
from pathlib import Path

from auditor.errors import BaselineError
from auditor.inputs import MAX_AUDIT_JSON_BYTES, bounded_depth, read_input_text
from auditor.model import AUDIT_SCHEMA, AuditResult
from auditor.report.view import as_map, as_text
from auditor.spec import Spec


def load_baseline(path: Path) -> AuditResult:
    try:
        text = read_input_text(path, "baseline", MAX_AUDIT_JSON_BYTES)
    except FileNotFoundError:
        raise BaselineError(f"baseline {path}: file not found",
                            hint="pass the audit.json of the approved audit") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"baseline {path}: cannot be read: {exc}") from None
    try:
        data = bounded_depth(json.loads(text), path, "baseline")
    except RecursionError:
        raise BaselineError(f"baseline {path}: nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise BaselineError(f"baseline {path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise BaselineError(f"baseline {path}: not an audit.json (a JSON object is expected)")
    if data.get("schema") != AUDIT_SCHEMA:
        raise BaselineError(f"baseline {path}: schema is {data.get('schema')!r}, "
                            f"expected {AUDIT_SCHEMA!r}")
    try:
        return AuditResult.from_json(data)
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        raise BaselineError(f"baseline {path}: malformed audit.json "
                            f"({type(exc).__name__}: {exc})") from None


def check_fits(baseline: AuditResult, spec: Spec, path: Path) -> None:
    """The baseline must be an audit of the same engine (profile and package)."""
    engine = as_map(baseline.inputs.get("engine"))
    if not engine:
        raise BaselineError(f"baseline {path}: has no inputs.engine, so it cannot be matched "
                            "with this spec")
    profile = as_text(engine.get("profile"))
    if profile != spec.profile.name:
        raise BaselineError(f"baseline {path}: made for engine profile {profile!r}, but this spec "
                            f"uses {spec.profile.name!r}")
    package = engine.get("package")
    if package is not None and as_text(package) != spec.profile.package:
        raise BaselineError(f"baseline {path}: made for package {as_text(package)!r}, but this "
                            f"spec's engine is {spec.profile.package!r}")
