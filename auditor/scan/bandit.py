"""The bandit scanner: only Python targets, only the tests that matter for this audit.

Bandit complements the semgrep rules (it does not flag ``socket`` or ``requests``): exec/eval,
pickle/marshal/yaml/torch loads, subprocess and shell use, temporary files and permissions, urllib
and other clear-text clients, trojan-source characters. ``# nosec`` comments are ignored
(``--ignore-nosec``): the code under audit must not silence its auditor. A file bandit cannot parse
is not checked; a bandit crash leaves every file it was given not checked.

Bandit reads each Python file as its *view* (:mod:`auditor.scan.banditviews`): the function bodies
none of these tests can match left out, lines in place; the results are the file's. A file in
which none of them can match anywhere (none of the words they need, no bidirectional control
character, and it compiles) is not given to bandit at all: its answer, no finding, is known
(about two thirds of vLLM's files). With much to scan, the files are shared among ``processes``
views processes, then what is left among as many bandits, side by side.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from auditor import gitio
from auditor.errors import ToolError
from auditor.model import Category, Severity
from auditor.redaction import cut
from auditor.scan import banditviews
from auditor.scan.banditwords import triggers
from auditor.scan.interface import (
    FileError,
    RawFinding,
    Scanner,
    ScannerRun,
    ScanTarget,
    all_failed,
)
from auditor.scan.plan import ALL, How, Reading, ScanPlan, Why, whole_plan
from auditor.scan.staging import shares, stage
from auditor.scan.tools import ExternalTool, sealed_env

#: bandit test id -> (category, name); the tests we run, every other test stays off.
#: Findings get rule ids like the semgrep rules': ``<category>.bandit.<id>-<name>``.
TESTS: dict[str, tuple[Category, str]] = {
    "B102": (Category.PROCESS_EXEC, "exec"),
    "B103": (Category.FILESYSTEM, "chmod-permissive"),
    "B108": (Category.FILESYSTEM, "fixed-temp-path"),  # /tmp, /var/tmp, /dev/shm names
    "B113": (Category.NETWORK, "requests-call"),  # any requests/httpx call is outbound
    "B202": (Category.FILESYSTEM, "tar-extractall"),
    "B301": (Category.UNSAFE_DESERIALIZATION, "pickle"),  # pickle, cPickle, dill, shelve
    "B302": (Category.UNSAFE_DESERIALIZATION, "marshal"),
    "B306": (Category.FILESYSTEM, "mktemp"),
    "B307": (Category.PROCESS_EXEC, "eval"),
    "B310": (Category.NETWORK, "urlopen"),
    "B312": (Category.NETWORK, "telnetlib"),
    "B321": (Category.NETWORK, "ftplib"),
    "B506": (Category.UNSAFE_DESERIALIZATION, "yaml-load"),
    "B601": (Category.PROCESS_EXEC, "paramiko-exec"),
    "B602": (Category.PROCESS_EXEC, "subprocess-shell"),
    "B603": (Category.PROCESS_EXEC, "subprocess"),
    "B604": (Category.PROCESS_EXEC, "shell-true"),
    "B605": (Category.PROCESS_EXEC, "os-system"),
    "B606": (Category.PROCESS_EXEC, "os-exec-spawn"),
    "B607": (Category.PROCESS_EXEC, "partial-path"),
    "B609": (Category.PROCESS_EXEC, "wildcard-injection"),
    "B612": (Category.NETWORK, "logging-listen"),
    "B613": (Category.OBFUSCATION, "trojan-source"),  # bidirectional control characters
    "B614": (Category.UNSAFE_DESERIALIZATION, "torch-load"),  # without weights_only
}
_SEVERITY = {"HIGH": Severity.HIGH, "MEDIUM": Severity.MEDIUM, "LOW": Severity.LOW}
_LASTING = ("syntax error", "exception while scanning")
# bandit and its views run beside semgrep, which takes longer: at a lower priority they give way
# to semgrep and to the scan's own Python (the staging semgrep waits for), and take what is left
_NICENESS = 10
T = TypeVar("T")


class BanditScanner(ExternalTool, Scanner):
    name = "bandit"

    def __init__(self, *, timeout: int = 600, views: bool = True, processes: int = 1) -> None:
        self.timeout = timeout
        self.views = views  # False: every file whole (the views' own tests compare the two)
        # bandits side by side over a share of the files each, when there is enough to scan
        # (:func:`auditor.scan.staging.shares`)
        self.processes = max(1, processes)

    def options_key(self) -> str:
        return hashlib.sha256(json.dumps([sorted(TESTS), "--ignore-nosec"]).encode()).hexdigest()

    def target_options(self, target: ScanTarget) -> str:
        # views give the answers whole files give; the key names them (and what they read from
        # the installed bandit) all the same, without importing bandit on a warm run
        return f"bandit-views={banditviews.digest()}" if self.views else ""

    def accepts(self, target: ScanTarget) -> bool:
        return target.family == "python"

    def coverage(self, target: ScanTarget) -> str | None:
        return ("bandit:python(derived)" if target.derived else "bandit:python") \
            if self.accepts(target) else None

    def _views_sound(self) -> bool:
        """Views only when what they need was read from the bandit that runs
        (:func:`auditor.scan.banditwords.triggers`); else every file whole."""
        try:
            return self.views and triggers(self.version()) is not None
        except Exception:  # noqa: BLE001 - no version to compare: the plain path
            return False

    def plan(self, files: Sequence[ScanTarget]) -> ScanPlan:
        """Each Python target read whole, as its view, or not at all (no test can match in it:
        :func:`auditor.scan.banditviews.reading_of`, the reducer :meth:`scan` runs out of
        process)."""
        if not self._views_sound():
            return whole_plan(self.name, files)
        return ScanPlan.of({t.key: (_reading(banditviews.reading_of(t.text.encode("utf-8"))[0]),)
                            for t in files})

    def _rewrite_as_views(self, root: Path, rels: list[str]) -> dict[str, str]:
        """Each staged file replaced by its view, in a Python process of its own (parsing holds
        the interpreter lock semgrep's staging needs); returns how each is read
        (:func:`auditor.scan.banditviews.reading_of`). Should it fail, the files it did not
        reach are read whole, with the same results, and every file is read."""
        whole = {rel: banditviews.WHOLE for rel in rels}
        try:
            res = gitio.run([sys.executable, "-P", "-m", "auditor.scan.banditviews", str(root)],
                            input="\0".join(rels), timeout=self.timeout, check=False,
                            niceness=_NICENESS)
        except ToolError:
            return whole
        out = res.stdout if isinstance(res.stdout, str) else ""
        if res.returncode != 0 or (out and not out.endswith("\0")):
            return whole  # an answer cut short says nothing
        got = dict(item.split(":", 1)[::-1] for item in out.split("\0")[:-1] if ":" in item)
        return {rel: got.get(rel, banditviews.WHOLE) for rel in rels}

    def _views_then_bandit(self, root: Path, rels: list[str]) -> tuple[dict[str, Any] | str,
                                                                       dict[str, str]]:
        """bandit's report over the staged ``rels`` read as their views, and how each was read;
        a file no test can match in is not given to bandit: its answer is known (no finding).
        With much to read, a views process per share of the files, then a bandit per share of
        what is left (shared again: the views leave some shares with more than others), side by
        side."""
        how = {rel: banditviews.WHOLE for rel in rels}
        if self._views_sound():
            for part in self._each_share(root, rels,
                                         lambda share: self._rewrite_as_views(root / "t", share)):
                how.update(part)
        quiet = {rel for rel, h in how.items() if h == banditviews.NOTHING}
        docs = self._each_share(root, sorted(set(rels) - quiet),
                                lambda share: self._run(root, share))
        failed = next((d for d in docs if isinstance(d, str)), None)
        if failed is not None or len(docs) == 1:
            return (failed if failed is not None else docs[0]), how
        return {"results": [r for d in docs if isinstance(d, dict) for r in d.get("results") or []],
                "errors": [e for d in docs if isinstance(d, dict)
                           for e in d.get("errors") or []]}, how

    def _each_share(self, root: Path, rels: list[str],
                    work: Callable[[list[str]], T]) -> list[T]:
        groups = shares(rels, root / "t", self.processes) if rels else [rels]
        if len(groups) == 1:
            return [work(groups[0])]
        with ThreadPoolExecutor(max_workers=len(groups)) as threads:
            return list(threads.map(work, groups))

    def _run(self, root: Path, rels: list[str]) -> dict[str, Any] | str:
        """bandit's JSON report over ``rels`` (staged below ``root/t``), or why there is none."""
        if not rels:
            return {"results": [], "errors": []}
        argv = [self.exe, "-f", "json", "-q", "--ignore-nosec", "-t", ",".join(sorted(TESTS)),
                *rels]
        try:
            res = gitio.run(argv, cwd=root / "t", env=sealed_env(root / "home"),
                            timeout=self.timeout, check=False, niceness=_NICENESS)
        except ToolError as exc:
            return f"bandit: {exc.message}"
        try:
            doc = json.loads(res.stdout)
            if res.returncode not in (0, 1) or not isinstance(doc, dict):
                raise ValueError("unexpected")
        except ValueError:
            tail = " ".join(res.stderr.strip().splitlines()[-2:])[:300]
            return f"bandit crashed (exit {res.returncode})" + (f": {tail}" if tail else "")
        return doc

    def scan(self, files: Sequence[ScanTarget], workdir: Path) -> ScannerRun:
        if not files:
            return ScannerRun(findings={}, errors={})
        root = workdir / "bandit"
        staged = stage(files, root / "t")
        doc, how = self._views_then_bandit(root, sorted(staged))
        if isinstance(doc, str):
            return all_failed(files, doc)
        plan = ScanPlan.of({t.key: (_reading(how[rel]),) for rel, t in staged.items()})
        by_rel = {posixpath.normpath(k): v for k, v in staged.items()}
        errors: dict[str, FileError] = {}
        for err in doc.get("errors") or []:
            t = by_rel.get(posixpath.normpath(str(err.get("filename", ""))))
            reason = cut(" ".join(str(err.get("reason", "error")).split()), 300)
            if t is None:
                return all_failed(files, f"bandit: {reason}")
            errors[t.key] = FileError(f"bandit: {reason}",
                                      lasting=reason.lower().startswith(_LASTING))
        findings: dict[str, list[RawFinding]] = {t.key: [] for t in files if t.key not in errors}
        for r in doc.get("results") or []:
            t = by_rel.get(posixpath.normpath(str(r.get("filename", ""))))
            test_id = str(r.get("test_id", ""))
            if t is None or t.key in errors or test_id not in TESTS:
                continue
            line = int(r.get("line_number", 1))
            rng = [int(x) for x in r.get("line_range") or [line]]
            message = " ".join(str(r.get("issue_text", "")).split())
            category, short = TESTS[test_id]
            findings[t.key].append(RawFinding(
                rule=f"{category.value}.bandit.{test_id.lower()}-{short}",
                category=category,
                severity=_SEVERITY.get(str(r.get("issue_severity")), Severity.MEDIUM),
                line=line, end_line=max([line, *rng]),
                message=cut(message, 500),
                help=f"bandit {test_id} ({r.get('test_name', '')}): {r.get('more_info', '')}",
            ))
        return ScannerRun(findings={k: tuple(v) for k, v in findings.items()}, errors=errors,
                          plan=plan)


def _reading(how: str) -> Reading:
    if how == banditviews.NOTHING:
        return Reading(BanditScanner.name, ALL, How.SKIPPED, Why.NOTHING_TO_MATCH)
    return Reading(BanditScanner.name, ALL, How.VIEW if how == banditviews.VIEW else How.WHOLE)
