"""The diff-scope scan of a case twice, modified Python files sliced and whole (issue 16).

    python benchmarks/slicing_compare.py CASE/audit-v1.toml [--order sliced,whole] [--json OUT]

Runs the verify stage once, then the scan stage's engine in diff scope with no cache, once with
slicing (``auditor.scan.diffslice``) and once without, and prints the CPU seconds (this process and
its children: semgrep, bandit, git) and wall seconds of each, and whether the findings (path,
lines, rule, fingerprint, commit, message), the files not checked and the scan's notes (besides
the slicing note) are identical. Exit 1 when they are not.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

from auditor.model import Scope
from auditor.pipeline import run_single
from auditor.policy import load_policy, load_waivers
from auditor.results.scan import ScanData
from auditor.scan.engine import ScanConfig, run_scan
from auditor.scan.stage import default_scanners, package_indexes
from auditor.spec import load_spec
from auditor.stage import Options


def cpu() -> tuple[float, float]:
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime, c.ru_utime + c.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("spec", type=Path)
    ap.add_argument("--order", default="sliced,whole")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    spec = load_spec(args.spec)
    assert spec.scan is not None, "the spec has no [scan] section"
    _, ctx, base = run_single(spec, Options(jobs=2), "verify")
    ws = ctx.workspace
    assert ws is not None
    report: dict[str, object] = {}
    findings: dict[str, list[tuple[object, ...]]] = {}
    for mode in args.order.split(","):
        config = ScanConfig(scope=Scope.DIFF, policy=load_policy(spec.scan.policy),
                            waivers=load_waivers(spec.scan.waivers), cache_dir=None, jobs=2,
                            package_indexes=package_indexes(spec), slice_diff=mode == "sliced")
        work = Path(tempfile.mkdtemp(prefix="slicing-compare-"))
        (s0, c0), w0 = cpu(), time.time()
        res = run_scan(ws, default_scanners(spec, jobs=2), config, work)
        (s1, c1), w1 = cpu(), time.time()
        shutil.rmtree(work, ignore_errors=True)
        findings[mode] = sorted((f.path, f.line, f.end_line, f.rule, f.fingerprint, f.commit,
                                 f.message) for f in res.findings)
        findings[mode] += [("not checked", n) for n in res.not_checked]
        findings[mode] += [("note", n) for n in res.data_as(ScanData).notes
                           if "auditor.scan.diffslice" not in n]
        report[mode] = {"cpu_self": round(s1 - s0, 2), "cpu_children": round(c1 - c0, 2),
                        "cpu": round(s1 - s0 + c1 - c0, 2), "wall": round(w1 - w0, 1),
                        "findings": len(res.findings), "not_checked": list(res.not_checked),
                        "notes": list(res.data_as(ScanData).notes)}
        print(mode, json.dumps(report[mode]), flush=True)
    shutil.rmtree(base, ignore_errors=True)
    modes = list(findings)
    same = all(findings[m] == findings[modes[0]] for m in modes)
    report["identical"] = same
    print("identical findings, not-checked files and notes:", same)
    if not same:
        a, b = (set(findings[m]) for m in modes[:2])
        print("only", modes[0], sorted(a - b), "\nonly", modes[1], sorted(b - a))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
