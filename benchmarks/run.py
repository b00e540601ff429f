"""The benchmark runner: one vLLM-scale case, every measurement the performance issue asks for.

    python benchmarks/run.py [--case benchmarks/work/case] [--runs 3] [--only auditor|baselines]

Measures, on the same generated case (benchmarks/generate.py): ``auditor audit`` cold (empty cache),
warm (same inputs again), the upgrade (``auditor gate`` of the rebased series against the warm cache
and the v1 audit), ``auditor verify`` alone, ``git add -A && git write-tree`` on the same bundle, and
plain whole-tree ``semgrep`` (same rules) and ``bandit``. Wall time and peak memory come from
``/usr/bin/time -v``; each figure is the median of ``--runs`` runs, and the machine's load average
(other work on a shared machine) is recorded with it. Every measurement is also kept in
``<case>/../samples.json``, so ``--only auditor`` re-measures the auditor after a change and reuses
the (slow, unchanged) whole-tree baselines; RESULTS.md says when each figure was taken.
Writes benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
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
    load: float = float("nan")  # 1-minute load average just before the run
    cpu: float = float("nan")  # user + system seconds of the command and its children
    note: str = ""  # the scan cache's hits and misses, from the audit directory written
    when: str = ""  # UTC time of the (last) run
    best: float = float("nan")  # the fastest of the runs (wall)


def load_average() -> float:
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return float("nan")


def scan_cache_note(out: Path) -> str:
    """Hits and misses of the scan cache in an audit directory (a warm run should miss nothing;
    rule files edited between runs change every key)."""
    try:
        cache = json.loads((out / "audit.json").read_text())["stages"]["scan"]["cache"]
        return f"scan cache {cache['hits']} hits / {cache['misses']} misses"
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def measure(cmd: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None,
            prepare=None, out: Path | None = None) -> Sample:  # noqa: ANN001
    if prepare is not None:
        prepare()
    full_env = {**os.environ, "SEMGREP_ENABLE_VERSION_CHECK": "0", **(env or {})}
    load = load_average()
    start = time.perf_counter()
    res = subprocess.run(["/usr/bin/time", "-v", *cmd], env=full_env, cwd=cwd,
                         capture_output=True, text=True)
    wall = time.perf_counter() - start
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", res.stderr)
    rss = int(m.group(1)) / 1024 if m else float("nan")
    cpu = sum(float(x) for x in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)",
                                           res.stderr)) or float("nan")
    if res.returncode not in (0, 1):  # 1 is "policy says no", expected for the hostile series
        sys.stderr.write(res.stderr[-2000:])
    return Sample(wall=wall, rss_mib=rss, code=res.returncode, load=load, cpu=cpu,
                  note=scan_cache_note(out) if out is not None else "",
                  when=time.strftime("%H:%M", time.gmtime()))


def compiled(*roots: Path | None) -> None:
    """Byte-compile each copy of the package (``None``: this checkout) before it is timed, as
    ``pip install`` does: with ``PYTHONDONTWRITEBYTECODE=1`` (set on this machine) every run
    would otherwise compile auditor's ~300 modules from source, ~0.4 s of each audit."""
    for root in roots:
        pkg = (root if root is not None else Path(__file__).resolve().parent.parent) / "auditor"
        subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0", str(pkg)],
                       check=True, stdout=subprocess.DEVNULL)


def median(samples: list[Sample]) -> Sample:
    return Sample(wall=statistics.median(s.wall for s in samples),
                  rss_mib=statistics.median(s.rss_mib for s in samples), code=samples[-1].code,
                  load=statistics.median(s.load for s in samples),
                  cpu=statistics.median(s.cpu for s in samples),
                  note="; ".join(dict.fromkeys(s.note for s in samples if s.note)),
                  when=samples[-1].when, best=min(s.wall for s in samples))


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
    ap.add_argument("--only", choices=("auditor", "baselines"),
                    help="measure only these; the others are taken from samples.json")
    ap.add_argument("--no-baselines", action="store_true", help="same as --only auditor")
    ap.add_argument("--rewrite", action="store_true",
                    help="measure nothing: rewrite RESULTS.md from samples.json")
    args = ap.parse_args()
    only = "auditor" if args.no_baselines else args.only
    case: Path = args.case.resolve()
    store = case.parent / "samples.json"
    if args.rewrite:
        results = {k: Sample(**v) for k, v in json.loads(store.read_text()).items()}
        write_results(case, results, args.runs)
        return
    if not (case / "audit-v1.toml").is_file():
        subprocess.run([sys.executable, str(HERE / "generate.py"), str(case)], check=True)
    work = case.parent / ("runs" if only is None else f"runs-{only}")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    results: dict[str, Sample] = {}
    if only is not None and store.is_file():
        results = {k: Sample(**v) for k, v in json.loads(store.read_text()).items()}
    auditor = str(BIN / "auditor")
    if only != "baselines":
        measure_auditor(case, work, auditor, args.runs, results, store)
    if only != "auditor":
        measure_baselines(case, work, args.runs, results, store)
    write_results(case, results, args.runs)


def record(name: str, samples: list[Sample], results: dict[str, Sample], store: Path) -> None:
    results[name] = s = median(samples)
    store.write_text(json.dumps({k: v.__dict__ for k, v in results.items()}, indent=1))
    print(f"{name:<32} {s.wall:8.2f} s  {s.cpu:8.2f} s CPU  {s.rss_mib:6.0f} MiB  "
          f"(exit {s.code}, load {s.load:.1f})", flush=True)


def measure_auditor(case: Path, work: Path, auditor: str, runs: int,
                    results: dict[str, Sample], store: Path) -> None:
    def run(name: str, cmd: list[str], **kw: object) -> None:
        record(name, [measure(cmd, **kw) for _ in range(runs)], results, store)  # type: ignore[arg-type]

    cold_cache = work / "cache-cold"
    warm_cache = work / "cache-warm"

    def fresh_cold() -> None:
        shutil.rmtree(cold_cache, ignore_errors=True)

    run("audit cold (empty cache)",
        [auditor, "audit", str(case / "audit-v1.toml"), "--out", str(work / "out-cold")],
        env={"AUDITOR_CACHE": str(cold_cache)}, prepare=fresh_cold, out=work / "out-cold")
    # the warm cache: one cold run, then measure re-runs
    subprocess.run([auditor, "audit", str(case / "audit-v1.toml"), "--out", str(work / "out-v1")],
                   env={**os.environ, "AUDITOR_CACHE": str(warm_cache)}, capture_output=True)
    snapshot = work / "cache-warm-v1"
    shutil.copytree(warm_cache, snapshot, dirs_exist_ok=True) if warm_cache.exists() else None
    run("audit warm (same inputs)",
        [auditor, "audit", str(case / "audit-v1.toml"), "--out", str(work / "out-warm")],
        env={"AUDITOR_CACHE": str(warm_cache)}, out=work / "out-warm")

    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        # the same warm run with the scratch folder (the unpacked bundle) on tmpfs: shows what
        # creating ~2,600 files on the disk's file system costs
        run("audit warm, TMPDIR=/dev/shm",
            [auditor, "audit", str(case / "audit-v1.toml"), "--out", str(work / "out-warm-shm")],
            env={"AUDITOR_CACHE": str(warm_cache), "TMPDIR": str(shm)}, out=work / "out-warm-shm")

    def reset_warm() -> None:
        shutil.rmtree(warm_cache, ignore_errors=True)
        if snapshot.exists():
            shutil.copytree(snapshot, warm_cache)

    run("upgrade gate (rebased series)",
        [auditor, "gate", str(case / "audit-v2.toml"), "--baseline",
         str(work / "out-v1" / "audit.json"), "--out", str(work / "out-gate")],
        env={"AUDITOR_CACHE": str(warm_cache)}, prepare=reset_warm, out=work / "out-gate")
    run("verify alone", [auditor, "verify", str(case / "audit-v1.toml")])
    if shm.is_dir() and os.access(shm, os.W_OK):
        run("verify alone, TMPDIR=/dev/shm", [auditor, "verify", str(case / "audit-v1.toml")],
            env={"TMPDIR": str(shm)})

    # verify's yardstick, measured right after it (same machine load): git hashing the same
    # tree, already unpacked, into a fresh repository
    wt = work / "writetree"

    def copy_tree() -> None:
        shutil.rmtree(wt, ignore_errors=True)
        shutil.copytree(case / "tree", wt, symlinks=True)
        subprocess.run(["git", "init", "-q", str(wt)], check=True)

    run("git add -A && git write-tree",
        ["sh", "-c", "git add -A && git write-tree >/dev/null"], cwd=wt, prepare=copy_tree)


def measure_baselines(case: Path, work: Path, runs: int, results: dict[str, Sample],
                      store: Path) -> None:
    def run(name: str, cmd: list[str], **kw: object) -> None:
        record(name, [measure(cmd, **kw) for _ in range(runs)], results, store)  # type: ignore[arg-type]

    tree = case / "tree"
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


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return f"load average {load_average()}"


def verdict(value: float, target: float, unit: str) -> str:
    if value <= target:
        return "**met**"
    return (f"**missed** by {value - target:.2f}{unit} "
            f"({(value / target - 1) * 100:.0f} % over)")


def write_results(case: Path, results: dict[str, Sample], runs: int) -> None:
    lines = [
        "# Benchmark results", "",
        f"Machine: {machine()}.  ",
        f"Case: `benchmarks/generate.py` defaults ({case.name}); median of {runs} runs; wall time and "
        "peak RSS from `/usr/bin/time -v`.  ",
        f"Command: `{Path(sys.executable).name} benchmarks/run.py --runs {runs}` "
        f"({time.strftime('%Y-%m-%d', time.gmtime())}).  ",
        f"Machine load when written: `{uptime()}` — the machine is shared with other engineers "
        "running test suites, so every figure was taken under load; the load column is the "
        "median 1-minute load average just before each run (2 cores: a load of 4 means "
        "roughly half a core per process).", "",
        "| measurement | wall (s), median | fastest (s) | CPU user+sys (s) | peak RSS (MiB) | exit "
        "| load | taken (UTC) | note |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, s in results.items():
        lines.append(f"| {name} | {s.wall:.2f} | {s.best:.2f} | {s.cpu:.2f} | {s.rss_mib:.0f} "
                     f"| {s.code} | {s.load:.1f} | {s.when} | {s.note} |")
    cold = results.get("audit cold (empty cache)")
    sem = results.get("semgrep whole tree (same rules)")
    ban = results.get("bandit whole tree")
    ver = results.get("verify alone")
    wt = results.get("git add -A && git write-tree")
    lines += ["", "## Targets", ""]
    if cold and sem and ban:
        ratio = cold.wall / (sem.wall + ban.wall)
        lines.append(f"- cold diff-scoped audit {cold.wall:.2f} s / (whole-tree semgrep "
                     f"{sem.wall:.2f} s + bandit {ban.wall:.2f} s) = {ratio:.2f} (target <= 0.20): "
                     + verdict(ratio, 0.2, ""))
    if "audit warm (same inputs)" in results:
        w = results["audit warm (same inputs)"].wall
        lines.append(f"- warm re-run {w:.2f} s (target < 3 s): {verdict(w, 3, ' s')}")
        shm = results.get("audit warm, TMPDIR=/dev/shm")
        if shm is not None:
            lines.append(f"  - the same with the scratch folder on tmpfs (`TMPDIR=/dev/shm`): "
                         f"{shm.wall:.2f} s ({verdict(shm.wall, 3, ' s')})")
    if "upgrade gate (rebased series)" in results:
        u = results["upgrade gate (rebased series)"].wall
        lines.append(f"- upgrade check {u:.2f} s (target < 10 s): {verdict(u, 10, ' s')}")
    peaks = [s.rss_mib for n, s in results.items() if n.startswith(("audit", "upgrade", "verify"))]
    if peaks:
        peak = max(peaks)
        lines.append(f"- peak memory of auditor runs {peak:.0f} MiB (target < 1024 MiB): "
                     + verdict(peak, 1024, " MiB"))
    if ver and wt:
        r = ver.wall / wt.wall
        lines.append(f"- verify {ver.wall:.2f} s / (git add -A && git write-tree {wt.wall:.2f} s) "
                     f"= {r:.2f} (target <= 2): {verdict(r, 2, '')}")
        if ver.best == ver.best and wt.best == wt.best:  # not NaN
            rb = ver.best / wt.best
            lines.append(f"  - fastest runs: verify {ver.best:.2f} s / write-tree {wt.best:.2f} s "
                         f"= {rb:.2f}: {verdict(rb, 2, '')}")
    out = HERE / "RESULTS.md"
    notes = ""
    if out.is_file():  # a hand-written "## Notes" section (analysis) survives re-runs
        old = out.read_text()
        if "\n## Notes" in old:
            notes = old[old.index("\n## Notes"):]
    out.write_text("\n".join(lines) + "\n" + notes)
    print(f"wrote {HERE / 'RESULTS.md'}")


if __name__ == "__main__":
    main()
