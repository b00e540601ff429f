"""Claims of intent on benign code: popular sdists scanned as if a series added them (issue 29).

    python benchmarks/benign_corpus.py [--count 80] [--max-mb 6] [--work benchmarks/work/benign]
                                       [--offline]

Takes the first ``--count`` names of ``policies/popular-packages.txt`` that have an sdist of at
most ``--max-mb`` MB (the newest ``.tar.gz`` on the index, found through pip's own PackageFinder
as ``benchmarks/real_vllm.py`` finds vLLM's), downloads each once into WORK (git-ignored; with
``--offline`` only what is there already), and reads its members from the archive in memory:
nothing is unpacked, built, imported or run. Every text file goes through the scan as ``auditor
scan`` reads a file the series added: the derived readings (Dockerfile shell, command lines,
shell words, docs code blocks), the shipped semgrep rules, the builtin, coding and CMake
scanners (bandit is left out: none of its tests is an intent category), package sources judged
against an empty upstream (only the default index is known), the default policy and the docs
ceiling. A package counts as blocked for an intent claim when a block finding is of a category
other than network, unsafe-deserialization, process-exec, filesystem and binary-artifact, and its
rule is no bind-all rule (listening on every interface is a fact, not an intent).

Prints a Markdown section: the share of packages blocked for an intent claim (target <= 5 %) and
each blocked package with its rules and first places. Exit 0 when the share is within target.
"""

from __future__ import annotations

import argparse
import os
import sys
import tarfile
import tempfile
import time
import urllib.request
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from auditor.model import Action, Category  # noqa: E402
from auditor.policy import load_policy  # noqa: E402
from auditor.scan import derived, docs  # noqa: E402
from auditor.scan.builtin import BuiltinScanner  # noqa: E402
from auditor.scan.cmake import CMakeScanner  # noqa: E402
from auditor.scan.files import classify  # noqa: E402
from auditor.scan.interface import Origin, RawFinding, Scanner, ScanTarget  # noqa: E402
from auditor.scan.pycoding import CodingScanner  # noqa: E402
from auditor.scan.semgrep import SemgrepScanner  # noqa: E402
from auditor.scan.sources import SourceJudge  # noqa: E402
from auditor.spec import POLICIES_DIR, load_profile  # noqa: E402

POPULAR = POLICIES_DIR / "popular-packages.txt"
NOT_INTENT = frozenset({Category.NETWORK, Category.UNSAFE_DESERIALIZATION, Category.PROCESS_EXEC,
                        Category.FILESYSTEM, Category.BINARY_ARTIFACT})
MAX_MEMBER = 1 << 20  # larger members are data, not code a reviewer reads
BATCH = 1500  # files per scanner run (whole packages)
ERRORS: dict[str, int] = {}  # scanner -> targets it could not fully check (parse errors...)


@dataclass(frozen=True)
class Blocked:
    package: str
    path: str
    line: int
    rule: str
    message: str


def names() -> list[str]:
    out: list[str] = []
    for line in POPULAR.read_text(encoding="utf-8").splitlines():
        name = line.split("#", 1)[0].strip()
        if name and name not in out:
            out.append(name)
    return out


def sdist_link(name: str) -> tuple[str, str, int | None] | None:
    """(url, file name, size or None) of the newest sdist, from pip's PackageFinder."""
    from pip._internal.index.collector import LinkCollector
    from pip._internal.index.package_finder import PackageFinder
    from pip._internal.models.index import PyPI
    from pip._internal.models.search_scope import SearchScope
    from pip._internal.models.selection_prefs import SelectionPreferences
    from pip._internal.network.session import PipSession

    scope = SearchScope.create(find_links=[], index_urls=[PyPI.simple_url], no_index=False)
    finder = PackageFinder.create(LinkCollector(PipSession(), scope),
                                  SelectionPreferences(allow_yanked=False))
    sdists = [c for c in finder.find_all_candidates(name)
              if c.link.filename.endswith(".tar.gz") and not c.version.is_prerelease]
    if not sdists:
        return None
    best = max(sdists, key=lambda c: c.version)
    return str(best.link.url), best.link.filename, None


def fetch(count: int, max_mb: float, work: Path, offline: bool) -> list[tuple[str, Path]]:
    work.mkdir(parents=True, exist_ok=True)
    got: list[tuple[str, Path]] = []
    for name in names():
        if len(got) >= count:
            break
        cached = sorted(work.glob(f"{name}__*.tar.gz"))
        if cached:
            path = cached[-1]
        elif offline or (work / f"{name}__none.skip").exists():
            continue
        else:
            link = sdist_link(name)
            if link is None:
                print(f"note: {name}: no sdist on the index", file=sys.stderr)
                (work / f"{name}__none.skip").write_text("no sdist\n")
                continue
            url, filename, _size = link
            path = work / f"{name}__{filename}"
            tmp = path.with_suffix(".part")
            print(f"downloading {url}", file=sys.stderr)
            urllib.request.urlretrieve(url, tmp)  # noqa: S310 - the index's https address
            tmp.rename(path)
        if path.stat().st_size > max_mb * 1e6:
            print(f"note: {name}: sdist {path.stat().st_size / 1e6:.1f} MB > {max_mb} MB, left "
                  "out", file=sys.stderr)
            continue
        got.append((name, path))
    return got


def targets_of(name: str, sdist: Path) -> list[ScanTarget]:
    """The sdist's text members as scan targets (read from the archive, never unpacked)."""
    out: list[ScanTarget] = []
    with tarfile.open(sdist, "r:gz") as tar:
        for m in tar:
            if not m.isfile() or m.size > MAX_MEMBER:
                continue
            path = m.name.split("/", 1)[1] if "/" in m.name else m.name
            f = tar.extractfile(m)
            if f is None or not path:
                continue
            r = classify(path, f.read())
            if r.text is None:
                continue
            out.append(ScanTarget(key=f"{name}:{path}", path=path, origin=Origin.BUNDLE,
                                  sha256=r.sha256, family=r.family, text=r.text))
    return sorted(out, key=lambda t: t.key)


def scan(targets: list[ScanTarget], work: Path, rules: Path | None = None
         ) -> list[tuple[ScanTarget, Scanner, RawFinding]]:
    """The scanners over the targets, in batches of whole packages (one semgrep run over
    every file of the corpus outlives any timeout on a shared machine)."""
    batches: list[list[ScanTarget]] = [[]]
    for t in targets:
        if len(batches[-1]) >= BATCH and t.key.split(":", 1)[0] != batches[-1][-1].key.split(
                ":", 1)[0]:
            batches.append([])
        batches[-1].append(t)
    out: list[tuple[ScanTarget, Scanner, RawFinding]] = []
    for n, batch in enumerate(batches):
        print(f"batch {n + 1}/{len(batches)}: {len(batch)} files", file=sys.stderr)
        out += _scan_batch(batch, work / str(n), rules)
    return out


def _scan_batch(targets: list[ScanTarget], work: Path, rules: Path | None
                ) -> list[tuple[ScanTarget, Scanner, RawFinding]]:
    profile = load_profile("vllm")
    scanners: list[Scanner] = [
        SemgrepScanner(rules, timeout=3600, jobs=1, processes=2),
        BuiltinScanner(profile.request_logging_flags, profile.telemetry_env),
        CodingScanner(), CMakeScanner()]
    expanded = derived.expand(targets)
    owner = {t.key: t for t in targets}
    by_key = {t.key: t for t in expanded}
    out: list[tuple[ScanTarget, Scanner, RawFinding]] = []
    for s in scanners:
        mine = [t for t in expanded if (s.reads_raw or not t.superseded) and s.accepts(t)]
        run = s.scan(mine, work / s.name)
        for key, err in sorted(run.errors.items()):
            print(f"note: {s.name} could not fully check {key}: {err.reason[:100]}",
                  file=sys.stderr)
        ERRORS[s.name] = ERRORS.get(s.name, 0) + len(run.errors)
        for key, found in run.findings.items():
            t = by_key[key]
            home = owner[key.rsplit("#", 1)[0]] if t.derived else owner[key]
            for f in found:
                line = t.source_line(f.line)
                out.append((home, s, RawFinding(
                    rule=f.rule, category=f.category, severity=f.severity, line=line,
                    end_line=max(line, t.source_line(f.end_line)), message=f.message,
                    help=f.help)))
    return out


def blocked(found: list[tuple[ScanTarget, Scanner, RawFinding]]) -> list[Blocked]:
    policy = load_policy(POLICIES_DIR / "default.toml")
    judge = SourceJudge(())  # an empty upstream: only the default index is known
    out: list[Blocked] = []
    for t, _s, f in found:
        rule, message = f.rule, f.message
        if SourceJudge.applies(rule):
            code = "\n".join(t.lines[f.line - 1:max(f.line, f.end_line)])
            v = judge.judge(code, t.text)
            rule, message = f"{rule}.{v.suffix}", v.message
        action = docs.ceiling(t.path, policy.action_for(f.category, t.path, rule))
        if action is Action.BLOCK and f.category not in NOT_INTENT and "bind-all" not in rule:
            out.append(Blocked(t.key.split(":", 1)[0], t.path, f.line, rule, message))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=80)
    ap.add_argument("--max-mb", type=float, default=6.0)
    ap.add_argument("--work", type=Path, default=HERE / "work" / "benign")
    ap.add_argument("--offline", action="store_true", help="only the sdists already in WORK")
    ap.add_argument("--rules", type=Path, default=None,
                    help="semgrep rules folder (default: the shipped policies/semgrep/rules)")
    ap.add_argument("--only", nargs="*", default=None,
                    help="scan only these packages of the selection (to re-check after tuning)")
    args = ap.parse_args()

    sdists = fetch(args.count, args.max_mb, args.work, args.offline)
    if args.only is not None:
        sdists = [(n, p) for n, p in sdists if n in args.only]
    targets = [t for name, path in sdists for t in targets_of(name, path)]
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="benign-") as tmp:
        found = scan(targets, Path(tmp), args.rules)
    elapsed = time.monotonic() - start
    blocks = blocked(found)
    per: dict[str, list[Blocked]] = defaultdict(list)
    for b in blocks:
        per[b.package].append(b)
    share = len(per) / len(sdists) if sdists else 0.0
    lines = [
        "## Benign corpus: popular sdists blocked for an intent claim (issue 29)",
        "",
        f"Command: `python benchmarks/benign_corpus.py --count {args.count} --max-mb "
        f"{args.max_mb:g}{' --rules ' + str(args.rules) if args.rules else ''}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}): "
        f"{len(sdists)} sdists, {len(targets)} text files, {len(found)} raw findings, scan "
        f"{elapsed:.0f} s; targets a scanner could not fully check: "
        + (", ".join(f"{k} {v}" for k, v in sorted(ERRORS.items())) or "none") + ".",
        "",
        f"- packages blocked for an intent claim: **{len(per)}/{len(sdists)} = {share:.1%}** "
        "(target <= 5 %)",
        "- packages: " + ", ".join(n for n, _p in sdists),
    ]
    if per:
        lines += ["", "Blocked (package: rule at path:line):", ""]
        for name in sorted(per):
            for rule in sorted({b.rule for b in per[name]}):
                where = [f"{b.path}:{b.line}" for b in per[name] if b.rule == rule]
                lines.append(f"- {name}: `{rule}` at {', '.join(where[:3])}"
                             + (f" (+{len(where) - 3})" if len(where) > 3 else ""))
    print("\n".join(lines))
    return 0 if share <= 0.05 else 1


if __name__ == "__main__":
    os.environ.setdefault("SEMGREP_ENABLE_VERSION_CHECK", "0")
    sys.exit(main())
