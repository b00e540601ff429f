"""Interleaved A/B runs of the real-vLLM case: this checkout against an earlier commit.

    python benchmarks/ab.py --case /work/bench/real-bench --base 34a5413 [--runs 3] [--full]

A shared host drifts (whole-tree bandit took 96 s and 111 s within one hour here), so one run of
each side an hour apart says little. Each round runs the yardstick (whole-tree bandit), then the
cold audit of each side in turn (empty caches), and with ``--full`` the full-scope scan of each
side; the order of the two sides alternates from round to round. The medians, each side's ratio
to the median yardstick, and the finding counts (which must be equal unless a change meant to
alter them) are printed. The base commit runs from a ``git worktree`` of this repository, with
this checkout's interpreter and packages.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import Sample, measure  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def findings(report: Path) -> int | None:
    """How many findings a JSON report holds (None: no report)."""
    try:
        doc = json.loads(report.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return len(doc.get("findings") or [])


def side(name: str, src: Path, case: Path, work: Path,
         full: bool) -> dict[str, tuple[Sample, int | None]]:
    """One cold audit (and full-scope scan) of one side, from empty caches."""
    env = {"PYTHONPATH": str(src), "PYTHONDONTWRITEBYTECODE": "1"}
    python = str(BIN / "python")
    out: dict[str, tuple[Sample, int | None]] = {}
    cache = work / f"cache-{name}"
    shutil.rmtree(cache, ignore_errors=True)
    report = work / f"out-{name}"
    shutil.rmtree(report, ignore_errors=True)
    s = measure([python, "-m", "auditor", "audit", str(case / "audit-v1.toml"), "--out",
                 str(report)], env={**env, "AUDITOR_CACHE": str(cache)}, cwd=work)
    out["audit cold"] = (s, findings(report / "audit.json"))
    if full:
        shutil.rmtree(cache, ignore_errors=True)
        js = work / f"full-{name}.json"
        s = measure(["sh", "-c", f'exec "$0" "$@" > "{js}"', python, "-m", "auditor", "scan",
                     str(case / "audit-v1.toml"), "--scope", "full", "--json"],
                    env={**env, "AUDITOR_CACHE": str(cache)}, cwd=work)
        out["scan --scope full"] = (s, findings(js))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", type=Path, required=True)
    ap.add_argument("--base", required=True, help="the commit to compare with")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--full", action="store_true", help="also the full-scope scan")
    args = ap.parse_args()
    case = args.case.resolve()
    work = Path(tempfile.mkdtemp(prefix="auditor-ab-"))
    base = work / "base"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-f", "--detach", str(base),
                    args.base], check=True, capture_output=True)
    try:
        for src in (base, ROOT):
            subprocess.run([str(BIN / "python"), "-m", "compileall", "-q", str(src / "auditor")],
                           check=True)
        samples: dict[tuple[str, str], list[tuple[Sample, int | None]]] = {}
        yardstick: list[float] = []
        for n in range(args.runs):
            y = measure([str(BIN / "bandit"), "-r", "-q", "-f", "json", "-o",
                         str(work / "bandit.json"), str(case / "tree")])
            yardstick.append(y.wall)
            print(f"round {n + 1}: yardstick {y.wall:.1f} s (load {y.load:.2f})", flush=True)
            order = [("base", base), ("head", ROOT)]
            for name, src in order if n % 2 == 0 else order[::-1]:
                for what, got in side(name, src, case, work, args.full).items():
                    samples.setdefault((name, what), []).append(got)
                    print(f"  {name} {what}: {got[0].wall:.1f} s wall, {got[0].cpu:.1f} s CPU, "
                          f"{got[1]} findings", flush=True)
        ys = statistics.median(yardstick)
        print(f"\nmedians over {args.runs} rounds; yardstick {ys:.1f} s")
        for (name, what), got in sorted(samples.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            wall = statistics.median(s.wall for s, _ in got)
            cpu = statistics.median(s.cpu for s, _ in got)
            counts = sorted({c for _, c in got}, key=lambda c: -1 if c is None else c)
            print(f"{what:18} {name}: {wall:6.1f} s wall ({wall / ys:.2f}x), {cpu:6.1f} s CPU "
                  f"({cpu / ys:.2f}x), findings {counts}")
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)],
                       capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
