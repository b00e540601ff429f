"""The benchmark runner: one vLLM-scale case, every measurement the performance issue asks for.

    python benchmarks/run.py [--case benchmarks/work/case] [--runs 3] [--no-baselines]

Measures, on the same generated case (benchmarks/generate.py): ``auditor audit`` cold (empty cache),
warm (same inputs again), the upgrade (``auditor gate`` of the rebased series against the warm cache
and the v1 audit), ``auditor verify`` alone, ``git add -A && git write-tree`` on the same bundle, and
plain whole-tree ``semgrep`` (same rules) and ``bandit``. Wall time and peak memory come from
``/usr/bin/time -v``; each figure is the median of ``--runs`` runs. Writes benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BIN = Path(sys.executable).parent


@dataclass
class Sample:
    wall: float
    rss_mib: float
    code: int


def measure(cmd: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None,
            prepare=None) -> Sample:  # noqa: ANN001
    if prepare is not None:
        prepare()
    full_env = {**os.environ, "SEMGREP_ENABLE_VERSION_CHECK": "0", **(env or {})}
    start = time.perf_counter()
    res = subprocess.run(["/usr/bin/time", "-v", *cmd], env=full_env, cwd=cwd,
                         capture_output=True, text=True)
    wall = time.perf_counter() - start
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", res.stderr)
    rss = int(m.group(1)) / 1024 if m else float("nan")
    return Sample(wall, rss, res.returncode)


def median(samples: list[Sample]) -> Sample:
    return Sample(statistics.median(s.wall for s in samples),
                  statistics.median(s.rss_mib for s in samples), samples[-1].code)


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))
    except (OSError, AttributeError):
        mem = 0
    return (f"{platform.system()} {platform.release()}, {os.cpu_count()} cores ({cpu}), "
            f"{mem / 1024 / 1024:.0f} GiB RAM, Python {platform.python_version()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", type=Path, default=HERE / "work" / "case")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-baselines", action="store_true", help="skip whole-tree semgrep/bandit")
    args = ap.parse_args()
    case: Path = args.case.resolve()
    if not (case / "audit-v1.toml").is_file():
        subprocess.run([sys.executable, str(HERE / "generate.py"), str(case)], check=True)
    work = case.parent / "runs"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    auditor = str(BIN / "auditor")
    results: dict[str, Sample] = {}
    codes: dict[str, int] = {}

    def run(name: str, cmd: list[str], **kw: object) -> None:
        samples = [measure(cmd, **kw) for _ in range(args.runs)]  # type: ignore[arg-type]
        results[name] = median(samples)
        codes[name] = samples[-1].code
        print(f"{name:<28} {results[name].wall:8.2f} s  {results[name].rss_mib:8.0f} MiB "
              f"(exit {codes[name]})", flush=True)

    cold_cache = work / "cache-cold"
    warm_cache = work / "cache-warm"

    def fresh_cold() -> None:
        shutil.rmtree(cold_cache, ignore_errors=True)

    run("audit cold (empty cache)",
        [auditor, "audit", str(case / "audit-v1.toml"), "--out", str(work / "out-cold")],
        env={"AUDITOR_CACHE": str(cold_cache)}, prepare=fresh_cold)
    # the warm cache: one cold run, then measure re-runs
    subprocess.run([auditor, "audit", str(case / "audit-v1.toml"), "--out", str(work / "out-v1")],
                   env={**os.environ, "AUDITOR_CACHE": str(warm_cache)}, capture_output=True)
    snapshot = work / "cache-warm-v1"
    shutil.copytree(warm_cache, snapshot, dirs_exist_ok=True) if warm_cache.exists() else None
    run("audit warm (same inputs)",
        [auditor, "audit", str(case / "audit-v1.toml"), "--out", str(work / "out-warm")],
        env={"AUDITOR_CACHE": str(warm_cache)})

    def reset_warm() -> None:
        shutil.rmtree(warm_cache, ignore_errors=True)
        if snapshot.exists():
            shutil.copytree(snapshot, warm_cache)

    run("upgrade gate (rebased series)",
        [auditor, "gate", str(case / "audit-v2.toml"), "--baseline",
         str(work / "out-v1" / "audit.json"), "--out", str(work / "out-gate")],
        env={"AUDITOR_CACHE": str(warm_cache)}, prepare=reset_warm)
    run("verify alone", [auditor, "verify", str(case / "audit-v1.toml")])

    tree = case / "tree"
    wt = work / "writetree"

    def copy_tree() -> None:
        shutil.rmtree(wt, ignore_errors=True)
        shutil.copytree(tree, wt, symlinks=True)
        subprocess.run(["git", "init", "-q", str(wt)], check=True)

    run("git add -A && git write-tree",
        ["sh", "-c", "git add -A && git write-tree >/dev/null"], cwd=wt, prepare=copy_tree)
    if not args.no_baselines:
        home = work / "semgrep-home"
        home.mkdir(exist_ok=True)
        run("semgrep whole tree (same rules)",
            [str(BIN / "semgrep"), "scan", "--config", str(ROOT / "policies/semgrep/rules"),
             "--metrics=off", "--json", "-o", str(work / "semgrep.json"), "--no-git-ignore",
             "--x-ignore-semgrepignore-files", str(tree)],
            env={"HOME": str(home)})
        run("bandit whole tree",
            [str(BIN / "bandit"), "-r", "-q", "-f", "json", "-o", str(work / "bandit.json"),
             str(tree)])
    write_results(case, results, args.runs)


def write_results(case: Path, results: dict[str, Sample], runs: int) -> None:
    lines = [
        "# Benchmark results", "",
        f"Machine: {machine()}.  ",
        f"Case: `benchmarks/generate.py` defaults ({case.name}); median of {runs} runs; wall time and "
        "peak RSS from `/usr/bin/time -v`.  ",
        f"Command: `{Path(sys.executable).name} benchmarks/run.py --runs {runs}` "
        f"({time.strftime('%Y-%m-%d', time.gmtime())}).", "",
        "| measurement | wall (s) | peak RSS (MiB) | exit |", "|---|---:|---:|---:|",
    ]
    for name, s in results.items():
        lines.append(f"| {name} | {s.wall:.2f} | {s.rss_mib:.0f} | {s.code} |")
    cold = results.get("audit cold (empty cache)")
    sem = results.get("semgrep whole tree (same rules)")
    ban = results.get("bandit whole tree")
    ver = results.get("verify alone")
    wt = results.get("git add -A && git write-tree")
    lines += ["", "## Targets", ""]
    if cold and sem and ban:
        ratio = cold.wall / (sem.wall + ban.wall)
        lines.append(f"- cold diff-scoped audit / (whole-tree semgrep + bandit) = {ratio:.2f} "
                     f"(target <= 0.20): {'met' if ratio <= 0.2 else 'missed'}")
    if "audit warm (same inputs)" in results:
        w = results["audit warm (same inputs)"].wall
        lines.append(f"- warm re-run {w:.2f} s (target < 3 s): {'met' if w < 3 else 'missed'}")
    if "upgrade gate (rebased series)" in results:
        u = results["upgrade gate (rebased series)"].wall
        lines.append(f"- upgrade check {u:.2f} s (target < 10 s): {'met' if u < 10 else 'missed'}")
    peak = max(s.rss_mib for n, s in results.items() if n.startswith(("audit", "upgrade", "verify")))
    lines.append(f"- peak memory of auditor runs {peak:.0f} MiB (target < 1024 MiB): "
                 f"{'met' if peak < 1024 else 'missed'}")
    if ver and wt:
        r = ver.wall / wt.wall
        lines.append(f"- verify / (git add -A && git write-tree) = {r:.2f} (target <= 2): "
                     f"{'met' if r <= 2 else 'missed'}")
    (HERE / "RESULTS.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {HERE / 'RESULTS.md'}")


if __name__ == "__main__":
    main()
