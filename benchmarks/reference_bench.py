"""The reference runner against the staged one on the real vLLM case, and the speed before/after.

    python benchmarks/reference_bench.py [--case benchmarks/work/real-bench] [--before DIR]
                                         [--rounds 1]

- the same diff-scoped scan (``audit-v1.toml``) through the staged runner (``auditor scan
  --json``) and the reference runner (``auditor scan --reference --json``): the findings (rule,
  path, line, commit, fingerprint) and the not-checked reasons must be the same; wall and CPU of
  each;
- with ``--before DIR`` (a copy of the package from before a change, run with this checkout's
  interpreter through ``PYTHONPATH``), each round: the yardstick (whole-tree bandit), then the
  cold audit (empty cache) and the warm audit (the cold run's cache) of each side, the sides
  alternating; every ratio is to its own round's yardstick. ``--after DIR`` runs the "after"
  side from a copy too (``cp -rL auditor DIR/``): the scan cache's key covers every scan module,
  so a checkout others edit between the cold and the warm run makes the warm run a cold one;
- ``--no-equivalence`` leaves the staged/reference comparison out (it costs minutes).

Writes the "Reference runner" section of benchmarks/RESULTS.md (between its markers; or of
``--results FILE``) and keeps the samples in ``<case>/../reference-samples.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import Sample, compiled, measure, uptime  # noqa: E402

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
BEGIN = "<!-- reference-bench:begin -->"
END = "<!-- reference-bench:end -->"


def _scan(case: Path, work: Path, name: str, *extra: str) -> tuple[Sample, dict]:
    out = work / f"{name}.json"
    cache = work / f"cache-{name}"
    shutil.rmtree(cache, ignore_errors=True)
    cmd = ["sh", "-c", f'"$0" -m auditor scan "$1" --json {" ".join(extra)} > "$2"',
           sys.executable, str(case / "audit-v1.toml"), str(out)]
    sample = measure(cmd, env={"AUDITOR_CACHE": str(cache)})
    return sample, json.loads(out.read_text(encoding="utf-8"))


def _key(doc: dict) -> tuple[list, list]:
    found = sorted((f["rule"], f["path"], f["line"], f["commit"], f["fingerprint"])
                   for f in doc.get("findings") or [])
    return found, list(doc.get("not_checked") or [])


def _audit(case: Path, work: Path, name: str, before: Path | None, cache: Path) -> Sample:
    """An audit from the package copy ``before`` (None: this checkout)."""
    env = {"AUDITOR_CACHE": str(cache)}
    if before is not None:
        env["PYTHONPATH"] = str(before)
    out = work / f"out-{name}"
    shutil.rmtree(out, ignore_errors=True)
    sample = measure([sys.executable, "-m", "auditor", "audit", str(case / "audit-v1.toml"),
                      "--out", str(out)], env=env, cwd=work, out=out)
    # exit 2 (bad input), or 3 with no audit.json (an internal error: nothing written): the
    # time would be of a run that stopped early (INCOMPLETE is 3 too, with its audit.json)
    if sample.code == 2 or not (out / "audit.json").is_file():
        raise SystemExit(f"{name}: the audit exited {sample.code} and wrote no audit.json (see "
                         "its output above); its time would measure a run that stopped early")
    return sample


def _equivalence(case: Path, work: Path) -> dict:
    staged, s_doc = _scan(case, work, "staged")
    reference, r_doc = _scan(case, work, "reference", "--reference")
    return {
        "staged": vars(staged), "reference": vars(reference),
        "same": _key(s_doc) == _key(r_doc),
        "findings": len(s_doc.get("findings") or []),
        "not_checked": len(s_doc.get("not_checked") or []),
        "reference_findings": len(r_doc.get("findings") or []),
        "reference_not_checked": len(r_doc.get("not_checked") or [])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", type=Path, default=HERE / "work" / "real-bench")
    ap.add_argument("--before", type=Path, default=None)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--after", type=Path, default=None,
                    help="a copy of the package to run as the after side (default: the checkout)")
    ap.add_argument("--results", type=Path, default=HERE / "RESULTS.md",
                    help="the file whose section is written")
    ap.add_argument("--keep-equivalence", action="store_true",
                    help="reuse the staged/reference comparison the last run stored")
    ap.add_argument("--no-equivalence", action="store_true",
                    help="measure the before/after rounds only")
    args = ap.parse_args()
    case = args.case.resolve()
    work = case.parent / "reference-work"
    work.mkdir(parents=True, exist_ok=True)
    store = case.parent / "reference-samples.json"
    doc: dict = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load": uptime()}

    if args.no_equivalence:
        doc["equivalence"] = None
    elif args.keep_equivalence and store.is_file():
        doc["equivalence"] = json.loads(store.read_text(encoding="utf-8"))["equivalence"]
    else:
        doc["equivalence"] = _equivalence(case, work)

    rounds = []
    if args.before is not None:
        compiled(args.before, args.after)
        for n in range(args.rounds):
            row: dict = {}
            row["yardstick"] = vars(measure([str(BIN / "bandit"), "-r", "-q", "-f", "json",
                                             "-o", str(work / "bandit.json"),
                                             str(case / "tree")]))
            sides = [("before", args.before.resolve()),
                     ("after", args.after.resolve() if args.after is not None else None)]
            for side, before in (sides if n % 2 == 0 else sides[::-1]):
                cache = work / f"cache-{side}"
                shutil.rmtree(cache, ignore_errors=True)
                row[f"{side} cold"] = vars(_audit(case, work, f"{side}-cold", before, cache))
                row[f"{side} warm"] = vars(_audit(case, work, f"{side}-warm", before, cache))
            rounds.append(row)
    doc["rounds"] = rounds
    store.write_text(json.dumps(doc, indent=1, default=str), encoding="utf-8")
    write_section(doc, args.results)


def write_section(doc: dict, path: Path = HERE / "RESULTS.md") -> None:
    eq = doc["equivalence"]
    lines = [BEGIN, "## Reference runner against the staged one (issue 32)", "",
             f"Case: `python benchmarks/real_bench_case.py` (diff scope, `audit-v1.toml`). "
             f"Command: `python benchmarks/reference_bench.py --before DIR --rounds "
             f"{max(1, len(doc['rounds']))}` ({doc['when']}); load when started: "
             f"`{doc['load']}`.", ""]
    if eq is not None:
        lines += [
             "| runner | wall (s) | CPU (s) | findings | not checked |", "|---|---:|---:|---:|---:|",
             f"| staged (`auditor scan --json`) | {eq['staged']['wall']:.1f} | "
             f"{eq['staged']['cpu']:.1f} | {eq['findings']} | {eq['not_checked']} |",
             f"| reference (`auditor scan --reference --json`) | {eq['reference']['wall']:.1f} | "
             f"{eq['reference']['cpu']:.1f} | {eq['reference_findings']} | "
             f"{eq['reference_not_checked']} |", "",
             "Same findings (rule, path, line, commit, fingerprint) and not-checked reasons: "
             f"**{'yes' if eq['same'] else 'NO'}**.", ""]
    if doc["rounds"]:
        lines += ["Before/after (before: a copy of the package before the change; same rules, "
                  "same case), each ratio to its own round's whole-tree bandit:", "",
                  "| measurement | wall (s) per round | CPU (s) per round | wall / bandit | "
                  "CPU / bandit | target |", "|---|---|---|---:|---:|---|"]
        targets = {"cold": 0.15, "warm": 0.03}
        for side in ("before", "after"):
            for kind in ("cold", "warm"):
                name = f"{side} {kind}"
                walls = [r[name]["wall"] for r in doc["rounds"]]
                cpus = [r[name]["cpu"] for r in doc["rounds"]]
                wr = statistics.median(r[name]["wall"] / r["yardstick"]["wall"]
                                       for r in doc["rounds"])
                cr = statistics.median(r[name]["cpu"] / r["yardstick"]["cpu"]
                                       for r in doc["rounds"])
                ok = "met" if wr <= targets[kind] else "missed"
                ok_cpu = "met" if cr <= targets[kind] else "missed"
                lines.append(f"| audit {name} | {', '.join(f'{w:.1f}' for w in walls)} | "
                             f"{', '.join(f'{c:.1f}' for c in cpus)} | "
                             f"{wr:.3f} | {cr:.3f} | ≤ {targets[kind]}: {ok} (wall), "
                             f"{ok_cpu} (CPU) |")
        ys = ", ".join(f"{r['yardstick']['wall']:.1f}" for r in doc["rounds"])
        yc = ", ".join(f"{r['yardstick']['cpu']:.1f}" for r in doc["rounds"])
        lines += ["", f"Yardstick (whole-tree `bandit -r`) per round: wall {ys} s, CPU {yc} s.",
                  ""]
    lines.append(END)
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    section = "\n".join(lines)
    if BEGIN in text and END in text:
        a, b = text.index(BEGIN), text.index(END) + len(END)
        text = text[:a] + section + text[b:]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    os.environ.setdefault("SEMGREP_ENABLE_VERSION_CHECK", "0")
    main()
