"""The upgrade gate: an engine upgrade decided against the last approved audit.

Series commits are matched by patch-id (then subject) as ``git range-diff`` does; findings are
compared by fingerprint and only new ones count; dependencies and vulnerabilities new since the
baseline are listed. See :mod:`auditor.gate.match`, :mod:`auditor.gate.compare`,
:mod:`auditor.gate.result` and :func:`run_gate`.
"""

from __future__ import annotations

from auditor.gate.run import run_gate

__all__ = ["run_gate"]
