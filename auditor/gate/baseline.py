"""Loading the approved baseline (an earlier ``audit.json``) and checking that it fits this spec.

Every problem is a :class:`~auditor.errors.BaselineError` (exit 2) with a one-line message that
names the file: missing or unreadable, not JSON, another schema, malformed, or made for another
engine profile or package.
"""

from __future__ import annotations

from pathlib import Path

from auditor.errors import BaselineError
from auditor.model import AuditResult
from auditor.report.view import as_map, as_text
from auditor.results.audit_file import load_audit
from auditor.spec import Spec


def load_baseline(path: Path) -> AuditResult:
    """The approved audit.json, read by the one loader (checked against its schema)."""
    return load_audit(path, label="baseline", error=BaselineError,
                      hint="pass the audit.json of the approved audit")


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
