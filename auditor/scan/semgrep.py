"""The semgrep scanner: semgrep over every target it accepts, in one process or (with much to
scan) in ``processes`` side by side, each over a share of the files.

Semgrep runs offline (``--metrics=off``, no version check, private ``HOME``), ignores no file
(``--x-ignore-semgrepignore-files``, ``--no-git-ignore``, no size limit) and honours no ``nosemgrep``
comment (``--disable-nosem``: the code under audit must not silence its auditor). Every target must
appear in ``paths.scanned``; a parse error, a timeout or a rule error makes the files concerned
not checked. CUDA files are scanned as C++ through :func:`auditor.scan.cuda.cuda_to_cpp`, which
keeps line numbers, so findings map back to the ``.cu`` file line for line.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from auditor import gitio
from auditor.errors import ToolError
from auditor.model import Category, Severity
from auditor.redaction import cut
from auditor.scan import pyshim, taintviews
from auditor.scan import rules as rules_mod
from auditor.scan.files import FAMILIES, canonical_language
from auditor.scan.gating import gated_rules, stage_plan, staged_plan, ungated
from auditor.scan.interface import (
    FileError,
    RawFinding,
    Scanner,
    ScannerRun,
    ScanTarget,
    all_failed,
)
from auditor.scan.plan import ScanPlan, semgrep_plan, widened
from auditor.scan.staging import shares
from auditor.scan.tools import ExternalTool, sealed_env

# semgrep error types that depend on the file and the rules only (worth caching)
_LASTING_ERRORS = ("PartialParsing", "Syntax error", "Lexical error", "Other syntax error",
                   "Parse error")
_SEVERITY = {"ERROR": Severity.HIGH, "WARNING": Severity.MEDIUM, "INFO": Severity.LOW}
_ARGV_BUDGET = 512 * 1024  # beyond this many bytes of target names, pass the staging roots
# semgrep's two command lines: "osemgrep" is `semgrep scan --experimental`, the OCaml one (it starts
# in ~0.3 s); "pysemgrep" the Python one (5-8 s of start-up, most of it imports: jsonschema, and
# through it rfc3987_syntax building a parser). tests/scan/test_scan_osemgrep.py checks that both
# give the same findings and the same errors on every rule fixture, staged and gated as the scan
# does it, and on files they cannot parse.
CLIS = ("osemgrep", "pysemgrep")


def _cuda_shim() -> tuple[Callable[[str], str], str]:
    """The CUDA -> C++ shim and a digest of its source (part of the cache key)."""
    from auditor.scan import cuda

    src = Path(cuda.__file__).read_bytes()
    return cuda.cuda_to_cpp, hashlib.sha256(src).hexdigest()[:16]


class SemgrepScanner(ExternalTool, Scanner):
    name = "semgrep"

    def __init__(self, rules_dir: Path | None = None, *, timeout: int = 600, jobs: int = 1,
                 rule_timeout: int = 30, cli: str = "osemgrep", views: bool = True,
                 processes: int = 1, waiting: Callable[[], None] = lambda: None) -> None:
        if cli not in CLIS:
            raise ValueError(f"semgrep command line {cli!r}: one of {', '.join(CLIS)}")
        self.cli = cli
        # taint rules read views of Python files (auditor.scan.taintviews); off: files whole
        self.views = views
        self.rules_dir = (rules_dir or rules_mod.RULES_DIR).resolve()
        self.meta = rules_mod.load_rule_meta(self.rules_dir)
        self.ruleset = rules_mod.ruleset_hash(self.rules_dir)
        self.languages = frozenset(canonical_language(lang) for m in self.meta.values()
                                   for lang in m.languages)
        # languages with rules that parse them (generic/regex rules read any text)
        self.parsed_languages = self.languages - {"generic", "regex", "none"}
        # path globs of the language-blind rules aimed at certain files (pip.conf, CMake ...)
        self.aimed_globs = tuple(sorted({g for m in self.meta.values()
                                         if {canonical_language(x) for x in m.languages}
                                         & {"generic", "regex"}
                                         for g in m.paths_include}))
        # a language-blind rule with no ``paths``: it reads every file
        self._blind_everywhere = any(
            {canonical_language(x) for x in m.languages} & {"generic", "regex"}
            and not m.paths_include for m in self.meta.values())
        self.timeout = timeout
        self.jobs = max(1, jobs)  # semgrep's --jobs, in each process
        # semgrep processes side by side over a share of the files each, when there is enough
        # to scan (:func:`auditor.scan.staging.shares`)
        self.processes = max(1, processes)
        self.rule_timeout = rule_timeout
        self._shim, self._shim_digest = _cuda_shim()
        # called before the longest wait of a scan: the run's background work may start then
        # (``Context.background.waiting``, auditor.background)
        self._waiting = waiting

    def options_key(self) -> str:
        flags = ["--disable-nosem", "--max-target-bytes=0", f"--timeout={self.rule_timeout}",
                 self.cli]
        return hashlib.sha256(json.dumps([self.ruleset, flags]).encode()).hexdigest()

    def target_options(self, target: ScanTarget) -> str:
        if target.family == "cuda":
            return f"cuda-shim={self._shim_digest}"
        if target.family != "python":
            return ""
        views = f";taint-views={taintviews.digest()}" if self.views else ""
        return f"py-shim={pyshim.digest()}{views}"

    def accepts(self, target: ScanTarget) -> bool:
        """Whether some rule reads ``target`` in plain semgrep's plan (its language, or a
        language-blind rule without ``paths`` or whose ``paths: include`` names it): semgrep
        leaves a file no rule reads out of ``paths.scanned``, which would be "not checked"."""
        if target.family is not None and FAMILIES[target.family][0] & self.languages:
            return True
        from auditor.scan.coverage import aimed_at

        return self._blind_everywhere or aimed_at(target.path, self.aimed_globs)

    def coverage(self, target: ScanTarget) -> str | None:
        """``semgrep:<family>`` when rules parse the target's language (``(cuda shim)``,
        ``(shim)`` (:mod:`auditor.scan.pyshim`) and ``(derived)`` say how it was read);
        ``semgrep:generic`` when language-blind rules are aimed at files like it by their
        ``paths: include``; None otherwise."""
        from auditor.scan.coverage import aimed_at

        if not self.accepts(target):
            return None
        how = "(derived)" if target.derived else ""
        if target.family is not None and FAMILIES[target.family][0] & self.parsed_languages:
            lang = "cpp(cuda shim)" if target.family == "cuda" else target.family
            if target.family == "python" and pyshim.rewrites(target.text):
                lang = "python(shim)"
            return f"semgrep:{lang}{how}"
        if aimed_at(target.path, self.aimed_globs):
            return f"semgrep:generic{how}"
        return None

    def _transform(self, target: ScanTarget) -> str:
        if target.family == "cuda":
            return str(self._shim(target.text))
        if target.family == "python":
            return pyshim.semgrep_python(target.text)
        return target.text

    def plan(self, files: Sequence[ScanTarget]) -> ScanPlan:
        """Each rule's reading of each target (:mod:`auditor.scan.plan`): plain semgrep's, less
        what the prefilters and the taint views leave out; every rule reads whole when the rules
        cannot be given as one JSON document (then they are not gated)."""
        if rules_mod.combined_rules_json(self.rules_dir) is None:
            return semgrep_plan(files, self.meta, self.name)
        return staged_plan(files, self.meta, views=self.views)

    def scan(self, files: Sequence[ScanTarget], workdir: Path) -> ScannerRun:
        if not files:
            return ScannerRun(findings={}, errors={})
        root = workdir / "semgrep"
        # the rules as one JSON file when that is exact (semgrep loads it ~2 s faster than the
        # folder of YAML files; see auditor.scan.rules.combined_rules_json), each prefiltered rule
        # limited to the copies the plan gives it (auditor.scan.gating); else the folder, ungated
        combined = rules_mod.combined_rules_json(self.rules_dir)
        plan = self.plan(files)
        staging = stage_plan(files, root / "t", self._transform, self.meta, plan)
        config = self.rules_dir
        if combined is not None:
            config = root / "rules.json"
            doc = json.loads(combined)
            gated = gated_rules(doc, self.meta, staging)
            plan = widened(plan, ungated(doc, gated, self.meta), "ungated")
            config.write_text(json.dumps(gated, ensure_ascii=False, allow_nan=False),
                              encoding="utf-8")
        staged = staging.files
        groups = shares(list(staged), root / "t", self.processes)
        if self.cli == "osemgrep":
            # osemgrep anchors `paths: include` patterns (the gated rules' folders) at the
            # project's git root; outside a repository it matches only file names (measured)
            try:
                gitio.run(["git", "init", "-q", "--template=", str(root / "t")],
                          env=sealed_env(root / "home"), check=True)
            except ToolError as exc:
                return all_failed(files, f"semgrep: {exc.message}")
        self._waiting()  # the longest wait of a scan: others' work may run now
        if (len(groups) > 1 and self.cli == "osemgrep"
                and max(sum(len(t) + 1 for t in g) for g in groups) <= _ARGV_BUDGET):
            # one semgrep process per group, each on one core: semgrep's own --jobs=2 costs
            # ~40 % more CPU than two processes over half the files each (benchmarks/RESULTS.md)
            with ThreadPoolExecutor(max_workers=len(groups)) as threads:
                runs = list(threads.map(
                    lambda n_g: self._run_one(config, root, n_g[1], {r: staged[r] for r in n_g[1]},
                                              home=root / f"home{n_g[0]}"),
                    enumerate(groups)))
            return _with_plan(_merged(runs), plan)
        targets = sorted(staged)
        if sum(len(t) + 1 for t in targets) > _ARGV_BUDGET:
            targets = sorted({t.split("/", 1)[0] for t in staged})
        return _with_plan(self._run_one(config, root, targets, staged, home=root / "home"), plan)

    def _run_one(self, config: Path, root: Path, targets: Sequence[str],
                 staged: Mapping[str, ScanTarget], *, home: Path) -> ScannerRun:
        """One semgrep process over ``targets`` (staged names, or staging folders), its answers
        for the ``staged`` copies."""
        argv = [
            self.exe, "scan", *(["--experimental"] if self.cli == "osemgrep" else []),
            "--json", "--metrics=off", "--disable-version-check",
            "--config", str(config), "--no-rewrite-rule-ids", "--disable-nosem",
            "--x-ignore-semgrepignore-files", "--no-git-ignore", "--max-target-bytes=0",
            f"--timeout={self.rule_timeout}", f"--jobs={self.jobs}", *targets,
        ]
        try:
            res = gitio.run(argv, cwd=root / "t", env=sealed_env(home), timeout=self.timeout,
                            check=False)
        except ToolError as exc:
            return all_failed(list(staged.values()), f"semgrep: {exc.message}")
        try:
            doc = json.loads(res.stdout)
            if not isinstance(doc, dict):
                raise ValueError("not an object")
        except ValueError:
            tail = " ".join(res.stderr.strip().splitlines()[-2:])[:300]
            return all_failed(list(staged.values()),
                              f"semgrep exited {res.returncode} without a JSON report"
                              + (f": {tail}" if tail else ""))
        return self._parse(doc, staged)

    def _parse(self, doc: Mapping[str, Any], staged: Mapping[str, ScanTarget]) -> ScannerRun:
        by_rel = {posixpath.normpath(k): v for k, v in staged.items()}

        def target_of(path: Any) -> ScanTarget | None:
            return by_rel.get(posixpath.normpath(str(path))) if path else None

        errors: dict[str, FileError] = {}
        global_error: str | None = None
        for err in doc.get("errors") or []:
            if not isinstance(err, dict):
                continue
            kind = err.get("type")
            kind_name = str(kind[0] if isinstance(kind, list) and kind else kind)
            message = cut(" ".join(str(err.get("message", "")).split()), 300)
            paths = {err.get("path")} | {s.get("file") for s in err.get("spans") or []
                                         if isinstance(s, dict)}
            hit = [t for t in (target_of(p) for p in paths) if t is not None]
            if hit:
                for t in hit:
                    lines = _partial_lines(err, t, target_of) if kind_name == "PartialParsing" \
                        else ()
                    # the message names the staged copy ("g0/b/<path>"): name the bundle's file
                    shown = message
                    for rel, staged_t in by_rel.items():
                        if staged_t is t:
                            shown = shown.replace(rel, t.path)
                    errors[t.key] = FileError(f"semgrep {kind_name}: {shown}",
                                              lasting=kind_name in _LASTING_ERRORS, lines=lines)
            else:
                global_error = f"semgrep {kind_name}: {message}"
        if global_error is not None:
            return all_failed(list(staged.values()), global_error)

        scanned = {posixpath.normpath(p) for p in (doc.get("paths") or {}).get("scanned") or []}
        for rel, t in by_rel.items():
            if rel not in scanned and t.key not in errors:
                errors[t.key] = FileError("semgrep did not scan it (absent from paths.scanned)")

        findings: dict[str, list[RawFinding]] = {t.key: [] for t in staged.values()
                                                 if t.key not in errors}
        for r in doc.get("results") or []:
            owner = target_of(r.get("path"))
            if owner is not None:
                findings.setdefault(owner.key, []).append(self._finding(r))
        return ScannerRun(findings={k: tuple(v) for k, v in findings.items()}, errors=errors)

    def _finding(self, r: Mapping[str, Any]) -> RawFinding:
        check_id = str(r.get("check_id", ""))
        rule = rules_mod.canonical_rule_id(check_id, self.meta) or check_id
        meta = self.meta.get(rule)
        extra = r.get("extra") or {}
        if meta is not None:
            category, severity, help_text = meta.category, meta.severity, meta.help
        else:  # a rule auditor does not know: a human must look at it
            category = Category.POLICY
            severity = _SEVERITY.get(str(extra.get("severity")), Severity.MEDIUM)
            help_text = ""
        line = int((r.get("start") or {}).get("line", 1))
        end = int((r.get("end") or {}).get("line", line))
        message = " ".join(str(extra.get("message") or (meta.message if meta else rule)).split())
        return RawFinding(rule=rule, category=category, severity=severity, line=line,
                          end_line=max(line, end), message=cut(message, 500), help=help_text)


def _with_plan(run: ScannerRun, plan: ScanPlan) -> ScannerRun:
    return replace(run, plan=plan)


def _merged(runs: Sequence[ScannerRun]) -> ScannerRun:
    """The runs of semgrep processes over shares of the copies, as one: a file's findings from
    every copy of it, its first error (an error in any copy leaves the file not checked)."""
    findings: dict[str, list[RawFinding]] = {}
    errors: dict[str, FileError] = {}
    for run in runs:
        for key, found in run.findings.items():
            findings.setdefault(key, []).extend(found)
        for key, err in run.errors.items():
            errors.setdefault(key, err)
    return ScannerRun(findings={k: tuple(v) for k, v in findings.items()}, errors=errors)


def _partial_lines(err: Mapping[str, Any], target: ScanTarget,
                   target_of: Any) -> tuple[tuple[int, int], ...]:
    """The line ranges a partial parse skipped (its spans in ``target``); () if it names none."""
    out: list[tuple[int, int]] = []
    for span in err.get("spans") or []:
        if not isinstance(span, dict) or target_of(span.get("file")) is not target:
            continue
        try:
            start = int((span.get("start") or {})["line"])
            end = int((span.get("end") or {}).get("line", start))
        except (KeyError, TypeError, ValueError):
            return ()  # a span we cannot read: the whole file stays unchecked
        out.append((start, max(start, end)))
    return tuple(sorted(out))
