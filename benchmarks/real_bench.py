"""The benchmark on real vLLM code: every figure of issue 16 as a ratio to whole-tree bandit.

    python benchmarks/real_bench.py [--case benchmarks/work/real-bench] [--runs 1]
                                    [--only auditor|baselines|rules|rules-whole|quick|rounds]
                                    [--full] [--rewrite]

The case is built by benchmarks/real_bench_case.py (two official vLLM wheels from the package
index: the older release's Python tree as upstream, the real changes to the newer one split into
49 commits plus 12 hostile ones). Measured with ``/usr/bin/time -v`` (wall, user+sys CPU, peak
RSS) and the 1-minute load average just before each run:

- ``auditor audit`` cold (empty cache), warm (the same again), the upgrade gate (the rebased
  series of v2 against the v1 audit, on the cache v1 left), ``auditor verify`` alone and
  ``auditor scan --scope full`` of the whole tree (empty cache);
- the yardstick, whole-tree ``bandit -r`` (all its tests, as a user would run it), and plain
  whole-tree ``semgrep`` with the shipped rules (slow: ``--only baselines``, kept in samples.json);
- ``semgrep --time --json`` with the shipped rules over the files the series changes: matching
  time per rule (``--only rules``), staged and gated as the scan does it; ``--only rules-whole``
  does the same over every Python file of the tree (slow); with ``--runs N`` each rule's time is
  the median of N runs (one rule's time moves by up to 2x between runs on a shared host);
- ``--only quick``: the yardstick and the auditor's runs without the full-scope scan, so every
  ratio of a diff-scoped run is to a bandit measured minutes before it;
- ``--only rounds --runs N [--full]``: N interleaved rounds, each the yardstick and then every
  auditor run once (the full-scope scan too with ``--full``); each ratio's median over the rounds,
  every ratio to its own round's yardstick (kept in ``<case>/../real-rounds.json``).

Every figure is kept in ``<case>/../real-samples.json``; ``--only auditor`` re-measures the
auditor and reuses the rest. Writes the "Real vLLM code" section of benchmarks/RESULTS.md (the
rest of the file, the generated-case figures and their notes, stays as it is).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import Sample, machine, measure, median, uptime  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BIN = Path(sys.executable).parent
BEGIN = "<!-- real-bench:begin -->"
END = "<!-- real-bench:end -->"
RULE_SHARE_MAX = 0.10

TARGETS = {  # measurement -> ratio to whole-tree bandit it must not exceed
    "audit cold (empty cache)": 0.15,
    "audit cold, 5 taint rules gated (empty cache)": 0.15,
    "audit warm (same inputs)": 0.03,
    "upgrade gate (v2 vs v1 audit)": 0.10,
    "scan --scope full (empty cache)": 1.0,
}
YARDSTICK = "bandit whole tree (yardstick)"


def record(name: str, samples: list[Sample], results: dict[str, Sample], store: Path) -> None:
    results[name] = s = median(samples)
    # merge with what is on disk now: another real_bench run may have recorded meanwhile
    on_disk = json.loads(store.read_text()) if store.is_file() else {}
    on_disk.update({k: v.__dict__ for k, v in results.items()})
    store.write_text(json.dumps(on_disk, indent=1))
    print(f"{name:<34} {s.wall:8.2f} s  {s.cpu:8.2f} s CPU  {s.rss_mib:6.0f} MiB  "
          f"(exit {s.code}, load {s.load:.1f})", flush=True)


def measure_auditor(case: Path, work: Path, runs: int, results: dict[str, Sample],
                    store: Path, *, full: bool = True) -> None:
    auditor = str(BIN / "auditor")

    def run(name: str, cmd: list[str], **kw: object) -> None:
        record(name, [measure(cmd, **kw) for _ in range(runs)], results, store)  # type: ignore[arg-type]

    cold = work / "cache-cold"
    warm = work / "cache-warm"

    def fresh_cold() -> None:
        shutil.rmtree(cold, ignore_errors=True)

    run("audit cold (empty cache)",
        [auditor, "audit", str(case / "audit-v1.toml"), "--out", str(work / "out-cold")],
        env={"AUDITOR_CACHE": str(cold)}, prepare=fresh_cold, out=work / "out-cold")
    # the warm cache: the cold run's, copied (each warm run starts from it)
    shutil.rmtree(warm, ignore_errors=True)
    shutil.copytree(cold, warm)
    snapshot = work / "cache-warm-v1"
    shutil.rmtree(snapshot, ignore_errors=True)
    shutil.copytree(cold, snapshot)
    run("audit warm (same inputs)",
        [auditor, "audit", str(case / "audit-v1.toml"), "--out", str(work / "out-warm")],
        env={"AUDITOR_CACHE": str(warm)}, out=work / "out-warm")

    def reset_warm() -> None:
        shutil.rmtree(warm, ignore_errors=True)
        shutil.copytree(snapshot, warm)

    run("upgrade gate (v2 vs v1 audit)",
        [auditor, "gate", str(case / "audit-v2.toml"), "--baseline",
         str(work / "out-cold" / "audit.json"), "--out", str(work / "out-gate")],
        env={"AUDITOR_CACHE": str(warm)}, prepare=reset_warm, out=work / "out-gate")
    run("verify alone (empty cache)", [auditor, "verify", str(case / "audit-v1.toml")],
        env={"AUDITOR_CACHE": str(cold)}, prepare=fresh_cold)
    if not full:
        return
    full_cache = work / "cache-full"
    run("scan --scope full (empty cache)",
        [auditor, "scan", str(case / "audit-v1.toml"), "--scope", "full", "--json"],
        env={"AUDITOR_CACHE": str(full_cache)},
        prepare=lambda: shutil.rmtree(full_cache, ignore_errors=True))


def measure_yardstick(case: Path, work: Path, results: dict[str, Sample], store: Path) -> None:
    record(YARDSTICK, [measure([str(BIN / "bandit"), "-r", "-q", "-f", "json", "-o",
                                str(work / "bandit.json"), str(case / "tree")])], results, store)


def measure_rounds(case: Path, work: Path, rounds: int, store_rounds: Path, *,
                   full: bool) -> None:
    """Interleaved rounds: each round measures the yardstick, then the auditor's runs once each,
    so every run's ratio is to a bandit measured minutes before it on the same host; the table
    gives each ratio's median over the rounds (this host's speed moves by half within an hour)."""
    taken: list[dict[str, dict]] = []
    for k in range(max(1, rounds)):
        print(f"round {k + 1} of {rounds}", flush=True)
        results: dict[str, Sample] = {}
        scratch = work / "round.json"
        measure_yardstick(case, work, results, scratch)
        measure_auditor(case, work, 1, results, scratch, full=full)
        taken.append({name: s.__dict__ for name, s in results.items()})
        store_rounds.write_text(json.dumps({"rounds": taken, "full": full}, indent=1))


def rounds_table(doc: dict) -> list[str]:
    rounds = [{k: Sample(**v) for k, v in r.items()} for r in doc["rounds"]]
    names = [n for n in rounds[0] if n != YARDSTICK]
    lines = ["", f"### Interleaved rounds ({len(rounds)})", "",
             "Command: `python benchmarks/real_bench.py --only rounds --runs "
             f"{len(rounds)}{' --full' if doc.get('full') else ''}`. Each round: the yardstick, "
             "then each auditor run once; a run's ratio is to its own round's yardstick.", "",
             "| round | taken (UTC) | yardstick wall (s) | yardstick CPU (s) | load |",
             "|---:|---:|---:|---:|---:|"]
    for k, r in enumerate(rounds, start=1):
        y = r[YARDSTICK]
        lines.append(f"| {k} | {y.when} | {y.wall:.1f} | {y.cpu:.1f} | {y.load:.1f} |")
    lines += ["", "| measurement | wall (s) per round | wall / bandit per round | median wall / "
                  "bandit | median CPU / bandit | peak RSS (MiB) | target |",
              "|---|---|---|---:|---:|---:|---|"]
    for name in names:
        got = [(r[name], r[YARDSTICK]) for r in rounds if name in r]
        walls = [s.wall / y.wall for s, y in got]
        cpus = [s.cpu / y.cpu for s, y in got]
        tgt = TARGETS.get(name)
        mw, mc = statistics.median(walls), statistics.median(cpus)
        verdict = "" if tgt is None else (f"≤ {tgt}: " + ("met" if mw <= tgt else "missed")
                                          + f" (wall); {'met' if mc <= tgt else 'missed'} (CPU)")
        lines.append(f"| {name} | {', '.join(f'{s.wall:.1f}' for s, _ in got)} "
                     f"| {', '.join(f'{w:.3f}' for w in walls)} | {mw:.3f} | {mc:.3f} "
                     f"| {max(s.rss_mib for s, _ in got):.0f} | {verdict} |")
    return lines


def measure_baselines(case: Path, work: Path, results: dict[str, Sample], store: Path) -> None:
    tree = case / "tree"
    home = work / "semgrep-home"
    home.mkdir(parents=True, exist_ok=True)
    measure_yardstick(case, work, results, store)
    record("semgrep whole tree (shipped rules)",
           [measure([str(BIN / "semgrep"), "scan", "--config", str(ROOT / "policies/semgrep/rules"),
                     "--metrics=off", "--json", "-o", str(work / "semgrep-whole.json"),
                     "--no-git-ignore", "--x-ignore-semgrepignore-files", "-j", "2", str(tree)],
                    env={"HOME": str(home)})], results, store)


def rule_times(doc: dict) -> tuple[dict[str, float], float, float]:
    """Matching seconds per rule (short id), total matching and parsing seconds."""
    t = doc["time"]
    ids = [r if isinstance(r, str) else r.get("id", "") for r in t["rules"]]
    from auditor.scan.rules import canonical_rule_id

    short = [canonical_rule_id(i) or i for i in ids]
    per: collections.Counter[str] = collections.Counter()
    parse = 0.0
    for target in t["targets"]:
        for i, m in enumerate(target.get("match_times") or []):
            if m:
                per[short[i]] += m
        parse += sum(x for x in target.get("parse_times") or [] if x)
    return dict(per), sum(per.values()), parse


def measure_rules(case: Path, work: Path, store_rules: Path, *, whole: bool = False,
                  runs: int = 1) -> None:
    """``semgrep --time`` with the rules and the staging the scan uses (files grouped by the
    prefilters that admit them, each gated rule limited to its folders), over the changed files
    or (``whole``) every Python file of the tree."""
    tree = case / "tree" / "vllm"
    if whole:
        changed = sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*.py"))
    else:
        changed = [p for p in (case / "changed.txt").read_text().split() if p]
    home = work / "semgrep-home"
    home.mkdir(parents=True, exist_ok=True)
    out = work / ("semgrep-whole-time.json" if whole else "semgrep-changed-time.json")
    from auditor.scan import rules as rules_mod
    from auditor.scan.gating import gated_rules, stage_by_gates
    from auditor.scan.interface import Origin, ScanTarget

    meta = rules_mod.load_rule_meta()
    targets = []
    for rel in changed:
        text = (tree / rel).read_text(encoding="utf-8", errors="replace")
        targets.append(ScanTarget(key=rel, path=rel, origin=Origin.BUNDLE, sha256="",
                                  family="python" if rel.endswith(".py") else None, text=text))
    root = work / ("staged-whole" if whole else "staged")
    shutil.rmtree(root, ignore_errors=True)
    staging = stage_by_gates(targets, root, lambda t: t.text, meta)
    staged = staging.files
    combined = rules_mod.combined_rules_json()
    config = work / "rules-gated.json"
    if combined is None:
        config = ROOT / "policies/semgrep/rules"
    else:
        config.write_text(json.dumps(gated_rules(json.loads(combined), meta, staging)),
                          encoding="utf-8")
    # one rule's matching time moves by up to 2x between two runs of the same code on a shared
    # host: with runs > 1, each rule's figure is its median, and so is the total
    taken: list[tuple[Sample, dict, dict[str, float], float, float]] = []
    for _ in range(max(1, runs)):
        sample = measure([str(BIN / "semgrep"), "scan", "--config", str(config),
                          "--metrics=off", "--json", "--time", "-o", str(out), "--no-git-ignore",
                          "--x-ignore-semgrepignore-files", "--disable-nosem",
                          "--max-target-bytes=0", "--timeout=0", "-j", "1", *sorted(staged)],
                         env={"HOME": str(home)}, cwd=root)
        doc = json.loads(out.read_text())
        taken.append((sample, doc, *rule_times(doc)))
    per = {rule: statistics.median(t[2].get(rule, 0.0) for t in taken)
           for rule in {r for t in taken for r in t[2]}}
    total = statistics.median(t[3] for t in taken)
    parse = statistics.median(t[4] for t in taken)
    sample, doc = sorted(taken, key=lambda t: t[0].wall)[len(taken) // 2][:2]
    data = {"sample": sample.__dict__, "files": len(changed), "matching": total, "parsing": parse,
            "per_rule": per, "results": len(doc.get("results") or []),
            "errors": len(doc.get("errors") or []), "runs": len(taken),
            "results_per_run": sorted({len(t[1].get("results") or []) for t in taken}),
            "fixpoint_timeouts": len(doc["time"].get("fixpoint_timeouts") or [])}
    store_rules.write_text(json.dumps(data, indent=1))
    top = max(per.values()) / total if total else 0
    print(f"semgrep --time over {len(changed)} files: {sample.wall:.1f} s wall, "
          f"{sample.cpu:.1f} s CPU, matching {total:.1f} s, top rule {top:.0%}", flush=True)


def rules_table(rules: dict, what: str) -> list[str]:
    """The per-rule table of one ``measure_rules`` run."""
    from auditor.scan.rules import canonical_rule_id

    per = {canonical_rule_id(k) or k: v for k, v in rules["per_rule"].items()}
    total = rules["matching"]
    s = rules["sample"]
    lines = ["", f"### `semgrep --time` per rule over {what}, the rules and the staging as the "
                 "scan gives them to semgrep (prefilters applied)", "",
             f"`semgrep scan --config rules-gated.json --time --json -j 1 --timeout=0 "
             f"...` (taken {s['when']} UTC, load {s['load']:.1f}"
             + (f"; medians of {rules['runs']} runs" if rules.get("runs", 1) > 1 else "")
             + f"): {s['wall']:.1f} s wall, "
             f"{s['cpu']:.1f} s CPU; matching {total:.1f} s, parsing {rules['parsing']:.1f} s;"
             f" {rules['results']} results, {rules['errors']} errors, "
             f"{rules['fixpoint_timeouts']} taint fixpoint timeouts.", "",
             "| rule | matching (s) | share |", "|---|---:|---:|"]
    for rule, v in sorted(per.items(), key=lambda kv: -kv[1])[:15]:
        flag = " **over 10 %**" if v / total > RULE_SHARE_MAX else ""
        lines.append(f"| {rule} | {v:.2f} | {v / total:.1%}{flag} |")
    lines.append(f"| (the other {max(0, len(per) - 15)} rules) | "
                 f"{sum(sorted(per.values())[:-15]):.2f} | |")
    return lines


def write_section(case: Path, results: dict[str, Sample], rules: dict | None,
                  rules_whole: dict | None, runs: int, rounds: dict | None = None) -> None:
    bandit = results.get(YARDSTICK)
    lines = [
        BEGIN, "## Real vLLM code (issue 16)", "",
        f"Machine: {machine()}.  ",
        "Case: `python benchmarks/real_bench_case.py` (vLLM 0.32.0 wheel's Python tree as "
        "upstream, 2,618 files, 1.03 M lines; series: the real 0.32.0→0.33.0 changes to 255 "
        "files in 49 commits by directory, plus 12 hostile commits; v2: an upstream point "
        "release and the series rebased, one hostile commit changed, one dropped, one new).  ",
        f"Command: `python benchmarks/real_bench.py --runs {runs}` "
        f"({time.strftime('%Y-%m-%d', time.gmtime())}); median of {runs} run(s); "
        "`/usr/bin/time -v`.  ",
        f"Load when written: `{uptime()}`. The machine is shared (2 cores, several other "
        "sessions' test suites): wall times swing with the load, so the ratios are given for "
        "CPU time (user+sys) as well; the load column is the 1-minute load average before "
        "each run.",
        *(rounds_table(rounds) if rounds else []), "",
        *(["### Single runs (`--only quick`, `--only auditor`; the taken column says when)", ""]
          if rounds else []),
        "| measurement | wall (s) | CPU (s) | peak RSS (MiB) | exit | load | taken (UTC) "
        "| wall / bandit | CPU / bandit | target | note |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for name, s in results.items():
        rw = f"{s.wall / bandit.wall:.3f}" if bandit else ""
        rc = f"{s.cpu / bandit.cpu:.3f}" if bandit else ""
        tgt = TARGETS.get(name)
        verdict = ""
        if tgt is not None and bandit:
            ok_cpu = s.cpu / bandit.cpu <= tgt
            ok_wall = s.wall / bandit.wall <= tgt
            verdict = (f"≤ {tgt}: " + ("met" if ok_cpu and ok_wall else
                                       "met on CPU, missed on wall" if ok_cpu else
                                       "met on wall, missed on CPU" if ok_wall else "missed"))
        lines.append(f"| {name} | {s.wall:.2f} | {s.cpu:.2f} | {s.rss_mib:.0f} | {s.code} "
                     f"| {s.load:.1f} | {s.when} | {rw} | {rc} | {verdict} | {s.note} |")
    peaks = [s.rss_mib for n, s in results.items() if n.startswith(("audit", "upgrade", "verify",
                                                                      "scan"))]
    if peaks:
        lines += ["", f"Peak RSS of auditor runs: {max(peaks):.0f} MiB (target < 1024 MiB: "
                      f"{'met' if max(peaks) < 1024 else 'missed'})."]
    if rules:
        lines += rules_table(rules, f"the {rules['files']} files the series changes")
    if rules_whole:
        lines += rules_table(rules_whole, f"the whole tree ({rules_whole['files']} Python files)")
    lines.append(END)
    out = HERE / "RESULTS.md"
    text = out.read_text(encoding="utf-8") if out.is_file() else "# Benchmark results\n"
    section = "\n".join(lines)
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + section + text[text.index(END) + len(END):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}")


def precompile() -> None:
    """Byte-compile auditor's modules, as ``pip install`` of its wheel does. An editable checkout
    has no .pyc until a run writes them, and with PYTHONDONTWRITEBYTECODE set (as in this
    workplace's shells) every run compiled ~110 modules again: ~0.45 s of CPU, a tenth of a
    warm run."""
    import compileall

    compileall.compile_dir(str(ROOT / "auditor"), quiet=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", type=Path, default=HERE / "work" / "real-bench")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--only", choices=("auditor", "baselines", "rules", "rules-whole", "quick",
                                       "rounds"))
    ap.add_argument("--full", action="store_true",
                    help="with --only rounds: the full-scope scan in each round too")
    ap.add_argument("--rewrite", action="store_true", help="measure nothing; rewrite RESULTS.md")
    args = ap.parse_args()
    case: Path = args.case.resolve()
    if not (case / "audit-v1.toml").is_file():
        subprocess.run([sys.executable, str(HERE / "real_bench_case.py"), "--work", str(case)],
                       check=True)
    store = case.parent / "real-samples.json"
    store_rules = case.parent / "real-rules.json"
    store_whole = case.parent / "real-rules-whole.json"
    store_rounds = case.parent / "real-rounds.json"
    results: dict[str, Sample] = {}
    if store.is_file():
        results = {k: Sample(**v) for k, v in json.loads(store.read_text()).items()}
    if not args.rewrite:
        work = case.parent / f"real-runs-{args.only or 'all'}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        os.environ.setdefault("SEMGREP_ENABLE_VERSION_CHECK", "0")
        precompile()
        if args.only in (None, "baselines"):
            measure_baselines(case, work, results, store)
        if args.only in (None, "auditor"):
            measure_auditor(case, work, args.runs, results, store)
        if args.only in (None, "rules"):
            measure_rules(case, work, store_rules, runs=args.runs)
        if args.only == "quick":
            measure_yardstick(case, work, results, store)
            measure_auditor(case, work, args.runs, results, store, full=False)
        if args.only == "rules-whole":
            measure_rules(case, work, store_whole, whole=True, runs=args.runs)
        if args.only == "rounds":
            measure_rounds(case, work, args.runs, store_rounds, full=args.full)
    rules = json.loads(store_rules.read_text()) if store_rules.is_file() else None
    whole = json.loads(store_whole.read_text()) if store_whole.is_file() else None
    rounds = json.loads(store_rounds.read_text()) if store_rounds.is_file() else None
    write_section(case, results, rules, whole, args.runs, rounds)


if __name__ == "__main__":
    main()
