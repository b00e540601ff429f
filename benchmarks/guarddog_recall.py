"""Recall of the scan on GuardDog's annotated source-code corpus (issue 29).

GuardDog (DataDog/guarddog) keeps samples of real malicious-package code for its own rules:
``tests/analyzer/sourcecode/*.py``, where ``# ruleid: <rule>`` marks the line after it as hostile
and ``# ok: <rule>`` the line after it as benign, and ``tests/analyzer/sourcecode/benign/*.py``,
benign code in the shapes those rules look for. Their rules are not used here; their samples are
data read from a bare clone (``git show``), never installed or run.

The case: one git repository whose upstream tag ``v1`` holds only a README, and a series of
commits, one per sample file, adding it under ``pkg/`` (the benign files under ``pkg/benign/``);
the bundle is the series' head tree exported to a folder; the spec names both. ``auditor scan
--json`` (the real command, every scanner, every derived reading, the default policy, git
attribution) scans it.

A hostile line counts as *found* when a finding whose action is ``block`` or ``review`` covers
a line of the statement the hostile line belongs to (the innermost Python statement holding it;
for a compound statement such as ``with``/``if``/``def``, its header lines only). With
``--strict`` only ``block`` counts. The ``# ok:`` lines of the hostile files and every line of the
benign files are the benign set: a ``block`` finding there is a false block.

    python benchmarks/guarddog_recall.py [--guarddog /work/.mirror/DataDog+guarddog/repo]
                                         [--work DIR] [--missed] [--strict]

Prints a Markdown section (per-file table, totals, false blocks); exit 0 when recall >= 90 %,
else 1; exit 2 when the corpus cannot be read.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_MIRROR = Path("/work/.mirror/DataDog+guarddog/repo")
CORPUS = "tests/analyzer/sourcecode"
ANNOTATION = re.compile(r"^\s*#\s*(ruleid|ok|todoruleid|todook)\s*:\s*(\S+)")
TARGET = 0.90
ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "LC_ALL": "C",
       "GIT_AUTHOR_NAME": "Fork Author", "GIT_AUTHOR_EMAIL": "fork@community.example",
       "GIT_COMMITTER_NAME": "Fork Author", "GIT_COMMITTER_EMAIL": "fork@community.example",
       "GIT_AUTHOR_DATE": "@1760000000 +0000", "GIT_COMMITTER_DATE": "@1760000000 +0000"}


@dataclass(frozen=True)
class Sample:
    name: str  # file name in the corpus
    path: str  # path in the case's tree
    text: str
    benign_file: bool


@dataclass(frozen=True)
class Label:
    kind: str  # ruleid | ok
    rule: str
    line: int  # the labelled line (1-based)
    span: tuple[int, int]  # the lines of its statement


def git(repo: Path, *args: str) -> str:
    res = subprocess.run(["git", "-C", str(repo), *args], env=ENV, check=True,
                         capture_output=True)
    return res.stdout.decode("utf-8", "replace").strip()


def corpus(mirror: Path) -> list[Sample]:
    out = []
    for sub, benign in ((CORPUS, False), (f"{CORPUS}/benign", True)):
        names = git(mirror, "ls-tree", "--name-only", "HEAD", f"{sub}/").splitlines()
        for full in sorted(names):
            name = full.rsplit("/", 1)[-1]
            if not name.endswith(".py") or name.startswith("test_"):
                continue
            text = git(mirror, "show", f"HEAD:{full}") + "\n"
            out.append(Sample(name, f"pkg/benign/{name}" if benign else f"pkg/{name}", text,
                              benign))
    return out


def _statement_spans(text: str) -> list[tuple[int, int]]:
    """(first, last) line of every statement; a compound statement's header only."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    spans = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        end = node.end_lineno or node.lineno
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            end = max(node.lineno, body[0].lineno - 1)
            decorators = getattr(node, "decorator_list", [])
            start = min([d.lineno for d in decorators] + [node.lineno])
            spans.append((start, end))
            continue
        spans.append((node.lineno, end))
    return spans


def labels(text: str) -> list[Label]:
    lines = text.splitlines()
    spans = _statement_spans(text)
    out = []
    for i, line in enumerate(lines):
        m = ANNOTATION.match(line)
        if not m or m.group(1).startswith("todo"):
            continue
        j = i + 1
        while j < len(lines) and (not lines[j].strip() or ANNOTATION.match(lines[j])):
            j += 1
        if j >= len(lines):
            continue
        n = j + 1
        holding = [s for s in spans if s[0] <= n <= s[1]]
        span = min(holding, key=lambda s: s[1] - s[0]) if holding else (n, n)
        out.append(Label(m.group(1), m.group(2), n, span))
    return out


def build_case(samples: list[Sample], work: Path) -> Path:
    if work.exists():
        shutil.rmtree(work)
    repo = work / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("An empty upstream.\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "upstream: empty")
    git(repo, "tag", "v1")
    git(repo, "checkout", "-q", "-b", "series")
    for s in samples:
        p = repo / s.path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(s.text, encoding="utf-8")
        git(repo, "add", s.path)
        git(repo, "commit", "-q", "-m", f"add {s.path}")
    shas = git(repo, "rev-list", "--reverse", "v1..series").splitlines()
    (work / "series.txt").write_text("".join(f"{c}\n" for c in shas), encoding="utf-8")
    bundle = work / "bundle"
    bundle.mkdir()
    archive = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", "series"],
                             env=ENV, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(bundle)], input=archive, check=True)
    spec = work / "audit.toml"
    spec.write_text(
        '[engine]\nprofile = "vllm"\nversion = "1.0.0"\n\n'
        '[upstream]\nrepo = "repo"\nref = "v1"\n\n'
        '[patches]\nref = "series"\ncommits_file = "series.txt"\n\n'
        '[bundle]\npath = "bundle"\n\n[scan]\nscope = "diff"\n', encoding="utf-8")
    return spec


def scan(spec: Path, work: Path) -> list[dict[str, object]]:
    env = {**os.environ, "AUDITOR_CACHE": str(work / "cache")}
    res = subprocess.run([sys.executable, "-m", "auditor", "scan", str(spec), "--json"],
                         cwd=ROOT, env=env, capture_output=True, text=True)
    if res.returncode not in (0, 1, 3):
        sys.exit(f"auditor scan failed (exit {res.returncode}): {res.stderr[-2000:]}")
    if res.returncode == 3:
        print(f"note: the scan was INCOMPLETE: {res.stderr[-600:]}", file=sys.stderr)
    try:
        doc = json.loads(res.stdout)
    except ValueError:
        sys.exit(f"auditor scan printed no JSON (exit {res.returncode}): {res.stderr[-1200:]}")
    findings: list[dict[str, object]] = doc["findings"]
    return findings


@dataclass
class Tally:
    """The counts over the corpus: per file (name, found, hostile, ok blocked, ok lines)."""

    rows: list[tuple[str, int, int, int, int]] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    false_blocks: list[str] = field(default_factory=list)
    benign: list[tuple[str, list[tuple[int, str]]]] = field(default_factory=list)

    @property
    def found(self) -> int:
        return sum(r[1] for r in self.rows)

    @property
    def hostile(self) -> int:
        return sum(r[2] for r in self.rows)

    @property
    def share(self) -> float:
        return self.found / self.hostile if self.hostile else 0.0


Findings = dict[str, list[dict[str, object]]]


def _hits(by_path: Findings, path: str, span: tuple[int, int],
          actions: set[str]) -> list[dict[str, object]]:
    out = []
    for f in by_path.get(path, []):
        a = int(str(f["line"]))
        b = int(str(f.get("end_line") or a))
        if f["action"] in actions and a <= span[1] and b >= span[0]:
            out.append(f)
    return out


def tally(samples: list[Sample], by_path: Findings, counted: set[str]) -> Tally:
    t = Tally()
    for s in samples:
        if s.benign_file:
            blocks = sorted({(int(str(f["line"])), str(f["rule"]))
                             for f in by_path.get(s.path, []) if f["action"] == "block"})
            t.benign.append((s.name, blocks))
            continue
        ls = labels(s.text)
        hostile = [x for x in ls if x.kind == "ruleid"]
        oks = [x for x in ls if x.kind == "ok"]
        n_found = 0
        for x in hostile:
            if _hits(by_path, s.path, x.span, counted):
                n_found += 1
            else:
                line = s.text.splitlines()[x.line - 1].strip()
                t.missed.append(f"{s.name}:{x.line} ({x.rule}): {line[:110]}")
        blocked_ok = 0
        for x in oks:
            h = _hits(by_path, s.path, x.span, {"block"})
            if h:
                blocked_ok += 1
                rules = ", ".join(sorted({str(f["rule"]) for f in h}))
                t.false_blocks.append(f"{s.name}:{x.line} ({rules})")
        if hostile or oks:
            t.rows.append((s.name, n_found, len(hostile), blocked_ok, len(oks)))
    return t


def render(t: Tally, *, kind: str, commit: str, details: bool) -> None:
    print("## GuardDog's annotated corpus (tests/analyzer/sourcecode)\n")
    print(f"Found = a {kind} finding on the statement of a `# ruleid:` line. "
          f"Commit {commit} of DataDog/guarddog.\n")
    print("| file | hostile found | `# ok:` lines blocked |")
    print("|---|---|---|")
    for name, n_found, n_h, blocked_ok, n_ok in t.rows:
        pct = f" ({n_found / n_h:.0%})" if n_h else ""
        print(f"| {name} | {n_found} / {n_h}{pct} | {blocked_ok} / {n_ok} |")
    ok_blocked = sum(r[3] for r in t.rows)
    ok_lines = sum(r[4] for r in t.rows)
    print(f"| **total** | **{t.found} / {t.hostile} ({t.share:.1%})** | "
          f"{ok_blocked} / {ok_lines} |")
    print("\nBenign files (benign/): block findings\n")
    print("| file | block findings |")
    print("|---|---|")
    for name, blocks in t.benign:
        listed = ", ".join(f"{ln}: {r}" for ln, r in blocks) or "0"
        print(f"| {name} | {listed} |")
    n_benign = sum(1 for _, b in t.benign if b)
    print(f"\n{n_benign} of {len(t.benign)} benign files have a block finding.")
    for title, items in (("Missed hostile lines", t.missed),
                         ("Blocked `# ok:` lines", t.false_blocks)):
        if details and items:
            print(f"\n{title}:\n")
            for m in items:
                print(f"- `{m}`")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--guarddog", type=Path, default=DEFAULT_MIRROR,
                    help="a clone (bare is fine) of DataDog/guarddog")
    ap.add_argument("--work", type=Path, default=None, help="where to build the case")
    ap.add_argument("--missed", action="store_true",
                    help="list the hostile lines missed and the `# ok:` lines blocked")
    ap.add_argument("--strict", action="store_true", help="count block findings only")
    args = ap.parse_args()
    try:
        samples = corpus(args.guarddog)
        commit = git(args.guarddog, "rev-parse", "--short", "HEAD")
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"error: cannot read the GuardDog corpus at {args.guarddog}: {exc}",
              file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="guarddog-recall-") as tmp:
        work = (args.work or Path(tmp) / "case").resolve()
        findings = scan(build_case(samples, work), work)
    by_path: Findings = {}
    for f in findings:
        by_path.setdefault(str(f["path"]), []).append(f)
    t = tally(samples, by_path, {"block"} if args.strict else {"block", "review"})
    render(t, kind="block" if args.strict else "block or review", commit=commit,
           details=args.missed)
    return 0 if t.share >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
