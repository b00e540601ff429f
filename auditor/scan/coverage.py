"""Coverage: which rule sets read each scanned file, and which changed lines no rule set read.

Every file in scope has a *kind* (:func:`kind_of`): a language that needs rules (Python, C/C++,
CUDA, shell, Dockerfile, CMake, requirement files, YAML, configuration such as TOML/INI/.env, any
other code), or text with no executable meaning (Markdown, reStructuredText, plain text, licences,
ignore files and linter settings, chat templates, stylesheets) or data (JSON) that needs none; requirement files are read by the
deps stage (``deps:requirements``). A scanner covers a file when it
applies rules for the file's language to it or to a derived reading of it
(:meth:`~auditor.scan.interface.Scanner.coverage` gives the label, e.g. ``semgrep:bash(derived)``);
language-blind checks such as the long-literal check do not count.

:func:`assess` decides, per file, what is a reason the scan is incomplete and what is a note:

- a passing error (a timeout, a crash) leaves the file not checked, as always;
- a lasting error (a parse failure) is a *note* when every changed line it left unread is read by
  another rule set (semgrep's Dockerfile parser skipped lines that the derived shell reading
  carries), and a reason otherwise; one that no other rule set stands in for (``alone``: the code
  strings and command lines of a Python file this interpreter cannot parse) is always a reason;
- a changed, non-blank line of a file that needs rules and that no rule set read is a reason
  (``uncovered``).
"""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from auditor.lines import line_ranges as _ranges
from auditor.scan.interface import FileError, Scanner, ScannerRun, ScanTarget

#: kinds whose files have no executable meaning: no rules needed (documented in the README)
NO_RULES_NEEDED: Mapping[str, str] = {
    "text": "text: no rules needed",
    "data": "data: no rules needed",
    # requirement files are the deps stage's: it parses every line (pins, URLs, VCS references,
    # index options) and diffs them against upstream
    "requirements": "deps:requirements",
}
_TEXT_SUFFIXES = (".md", ".markdown", ".rst", ".txt", ".adoc", ".csv", ".tsv", ".svg",
                  ".jinja", ".jinja2", ".j2", ".gitignore", ".dockerignore", ".gitattributes",
                  ".helmignore", ".yapfignore", ".clang-format", ".shellcheckrc", ".gitkeep",
                  ".typed", ".css")
_TEXT_NAMES = ("license", "licence", "copying", "notice", "authors", "contributors", "codeowners",
               "changelog", "readme", "maintainers", ".gitignore", ".dockerignore",
               ".gitattributes", ".gitmodules", ".mailmap", "dco", "pkg-info", "manifest.in")
_DATA_SUFFIXES = (".jsonl", ".ndjson")
_CONFIG_SUFFIXES = (".toml", ".cfg", ".ini", ".conf", ".env", ".service", ".properties")
_CONFIG_NAMES = ("makefile", "gnumakefile", "procfile", ".env", "pip.conf", "uv.toml", ".condarc",
                 "condarc")
_REQUIREMENT_RE = ("requirements*.txt", "requirements*.in", "constraints*.txt", "*requirements.txt",
                   "requirements/*.txt", "requirements/*.in", "requirements/**/*.txt")


def kind_of(path: str, family: str | None) -> str:
    """What a text file is, for coverage: a language (``python``, ``cmake`` ...), ``config``,
    ``requirements``, ``text`` or ``data`` (no rules needed), or ``other`` (unknown: needs
    rules, fails closed)."""
    name = posixpath.basename(path).lower()
    if name == "cmakelists.txt" or name.endswith(".cmake"):
        return "cmake"
    if any(fnmatch.fnmatch(path.lower(), g) or fnmatch.fnmatch(name, g) for g in _REQUIREMENT_RE):
        return "requirements"
    if family == "json" or name.endswith(_DATA_SUFFIXES):
        return "data"
    if family is not None:
        return family
    if (name.endswith(_CONFIG_SUFFIXES) or name in _CONFIG_NAMES or name.startswith(".env")
            or name.endswith(".mk")):
        return "config"
    base = name.split(".", 1)[0]
    if name.endswith(_TEXT_SUFFIXES) or name in _TEXT_NAMES or base in _TEXT_NAMES:
        return "text"
    return "other"


def needs_rules(kind: str) -> bool:
    return kind not in NO_RULES_NEEDED


def aimed_at(path: str, globs: Iterable[str]) -> bool:
    """Whether a ``paths: include`` glob of a rule names this file (semgrep matches a glob
    against the path and its tail)."""
    name = posixpath.basename(path)
    for g in globs:
        g = g.lstrip("/")
        if fnmatch.fnmatch(path, g) or fnmatch.fnmatch(name, g) or fnmatch.fnmatch(
                path, "*/" + g):
            return True
    return False


Lines = frozenset[int]


@dataclass
class PathCoverage:
    """The coverage of one bundle file: labels, and for each line the labels that read it."""

    path: str
    kind: str
    n_lines: int
    labels: set[str] = field(default_factory=set)
    read_by: dict[int, set[str]] = field(default_factory=dict)  # line -> labels (all: key 0)

    def covered(self, line: int, besides: str | None = None) -> bool:
        labels = self.read_by.get(0, set()) | self.read_by.get(line, set())
        return bool(labels - ({besides} if besides else set()))


@dataclass(frozen=True)
class Assessment:
    coverage: Mapping[str, tuple[str, ...]]  # path -> labels
    uncovered: tuple[Mapping[str, object], ...]  # {"path", "language", "lines"}
    not_checked: Mapping[str, tuple[str, ...]]  # path -> reasons
    notes: tuple[str, ...]


def _fmt(ranges: Sequence[tuple[int, int]]) -> str:
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in ranges)


def _wanted(lines: Iterable[int], changed: set[int] | None, text: Sequence[str], *,
            every: bool) -> list[int]:
    """The non-blank lines among ``lines`` that must be read: the changed ones (every one, when
    ``every`` and the file is unchanged: ``changed`` None)."""
    return sorted(n for n in lines if (n in changed if changed is not None else every)
                  and n - 1 < len(text) and text[n - 1].strip())


def _target_lines(t: ScanTarget, n_lines: int, err: FileError | None) -> set[int] | None:
    """The bundle file's lines this target's scan read (None: every line)."""
    covers: set[int] | None = None
    if t.covers:
        covers = {n for a, b in t.covers for n in range(a, b + 1)}
    if err is None:
        return covers
    if not err.lines:
        return set()
    unread = {t.source_line(n) for a, b in err.lines for n in range(a, b + 1)}
    base = covers if covers is not None else set(range(1, n_lines + 1))
    return base - unread


def assess(files: Sequence[ScanTarget], targets: Sequence[ScanTarget],
           scanners: Sequence[Scanner], runs: Mapping[str, ScannerRun],
           gives: Callable[[Scanner, ScanTarget], bool],
           changed_lines: Callable[[ScanTarget], set[int] | None]) -> Assessment:
    """Coverage and the not-checked reasons of the bundle files ``files`` (their own targets and
    derived ones are in ``targets``). ``changed_lines(file)`` gives the lines the series changed
    (None: none need checking, e.g. an unchanged file in full scope)."""
    by_path: dict[str, list[ScanTarget]] = {}
    for t in targets:
        by_path.setdefault(t.path, []).append(t)
    coverage: dict[str, tuple[str, ...]] = {}
    uncovered: list[Mapping[str, object]] = []
    not_checked: dict[str, list[str]] = {}
    notes: list[str] = []
    for f in files:
        pc = PathCoverage(f.path, kind_of(f.path, f.family), len(f.lines))
        errors = _read_by(pc, by_path.get(f.path, []), scanners, runs, gives)
        coverage[f.path] = tuple(sorted(pc.labels)) if pc.labels else (
            (NO_RULES_NEEDED[pc.kind],) if pc.kind in NO_RULES_NEEDED else ())

        must_read = needs_rules(pc.kind) and not pc.read_by.get(0)
        changed = changed_lines(f) if errors or must_read else set()
        text = f.lines
        for s, t, err, label in errors:
            note = _harmless(f.path, pc, s, t, err, label, changed, text)
            if note is None:
                not_checked.setdefault(f.path, []).append(err.reason)
            else:
                notes.append(note)
        if must_read:
            gaps = [n for n in _wanted(range(1, pc.n_lines + 1), changed, text,
                                    every=False) if not pc.covered(n)]
            if gaps:
                ranges = _ranges(gaps)
                uncovered.append({"path": f.path, "language": pc.kind,
                                  "lines": [list(r) for r in ranges]})
                not_checked.setdefault(f.path, []).append(
                    f"no rule set reads its language ({pc.kind}) on changed line(s) "
                    f"{_fmt(ranges[:8])}{' ...' if len(ranges) > 8 else ''}")
    return Assessment(coverage=coverage, uncovered=tuple(uncovered),
                      not_checked={p: tuple(dict.fromkeys(r)) for p, r in not_checked.items()},
                      notes=tuple(notes))


_Error = tuple[Scanner, ScanTarget, FileError, str | None]


def _read_by(pc: PathCoverage, targets: Sequence[ScanTarget], scanners: Sequence[Scanner],
             runs: Mapping[str, ScannerRun],
             gives: Callable[[Scanner, ScanTarget], bool]) -> list[_Error]:
    """Record in ``pc`` which rule sets read which lines of the file (through each of its
    targets); the scanners' errors on those targets."""
    errors: list[_Error] = []
    for t in targets:
        for s in scanners:
            if not gives(s, t):
                continue
            err = runs[s.name].errors.get(t.key) if s.name in runs else None
            label = s.coverage(t)
            if err is not None:
                errors.append((s, t, err, label))
            if label is None:
                continue
            read = _target_lines(t, pc.n_lines, err)
            if read is None:
                pc.read_by.setdefault(0, set()).add(label)
                pc.labels.add(label)
            elif read:
                for n in read:
                    pc.read_by.setdefault(n, set()).add(label)
                pc.labels.add(label + ("(partial)" if err is not None else ""))
    return errors


def _harmless(path: str, pc: PathCoverage, s: Scanner, t: ScanTarget, err: FileError,
              label: str | None, changed: set[int] | None, text: Sequence[str]) -> str | None:
    """A note when scanner ``s``'s error on ``t`` loses nothing (a lasting error whose unread
    lines are no changed line, or are read by another rule set); None when the file is not
    checked because of it."""
    if not err.lasting or err.alone:
        return None
    unread = ({t.source_line(n) for a, b in err.lines for n in range(a, b + 1)}
              if err.lines else set(range(1, pc.n_lines + 1)))
    if t.covers:
        unread &= {n for a, b in t.covers for n in range(a, b + 1)}
    # only what this scanner could have said about those lines counts as lost
    lost = [n for n in _wanted(unread, changed, text, every=True) if not pc.covered(n)]
    if lost:
        return None
    where = f"lines {_fmt(_ranges(unread)[:8])}" if err.lines else "the file"
    others = sorted(x for x in pc.labels if label is None or not x.startswith(label))
    return (f"{path}: {s.name} left {where} unread ({err.reason[:160]}); "
            "no changed line there is left unread"
            + (f" (also read by {', '.join(others)})" if others else ""))
