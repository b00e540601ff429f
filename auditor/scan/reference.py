"""The reference runner: the same scan with no shortcut, the plain twin every shortcut is checked
against (``auditor scan --reference``).

- semgrep: plain ``semgrep scan`` (the Python command line, not ``--experimental``) with the
  shipped rules folder as it is (YAML, no combined JSON, no ``paths: include`` written, no
  prefilter, no taint view) over whole files, in one process;
- bandit: over every Python file whole (no view, none left out), in one process;
- attribution: one ``git blame`` per file (never the one walk of the series), no diff-scope
  slices, no cache (neither the scan cache nor the slice cache is read or written).

What is not a shortcut stays: the staged copies under names the scanners recognise, the CUDA and
Python shims (:mod:`auditor.scan.cuda`, :mod:`auditor.scan.pyshim`: they decide what the text
means to the parser), the derived readings, the other scanners, coverage, policy and waivers.
Its plan is :func:`auditor.scan.plan.semgrep_plan` (languages and paths, as semgrep decides)
and every other scanner's whole-file plan. ``tests/scan/test_scan_reference_equivalence.py``
requires the same findings and not-checked reasons from both runners.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from auditor.scan.bandit import BanditScanner
from auditor.scan.engine import ScanConfig
from auditor.scan.interface import Scanner, ScannerRun, ScanTarget
from auditor.scan.plan import ScanPlan, semgrep_plan
from auditor.scan.semgrep import SemgrepScanner
from auditor.scan.staging import stage

# beyond this many bytes of target names, pass the staging root instead
_ARGV_BUDGET = 512 * 1024


class ReferenceSemgrep(SemgrepScanner):
    """Plain semgrep with the shipped rules over whole files (see the module docstring)."""

    def __init__(self, rules_dir: Path | None = None, *, timeout: int = 600,
                 rule_timeout: int = 30) -> None:
        super().__init__(rules_dir, timeout=timeout, jobs=1, rule_timeout=rule_timeout,
                         cli="pysemgrep", views=False, processes=1)

    def options_key(self) -> str:
        return hashlib.sha256(json.dumps([super().options_key(), "reference"]).encode()
                              ).hexdigest()

    def plan(self, files: Sequence[ScanTarget]) -> ScanPlan:
        return semgrep_plan(files, self.meta, self.name)

    def scan(self, files: Sequence[ScanTarget], workdir: Path) -> ScannerRun:
        if not files:
            return ScannerRun(findings={}, errors={})
        root = workdir / "semgrep"
        staged = stage(files, root / "t", self._transform)
        targets = sorted(staged)
        if sum(len(t) + 1 for t in targets) > _ARGV_BUDGET:
            targets = sorted({t.split("/", 1)[0] for t in staged})
        run = self._run_one(self.rules_dir, root, targets, staged, home=root / "home")
        return replace(run, plan=self.plan(files))


def reference_scanners(scanners: Sequence[Scanner]) -> list[Scanner]:
    """``scanners`` with semgrep and bandit replaced by their plain twins (the others have no
    shortcut: they read every target whole)."""
    out: list[Scanner] = []
    for s in scanners:
        if isinstance(s, SemgrepScanner) and not isinstance(s, ReferenceSemgrep):
            out.append(ReferenceSemgrep(s.rules_dir, timeout=s.timeout,
                                        rule_timeout=s.rule_timeout))
        elif isinstance(s, BanditScanner):
            out.append(BanditScanner(timeout=s.timeout, views=False, processes=1))
        else:
            out.append(s)
    return out


def reference_config(config: ScanConfig) -> ScanConfig:
    """``config`` without the engine's shortcuts: no cache, no slices, one blame per file, the
    staged copies in the work folder (not in RAM)."""
    return replace(config, cache_dir=None, slice_diff=False, blame_each=True, ram_staging=False)
