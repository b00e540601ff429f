"""A merge-based fork of real vLLM code, audited cold, against whole-tree bandit (issue 28).

    python benchmarks/merge_fork_bench.py [--case benchmarks/work/real-bench]
                                          [--work benchmarks/work/merge-fork] [--runs 3]

Reads the case ``benchmarks/real_bench_case.py`` builds (two official vLLM wheels' Python trees:
tag v1, the upstream point release v2, and the 61-commit ``series`` branch on v1 with its 12
hostile commits). In a repository sharing its objects it makes the shape real forks publish: a
branch from v1 that takes the series' commits one by one (cherry-picks, fork author), merges the
upstream tag v2 halfway ("Merge tag 'v2' into fork"), and merges a side branch of 36 small commits
of its own ("Merge branch 'tuning' into fork") — about 100 commits, 2 merges. The spec pins v2
with ``[patches] model = "merge"`` and ``commits = "range"``; the bundle is ``git archive`` of the
head, as a hosting site serves it.

Measured in one run, each ``--runs`` times (median): ``auditor audit`` with an empty cache, then
again on its cache (warm), and ``bandit -r`` over the unpacked bundle (the yardstick). With
``--before DIR`` (a copy of the package from before a change, ``cp -rL auditor DIR/``, run
through ``PYTHONPATH``) the same runs of that side too, the sides alternating; ``--after DIR``
runs the after side from a copy (the scan cache's key covers every scan module: a checkout
others edit between two runs turns a warm run into a cold one). Prints a Markdown section for
RESULTS.md with the ratios, and the audit's verdict and proof statement. Exit 1 when the proof
does not hold.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from real_bench_case import FORK, git  # noqa: E402
from run import compiled  # noqa: E402

BIN = Path(sys.executable).parent
SIDE_COMMITS = 36


def build(case: Path, work: Path) -> dict[str, object]:
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    repo = work / "repo"
    subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", str(case / "repo"),
                    str(repo)], check=True)
    git(repo, "fetch", "-q", "origin", "refs/tags/*:refs/tags/*")
    series = git(repo, "rev-list", "--reverse", "v1..origin/series").split()
    git(repo, "checkout", "-q", "-B", "fork", "v1")
    t = 1_764_000_000
    half = len(series) // 2
    for i, sha in enumerate(series):
        git(repo, "cherry-pick", "--allow-empty", "--keep-redundant-commits", sha, when=t,
            author=FORK)
        t += 60
        if i + 1 == half:
            git(repo, "merge", "--no-ff", "-q", "-m", "Merge tag 'v2' into fork", "v2", when=t,
                author=FORK)
            t += 60
    # a side branch of the fork's own small commits, merged back
    git(repo, "checkout", "-q", "-b", "tuning", "fork")
    files = sorted(p for p in git(repo, "ls-files", "vllm/model_executor/models").split()
                   if p.endswith(".py"))[:SIDE_COMMITS]
    for n, path in enumerate(files):
        target = repo / path
        target.write_text(target.read_text(encoding="utf-8")
                          + f"\n# sm86 tuning note {n}: block sizes checked on sm86\n",
                          encoding="utf-8")
        git(repo, "add", path)
        git(repo, "commit", "-q", "-m", f"tuning: note on {path.rsplit('/', 1)[-1]}", when=t,
            author=FORK)
        t += 60
    git(repo, "checkout", "-q", "fork")
    git(repo, "merge", "--no-ff", "-q", "-m", "Merge branch 'tuning' into fork", "tuning",
        when=t, author=FORK)
    bundle = work / "bundle.tar.gz"
    git(repo, "archive", "--format=tar.gz", "--prefix=vllm/", "-o", str(bundle), "fork")
    v2 = git(repo, "rev-parse", "v2^{commit}")
    (work / "audit.toml").write_text(
        '[engine]\nprofile = "vllm"\nversion = "0.32.0"\n\n'
        f'[upstream]\nrepo = "repo"\nref = "v2"\ncommit = "{v2}"\n\n'
        '[patches]\nref = "fork"\nmodel = "merge"\ncommits = "range"\n\n'
        '[bundle]\npath = "bundle.tar.gz"\nstrip_components = 1\n\n'
        '[scan]\nscope = "diff"\n\n[deps]\nvulns = "none"\n', encoding="utf-8")
    tree = work / "tree"
    tree.mkdir()
    with tarfile.open(bundle) as tar:
        tar.extractall(tree, filter="data")
    return shape_of(work)


def shape_of(work: Path) -> dict[str, object]:
    repo = work / "repo"
    commits = git(repo, "rev-list", "--count", "v2..fork")
    merges = git(repo, "rev-list", "--merges", "--count", "v2..fork")
    stat = git(repo, "diff", "--shortstat", "v2", "fork")
    return {"commits": int(commits), "merges": int(merges), "stat": stat}


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and its children): CPU time holds when the
    machine is shared, wall time does not."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, capture_output=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", type=Path, default=HERE / "work" / "real-bench")
    ap.add_argument("--work", type=Path, default=HERE / "work" / "merge-fork")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--reuse", action="store_true",
                    help="keep the fork WORK already holds (its shape is read again)")
    ap.add_argument("--build-only", action="store_true", help="make the fork, measure nothing")
    ap.add_argument("--before", type=Path, default=None,
                    help="a copy of the package before a change, measured beside the after side")
    ap.add_argument("--after", type=Path, default=None,
                    help="a copy of the package to run as the after side (default: the checkout)")
    args = ap.parse_args()
    if not (args.case / "repo").is_dir():
        raise SystemExit(f"{args.case}: no case; run benchmarks/real_bench_case.py first")
    work = args.work.resolve()
    shape = shape_of(work) if args.reuse and (work / "audit.toml").is_file() else \
        build(args.case.resolve(), work)
    if args.build_only:
        print(shape)
        return
    sides: list[tuple[str, Path | None]] = [("after", args.after)]
    if args.before is not None:
        sides.insert(0, ("before", args.before))
    compiled(*(copy for _, copy in sides))
    runs: dict[str, list[tuple[float, float]]] = {"bandit": []}
    load = os.getloadavg()[0]
    for n in range(args.runs):
        for side, copy in (sides if n % 2 == 0 else sides[::-1]):
            env = {**os.environ, "AUDITOR_CACHE": str(work / f"cache-{side}")}
            if copy is not None:
                env["PYTHONPATH"] = str(copy.resolve())
            shutil.rmtree(work / f"cache-{side}", ignore_errors=True)
            for kind in ("cold", "warm"):
                out = work / f"out-{side}"
                shutil.rmtree(out, ignore_errors=True)
                runs.setdefault(f"{side} {kind}", []).append(timed(
                    [sys.executable, "-m", "auditor", "audit", str(work / "audit.toml"),
                     "--out", str(out)], env=env))
        runs["bandit"].append(timed([str(BIN / "bandit"), "-r", "-q", "-f", "json", "-o",
                                     str(work / "bandit.json"), str(work / "tree")]))
    doc = json.loads((work / "out-after" / "audit.json").read_text(encoding="utf-8"))
    verify = doc["stages"]["verify"]
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
           for k, v in runs.items()}
    print(f"## Merge-based fork, audit vs whole-tree bandit ({time.strftime('%Y-%m-%d %H:%M')})\n")
    print(f"Case: `python benchmarks/merge_fork_bench.py --runs {args.runs}"
          f"{' --before DIR' if args.before else ''}{' --after DIR' if args.after else ''}`: "
          f"a fork of the real vLLM Python tree from v1 with {shape['commits']} commits in "
          f"v2..fork ({shape['merges']} merges), net diff {shape['stat']}. Load average at the "
          f"start: {load:.1f}.\n")
    print("| what | median wall s | median CPU s | wall / bandit | CPU / bandit | runs "
          "(wall/CPU) |\n|---|---:|---:|---:|---:|---|")
    for key, values in runs.items():
        name = "`bandit -r` whole tree" if key == "bandit" else f"`auditor audit` {key}"
        print(f"| {name} | {med[key][0]:.2f} | {med[key][1]:.2f} | "
              f"{med[key][0] / med['bandit'][0]:.3f} | {med[key][1] / med['bandit'][1]:.3f} | "
              f"{', '.join(f'{w:.1f}/{c:.1f}' for w, c in values)} |")
    print(f"\nTarget (issue 28): cold ≤ 0.10× of whole-tree bandit. Verdict "
          f"{doc['verdict']}; proof ok: {verify.get('ok')}; series listed "
          f"{len(verify['series']['listed'])} commit(s), model {verify['series']['model']}.")
    if not verify.get("ok"):
        print("proof did not hold:", verify.get("reasons"), file=sys.stderr)
        raise SystemExit(1)


if __name__ == "__main__":
    main()
