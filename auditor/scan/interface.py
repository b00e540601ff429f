"""The Scanner interface: what one static scanner is given and what it hands back.

A scanner sees :class:`ScanTarget` values (one text file each: the bundle's copy or, in ``full``
scope, upstream's copy of the same path) and returns a :class:`ScannerRun`: raw findings keyed by
target, and the targets it could not check, each with a reason. Raw findings carry no commit,
action, snippet or fingerprint: the engine adds those after the cache, from the target's text.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from auditor.model import Category, Severity

if TYPE_CHECKING:
    from auditor.scan.plan import ScanPlan


class Origin(StrEnum):
    """Whose copy of a path a target holds."""

    BUNDLE = "bundle"
    UPSTREAM = "upstream"


@dataclass(frozen=True)
class ScanTarget:
    """One text file to scan. ``key`` is unique in a run; ``path`` is the bundle path."""

    key: str
    path: str
    origin: Origin
    sha256: str
    family: str | None  # language family (files.family_of), None for other text
    text: str = field(repr=False, compare=False)
    # A derived target (see auditor.scan.derived) is another reading of the bundle file ``path``:
    # the shell text of a Dockerfile's instructions, a Python file decoded as the interpreter
    # decodes it. ``derived`` names the reading ("" for the file itself); ``line_map[i]`` is the
    # file's line for the target's line i + 1 (empty: the same line); ``covers`` are the file's
    # line ranges whose meaning the target carries (empty: every line).
    derived: str = ""
    line_map: tuple[int, ...] = field(default=(), repr=False, compare=False)
    covers: tuple[tuple[int, int], ...] = field(default=(), repr=False, compare=False)
    # True when a derived target replaces this one for every scanner that does not read raw
    # bytes (a Python file whose coding declaration makes its text something else)
    superseded: bool = False

    @property
    def lines(self) -> list[str]:
        from auditor.lines import split_lines

        return split_lines(self.text)

    def source_line(self, line: int) -> int:
        """The bundle file's line for the target's 1-based ``line``."""
        if not self.line_map:
            return line
        return self.line_map[min(max(line, 1), len(self.line_map)) - 1]


@dataclass(frozen=True)
class RawFinding:
    """What a scanner reports for one match, before attribution and policy."""

    rule: str
    category: Category
    severity: Severity
    line: int  # 1-based, in the target's own text
    end_line: int
    message: str
    help: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "category": self.category.value,
                "severity": self.severity.value, "line": self.line, "end_line": self.end_line,
                "message": self.message, "help": self.help}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> RawFinding:
        return cls(rule=str(d["rule"]), category=Category(d["category"]),
                   severity=Severity(d["severity"]), line=int(d["line"]),
                   end_line=int(d["end_line"]), message=str(d["message"]),
                   help=str(d.get("help", "")))


@dataclass(frozen=True)
class FileError:
    """Why a target was not checked. ``lasting`` errors (a parse error) may be cached;
    passing ones (a timeout, a crash) are tried again next run."""

    reason: str
    lasting: bool = False
    # a partial parse: only these 1-based line ranges (in the target's own lines) went unread;
    # empty means the whole target
    lines: tuple[tuple[int, int], ...] = ()
    # no other rule set reads what this check would have read (the code strings and command
    # lines of a Python file): a reason the scan is incomplete, never a note
    alone: bool = False


@dataclass(frozen=True)
class ScannerRun:
    """The outcome of one scanner over some targets: every target is in ``findings`` (possibly
    with none), in ``errors``, or in both (what a partial parse found, and why it is partial)."""

    findings: Mapping[str, tuple[RawFinding, ...]]  # target key -> findings
    errors: Mapping[str, FileError]  # target key -> why it was not checked
    # how each target was read, rule by rule (None: whole, by every check the scanner runs)
    plan: ScanPlan | None = field(default=None, compare=False)


class Scanner(ABC):
    """One static scanner. ``scan`` must account for every target it is given."""

    name: ClassVar[str]
    #: whether the scanner reads a target's raw text even when a derived target supersedes it
    reads_raw: ClassVar[bool] = False

    @abstractmethod
    def version(self) -> str:
        """The scanner's version (raises ToolMissing when it is not installed)."""

    @abstractmethod
    def options_key(self) -> str:
        """A digest of everything besides the version that changes results (rules, options)."""

    def target_options(self, target: ScanTarget) -> str:
        """Extra cache-key material for one target (e.g. the CUDA shim for ``.cu`` files)."""
        return ""

    @abstractmethod
    def accepts(self, target: ScanTarget) -> bool:
        """Whether this scanner has anything to say about the target."""

    def coverage(self, target: ScanTarget) -> str | None:
        """The rule set this scanner applies to ``target`` for its language, as a label such as
        ``semgrep:bash(derived)``, or None when it only runs language-blind checks on it (those
        do not count as covering the file; see auditor.scan.coverage)."""
        return None

    def plan(self, files: Sequence[ScanTarget]) -> ScanPlan:
        """How this scanner reads each of ``files`` (:mod:`auditor.scan.plan`); by default every
        check reads every file whole. A scanner with shortcuts overrides it, and :meth:`scan`
        runs its own plan."""
        from auditor.scan.plan import whole_plan

        return whole_plan(self.name, files)

    @abstractmethod
    def scan(self, files: Sequence[ScanTarget], workdir: Path) -> ScannerRun:
        """Scan ``files``; a file it could not check goes to ``errors``, never silently away."""


def all_failed(files: Sequence[ScanTarget], reason: str) -> ScannerRun:
    """A run in which nothing was checked (the tool is missing or crashed)."""
    return ScannerRun(findings={}, errors={t.key: FileError(reason) for t in files})
