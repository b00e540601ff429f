"""Recall and precision of the supply-chain red-flag rules (issue 14).

Hostile set: the labelled corpus in ``benchmarks/redflags`` (a line after ``# hostile: WHAT`` must
be reported; for a command continued with a backslash the whole logical command counts). Benign
set: the ``# benign:`` lines of that corpus, and the real upstream vLLM files the rules target
(Dockerfiles, CI scripts, requirements, ``vllm/envs.py``, ``vllm/entrypoints``): a block finding
there is a false block.

Everything goes through the shipped scanners (semgrep with ``policies/semgrep/rules``, the builtin
scanner), the package-source judge (against the real upstream tree's sources and the vLLM profile)
and the default policy, exactly as ``auditor scan`` applies them; only git attribution is skipped
(every file is treated as the series' own). With ``--time``, one more semgrep run with ``--time``
gives each rule's matching time over the upstream files.

    python benchmarks/recall.py [--upstream /work/real/vllm-0.10.0]
                                [--mirror /work/real/case/mirrors/vllm.git] [--time]

Prints a Markdown section (paste it into RESULTS.md); exit 0 when recall >= 90 % and no block
finding on the benign sets, else 1.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from auditor import gitio  # noqa: E402
from auditor.gitio import Git  # noqa: E402
from auditor.model import Action  # noqa: E402
from auditor.policy import load_policy  # noqa: E402
from auditor.scan import rules as rules_mod  # noqa: E402
from auditor.scan.builtin import BuiltinScanner  # noqa: E402
from auditor.scan.files import classify  # noqa: E402
from auditor.scan.interface import Origin, RawFinding, ScanTarget  # noqa: E402
from auditor.scan.semgrep import SemgrepScanner  # noqa: E402
from auditor.scan.sources import SourceJudge, upstream_sources  # noqa: E402
from auditor.scan.tools import sealed_env  # noqa: E402
from auditor.spec import POLICIES_DIR, load_profile  # noqa: E402

CORPUS = HERE / "redflags"
LABEL = re.compile(r"^\s*#\s*(hostile|benign):\s*(.*)$")
# upstream files the red-flag rules target (relative globs, in groups)
UPSTREAM_GROUPS = {
    "docker/Dockerfile*": ["docker/Dockerfile*"],
    ".buildkite/**/*.sh": [".buildkite/**/*.sh"],
    ".buildkite/*.yaml": [".buildkite/*.yaml"],
    "requirements/*.txt": ["requirements/*.txt"],
    "vllm/envs.py": ["vllm/envs.py"],
    "vllm/entrypoints/**": ["vllm/entrypoints/**/*.py"],
    "tools/**/*.sh, .github/**/*.sh": ["tools/**/*.sh", ".github/**/*.sh"],
    "examples/**/*.sh": ["examples/**/*.sh"],
}
# the rules issue 14 added (the rest of the rule set is reported for context)
NEW_RULE = re.compile(r"^(dependency\.|process-exec\.(shell|builtin)\.|"
                      r"filesystem\.(shell|python)\.(installed-code-modified|startup-hook)|"
                      r"network\.shell\.(download-exec|unverified-binary-download)|"
                      r"obfuscation\.python\.exec-downloaded)")
# existing rules whose precision issue 14 changed
TUNED_RULE = re.compile(r"^(secret-access\.(python|c)\.|api-exposure\.shell\.)")


@dataclass(frozen=True)
class Judged:
    path: str
    line: int
    end_line: int
    rule: str
    action: Action
    message: str


def target(path: str, data: bytes, key: str) -> ScanTarget | None:
    r = classify(path, data)
    if r.text is None:
        return None
    return ScanTarget(key=key, path=path, origin=Origin.BUNDLE, sha256=r.sha256, family=r.family,
                      text=r.text)


def labels(t: ScanTarget) -> list[tuple[str, str, int, int]]:
    """(kind, what, first line, last line of the logical command) for each label in a file."""
    lines = t.lines
    out = []
    for i, line in enumerate(lines):
        m = LABEL.match(line)
        if not m:
            continue
        j = i + 1
        while j < len(lines) and (not lines[j].strip() or LABEL.match(lines[j])):
            j += 1
        end = j
        while end < len(lines) - 1 and lines[end].rstrip().endswith("\\"):
            end += 1
        out.append((m.group(1), m.group(2), j + 1, end + 1))
    return out


def scan(targets: list[ScanTarget], work: Path, judge: SourceJudge) -> list[Judged]:
    profile = load_profile("vllm")
    policy = load_policy(POLICIES_DIR / "default.toml")
    scanners = [SemgrepScanner(jobs=2), BuiltinScanner(profile.request_logging_flags,
                                                       profile.telemetry_env)]
    out: list[Judged] = []
    by_key = {t.key: t for t in targets}
    for s in scanners:
        mine = [t for t in targets if s.accepts(t)]
        run = s.scan(mine, work / s.name)
        for key, err in run.errors.items():
            print(f"note: {s.name} could not fully check {by_key[key].path}: {err.reason[:120]}",
                  file=sys.stderr)
        for key, found in run.findings.items():
            t = by_key[key]
            for f in found:
                out.append(_judged(t, f, judge, policy))
    return out


def _judged(t: ScanTarget, f: RawFinding, judge: SourceJudge, policy: object) -> Judged:
    rule, message = f.rule, f.message
    if SourceJudge.applies(rule):
        code = "\n".join(t.lines[f.line - 1:max(f.line, f.end_line)])
        v = judge.judge(code, t.text)
        rule, message = f"{rule}.{v.suffix}", v.message
    action = policy.action_for(f.category, t.path, rule)  # type: ignore[attr-defined]
    return Judged(t.path, f.line, f.end_line, rule, action, message)


def semgrep_times(targets: list[ScanTarget], work: Path) -> tuple[float, dict[str, float]]:
    """Wall time of one semgrep run over ``targets`` and matching seconds per rule."""
    root = work / "timing"
    for t in targets:
        p = root / "t" / t.path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(t.text)
    exe = SemgrepScanner().exe
    argv = [exe, "scan", "--json", "--time", "--metrics=off", "--disable-version-check",
            "--config", str(rules_mod.RULES_DIR), "--no-rewrite-rule-ids", "--disable-nosem",
            "--x-ignore-semgrepignore-files", "--no-git-ignore", "--max-target-bytes=0",
            "--jobs=2", "."]
    start = time.monotonic()
    res = gitio.run(argv, cwd=root / "t", env=sealed_env(root / "home"), timeout=1800,
                    check=False)
    wall = time.monotonic() - start
    doc = json.loads(res.stdout)
    rules = [rules_mod.canonical_rule_id(r.get("id", "") if isinstance(r, dict) else str(r))
             or str(r) for r in doc["time"]["rules"]]
    per: Counter[str] = Counter()
    for tgt in doc["time"]["targets"]:
        for i, secs in enumerate(tgt.get("match_times") or []):
            if i < len(rules):
                per[rules[i]] += float(secs)
    return wall, dict(per)


def upstream_groups(root: Path) -> dict[str, list[ScanTarget]]:
    """The upstream files of each group (a file in the first group whose globs match it)."""
    groups: dict[str, list[ScanTarget]] = {}
    seen: set[str] = set()
    for name, globs in UPSTREAM_GROUPS.items():
        for g in globs:
            for p in sorted(root.glob(g)):
                rel = p.relative_to(root).as_posix()
                if p.is_file() and rel not in seen:
                    seen.add(rel)
                    t = target(rel, p.read_bytes(), "u:" + rel)
                    if t is not None:
                        groups.setdefault(name, []).append(t)
    return groups


@dataclass
class Tally:
    """The corpus's labelled lines against what the scan reported."""

    hostile_total: int = 0
    hostile_found: int = 0
    hostile_blocked: int = 0
    benign_total: int = 0
    missed: list[str] = field(default_factory=list)
    reviewed: list[str] = field(default_factory=list)  # hostile lines reported for review only
    benign_blocks: list[str] = field(default_factory=list)


def corpus_tally(corpus: list[ScanTarget], judged: list[Judged]) -> Tally:
    at: dict[str, list[Judged]] = {}
    for j in judged:
        at.setdefault(j.path, []).append(j)
    tally = Tally()
    for t in corpus:
        for kind, what, first, last in labels(t):
            hits = [j for j in at.get(t.path, []) if j.line <= last and j.end_line >= first]
            acted = [j for j in hits if j.action is not Action.INFO]
            if kind == "hostile":
                tally.hostile_total += 1
                tally.hostile_found += bool(acted)
                tally.hostile_blocked += any(j.action is Action.BLOCK for j in hits)
                if not acted:
                    tally.missed.append(f"{t.path}:{first} ({what})")
                elif not any(j.action is Action.BLOCK for j in hits):
                    tally.reviewed.append(f"{t.path}:{first} ({what}): "
                                          + ", ".join(sorted({j.rule for j in acted})))
            else:
                tally.benign_total += 1
                tally.benign_blocks += [f"{t.path}:{first} {j.rule} ({what})" for j in hits
                                        if j.action is Action.BLOCK]
    return tally


def detail_lines(tally: Tally, blocks: list[Judged]) -> list[str]:
    """The lists under the summary: misses, review-only hostile lines, false blocks."""
    lines: list[str] = []
    if tally.missed:
        lines += ["", "Hostile lines not reported:", ""] + [f"- `{m}`" for m in tally.missed]
    if tally.reviewed:
        lines += ["", "Hostile lines reported for review, not blocked:", ""] + [
            f"- `{r}`" for r in tally.reviewed]
    if tally.benign_blocks:
        lines += ["", "Benign corpus lines blocked:", ""] + [
            f"- `{b}`" for b in tally.benign_blocks]
    if blocks:
        lines += ["", "Block findings on upstream files (rule: count; first places):", ""]
        for rule, n in Counter(j.rule for j in blocks).most_common():
            where = ", ".join(f"{j.path}:{j.line}" for j in blocks if j.rule == rule)
            kind = "new" if NEW_RULE.match(rule) else "tuned" if TUNED_RULE.match(rule) \
                else "existing"
            lines.append(f"- `{rule}` ({kind}): {n} — {where[:300]}")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--upstream", type=Path, default=Path("/work/real/vllm-0.10.0"))
    ap.add_argument("--mirror", type=Path, default=Path("/work/real/case/mirrors/vllm.git"),
                    help="upstream git repository (its tree's package sources are 'known')")
    ap.add_argument("--ref", default="v0.10.0")
    ap.add_argument("--time", action="store_true", help="also time each rule with semgrep --time")
    args = ap.parse_args()

    git = Git(args.mirror)
    profile = load_profile("vllm")
    judge = SourceJudge(upstream_sources(git, git.tree_of(args.ref))
                        | set(profile.extra.get("scan", {}).get("package_indexes", [])))

    corpus = [t for p in sorted(CORPUS.rglob("*")) if p.is_file() and p.name != "README.md"
              if (t := target(p.relative_to(CORPUS).as_posix(), p.read_bytes(),
                              "c:" + p.relative_to(CORPUS).as_posix())) is not None]
    groups = upstream_groups(args.upstream)
    upstream = [t for ts in groups.values() for t in ts]

    with tempfile.TemporaryDirectory(prefix="recall-") as tmp:
        work = Path(tmp)
        start = time.monotonic()
        judged = scan(corpus + upstream, work, judge)
        elapsed = time.monotonic() - start
        timing = semgrep_times(upstream, work) if args.time else None

    tally = corpus_tally(corpus, judged)
    hostile_total, hostile_found, hostile_blocked = (tally.hostile_total, tally.hostile_found,
                                                     tally.hostile_blocked)
    benign_blocks, benign_total = tally.benign_blocks, tally.benign_total

    up_paths = {t.path for t in upstream}
    up = [j for j in judged if j.path in up_paths]
    blocks = [j for j in up if j.action is Action.BLOCK]
    new_blocks = [j for j in blocks if NEW_RULE.match(j.rule)]
    tuned_blocks = [j for j in blocks if TUNED_RULE.match(j.rule)]

    recall = hostile_found / hostile_total if hostile_total else 0.0
    lines = [
        "## Red-flag rules: recall and false blocks (issue 14)",
        "",
        f"Command: `python benchmarks/recall.py{' --time' if args.time else ''}` "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}); upstream "
        f"`{args.upstream}` (sources judged against `{args.mirror.name}` at `{args.ref}` "
        "and the vLLM profile); default policy.",
        "",
        f"- hostile lines reported (block or review): **{hostile_found}/{hostile_total} = "
        f"{recall:.0%}** (target >= 90 %); blocked: {hostile_blocked}/{hostile_total}",
        f"- benign corpus lines blocked: {len(benign_blocks)}/{benign_total}",
        f"- upstream vLLM files scanned: {len(upstream)}; block findings: {len(blocks)} "
        f"(from the rules issue 14 added: {len(new_blocks)}; from the existing rules it "
        f"tuned for precision: {len(tuned_blocks)}; from the other existing rules: "
        f"{len(blocks) - len(new_blocks) - len(tuned_blocks)}); scan {elapsed:.1f} s for "
        "corpus + upstream",
        "",
        "| upstream files | files | findings | block | review | info |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, ts in groups.items():
        paths = {t.path for t in ts}
        js = [j for j in up if j.path in paths]
        c = Counter(j.action for j in js)
        lines.append(f"| `{name}` | {len(ts)} | {len(js)} | {c[Action.BLOCK]} | "
                     f"{c[Action.REVIEW]} | {c[Action.INFO]} |")
    lines += detail_lines(tally, blocks)
    if timing is not None:
        wall, per = timing
        mine = {r: s for r, s in per.items() if NEW_RULE.match(r)}
        lines += ["", f"Rule timing (`semgrep --time`, {len(upstream)} upstream files, "
                      f"{wall:.1f} s wall): issue-14 rules {sum(mine.values()):.2f} s of "
                      f"{sum(per.values()):.2f} s matching; slowest of them:", ""]
        for r, s in sorted(mine.items(), key=lambda kv: -kv[1])[:8]:
            lines.append(f"- `{r}`: {s:.2f} s")
    print("\n".join(lines))
    return 0 if recall >= 0.9 and not benign_blocks and not new_blocks else 1


if __name__ == "__main__":
    os.environ.setdefault("SEMGREP_ENABLE_VERSION_CHECK", "0")
    sys.exit(main())
