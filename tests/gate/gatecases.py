"""Hand-built baseline/new audits for the gate's pure tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support import check_golden as _check_golden
from support import mask_golden

from auditor.model import (
    Action,
    AuditResult,
    Category,
    Finding,
    Severity,
    StageResult,
    StageStatus,
    compute_verdict,
)


def sha(tag: str) -> str:
    return tag.encode().hex().ljust(40, "0")[:40]


def finding(fp: str, commit: str | None, action: Action = Action.REVIEW, **kw: Any) -> Finding:
    base: dict[str, Any] = dict(rule=f"rule.{fp}", category=Category.PROCESS_EXEC,
                                severity=Severity.MEDIUM, action=action, path=f"engine/{fp}.py",
                                line=3, commit=commit, message=f"finding {fp}", scanner="semgrep",
                                fingerprint=fp.ljust(32, "0"), snippet="subprocess.run(x)\n")
    base.update(kw)
    return Finding(**base)


def audit(ref: str, commits: list[tuple[str, str, str | None]], findings: list[Finding], *,
          deps: dict[str, Any] | None = None, extra: dict[str, StageResult] | None = None,
          verify_status: StageStatus = StageStatus.OK, profile: str = "engine") -> AuditResult:
    """commits: (sha, subject, patch_id) in series order."""
    details = {"ok": verify_status is StageStatus.OK,
               "upstream": {"ref": ref, "commit": sha(ref), "tree": sha(ref + "t")},
               "series": {"listed": [c[0] for c in commits],
                          "patch_ids": {c[0]: c[2] for c in commits}},
               "commits": [{"sha": c[0], "subject": c[1], "patch_id": c[2]} for c in commits]}
    stages = {"verify": StageResult("verify", verify_status, details,
                                    reasons=("bundle differs",)
                                    if verify_status is StageStatus.FAILED else ()),
              "scan": StageResult("scan", StageStatus.OK, {"scope": "diff"},
                                  findings=tuple(findings))}
    if deps is not None:
        stages["deps"] = StageResult("deps", StageStatus.OK, deps)
    stages.update(extra or {})
    verdict, reasons = compute_verdict(stages.values())
    return AuditResult(verdict, reasons, stages, tool={"name": "auditor", "version": "0.0.0"},
                       inputs={"engine": {"profile": profile, "package": "engine",
                                          "version": ref.lstrip("v")},
                               "upstream": {"ref": ref}})


# ---------------------------------------------------------------- golden files

GOLDEN = Path(__file__).parent / "golden"


def check_golden(name: str, text: str, *, shas: bool = False) -> None:
    _check_golden(GOLDEN, name, mask_golden(text, shas=shas))
