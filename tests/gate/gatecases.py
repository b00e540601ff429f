"""Hand-built baseline/new audits for the gate's pure tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support import check_golden as _check_golden
from support import mask_golden
from typed_results import commit_record, scan_data, verify_data

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
from auditor.results.deps import DepsData


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
          deps: DepsData | None = None, extra: dict[str, StageResult] | None = None,
          verify_status: StageStatus = StageStatus.OK, profile: str = "engine") -> AuditResult:
    """commits: (sha, subject, patch_id) in series order."""
    data = verify_data([commit_record(c[0], c[1], c[2]) for c in commits],
                       ok=verify_status is StageStatus.OK, ref=ref, upstream_commit=sha(ref),
                       upstream_tree=sha(ref + "t"))
    stages = {"verify": StageResult("verify", verify_status, data,
                                    reasons=("bundle differs",)
                                    if verify_status is StageStatus.FAILED else ()),
              "scan": StageResult("scan", StageStatus.OK, scan_data(),
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
