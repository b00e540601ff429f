"""Derived scan targets: other readings of a bundle file, at the file's own line numbers.

Some files cannot be read by the scanners as they are, or mean something else than they look:

- a Dockerfile (:mod:`auditor.scan.dockerfile`): the shell text of its instructions becomes a
  ``bash`` target (and a heredoc fed to Python a ``python`` one) for the shell and environment
  rules, whatever semgrep's Dockerfile parser makes of the file itself;
- a file that holds command lines (:mod:`auditor.scan.cmdlines`: Makefile recipes, units' Exec*=,
  CI ``run:``, compose ``command:``, CMake ``COMMAND``, Python ``os.system``...): a ``bash``
  target with those command lines at their lines;
- every shell text (a script, or one of the readings above): its words as the shell reads them
  (:func:`auditor.scan.shellwords.view`), so ``cu''rl``, ``$c`` and ``eval`` spellings match;
- a Markdown or reStructuredText file (:mod:`auditor.scan.docs`): its shell code blocks as a
  ``bash`` target, at their lines;
- a ``.pth`` file: its ``import`` lines as Python (the other lines are paths), replacing the file;
- a Python file whose strings hold code that runs (:mod:`auditor.scan.pystrings`: given to
  ``exec``/``eval``/``compile``, to ``python -c``, or written to a file beside a call that runs
  one): that code as a ``python`` target at the strings' lines, and its command lines as ``bash``;
- a Python file with a coding declaration (:mod:`auditor.scan.pycoding`): the text the interpreter
  decodes replaces the file for every scanner that does not read raw bytes.

A derived target keeps the bundle path; findings map back through its ``line_map`` (identity for
the Dockerfile readings). Its cache identity is its own text plus :data:`DIGEST` (the source of the
derivations), like the CUDA shim's.

Deriving parses every Python file (the strings that run, the command lines it holds, its coding)
on every run, before the scan cache is asked: most of a warm audit's time. :class:`ReadingCache`
keeps each file's readings by content (:func:`reading_key`: its path, family and text, the code
of every scan module and auditor's version, the Python and PyYAML versions the parsers are);
:func:`expand` without one is the plain path it is compared with
(``tests/scan/test_scan_derived_cache.py``).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from auditor.fsutil import JsonStore
from auditor.lines import line_ranges as _ranges
from auditor.scan import cmake, cmdlines, dockerfile, docs, pool, pycoding, pystrings, shellwords
from auditor.scan.interface import ScanTarget

DOCKERFILE_READING = "dockerfile-{family}"
PYTHON_DECODED = "python-decoded"
COMMAND_LINES = "command-lines"
PTH_PYTHON = "pth-python"
PYTHON_STRINGS = "python-strings"
DOCS_SHELL = "docs-shell"


def _digest() -> str:
    h = hashlib.sha256()
    for mod in (dockerfile, pycoding, cmdlines, shellwords, cmake, docs, pystrings):
        h.update(Path(str(mod.__file__)).read_bytes())
    h.update(Path(__file__).read_bytes())
    return h.hexdigest()[:16]


DIGEST = _digest()


def expand(targets: Sequence[ScanTarget], cache: ReadingCache | None = None, *,
           jobs: int = 1, min_work: int | None = None) -> list[ScanTarget]:
    """Every target, followed by its derived targets (a superseded one is marked so); with a
    ``cache``, each file's readings are looked up by content first and stored when made. The
    readings not cached are made on ``jobs`` processes when there is enough text to pay for
    them (:func:`auditor.scan.pool.map_in_processes`, ``min_work`` bytes; parsing every Python
    file is pure per-file work): the same targets as made here (``tests/scan/test_scan_derived_cache.py``)."""
    made: dict[int, list[ScanTarget]] = {}
    todo: list[int] = []
    for i, t in enumerate(targets):
        got = cache.lookup(t) if cache is not None else None
        if got is None:
            todo.append(i)
        else:
            made[i] = got
    fresh = pool.map_in_processes(derive, [targets[i] for i in todo], workers=jobs,
                                  given=lambda t: t, work=lambda t: len(t.text),
                                  min_work=min_work)
    for i, extra in zip(todo, fresh, strict=True):
        made[i] = extra
        if cache is not None:
            cache.put(targets[i], extra)
    out: list[ScanTarget] = []
    for i, t in enumerate(targets):
        extra = made[i]
        if any(d.derived in (PYTHON_DECODED, PTH_PYTHON) for d in extra):
            t = replace(t, superseded=True)
        out.append(t)
        out.extend(extra)
    return out


def derive(t: ScanTarget) -> list[ScanTarget]:
    out = _readings(t)
    shells = [x for x in [t, *out] if x.family == "bash"]
    for x in shells:  # the words as the shell reads them, where that is not the text itself
        words, lines = shellwords.rewritten(x.text)
        # it carries the meaning of the lines it rewrote, the others stay with the text
        carried = {x.source_line(n) for n in lines}
        if x.covers:
            carried &= {n for a, b in x.covers for n in range(a, b + 1)}
        if carried:
            out.append(_target(t, (x.derived or "bash") + shellwords.VIEW_SUFFIX, "bash", words,
                               covers=_ranges(carried), line_map=x.line_map))
    return out


def _readings(t: ScanTarget) -> list[ScanTarget]:
    if t.family == "dockerfile":
        return [_target(t, DOCKERFILE_READING.format(family=r.family), r.family, r.text,
                        covers=r.covers) for r in dockerfile.readings(t.text)]
    if t.family == "python" and t.path.lower().endswith(".pth"):
        code = "".join((ln.lstrip() if re.match(r"\s*import[ \t]", ln) else "") + "\n"
                       for ln in t.lines)
        return [_target(t, PTH_PYTHON, "python", code)]
    if docs.is_doc(t.path):  # its shell code blocks (docs.ceiling caps their actions)
        block = docs.reading(t.path, t.text)
        return [] if block is None else [_target(t, DOCS_SHELL, "bash", block.text,
                                                 covers=block.covers)]
    out: list[ScanTarget] = []
    if t.family == "python":
        coding, decoded = pycoding.decoded_reading(t.text)
        if coding.error is not None:  # the interpreter refuses the file: it runs no command
            return out
        if decoded is not None:
            out.append(_target(t, PYTHON_DECODED, "python", decoded.text,
                               line_map=decoded.line_map))
    text = out[0].text if out else t.text
    commands = cmdlines.reading(t.path, text, t.family)
    if commands is not None:
        line_map = out[0].line_map if out else ()
        covers = commands.covers
        if line_map:  # the decoded text's lines, as the file's
            covers = tuple((line_map[min(a, len(line_map)) - 1], line_map[min(b, len(line_map)) - 1])
                           for a, b in covers)
        out.append(_target(t, COMMAND_LINES, "bash", commands.text, covers=covers,
                           line_map=line_map))
    if t.family == "python":
        out.extend(_string_code(t, text, out[0].line_map if out and out[0].derived ==
                                PYTHON_DECODED else ()))
    return out


def _string_code(t: ScanTarget, text: str, base: tuple[int, ...]) -> list[ScanTarget]:
    """Code kept in strings that run (:mod:`auditor.scan.pystrings`) as Python at the strings'
    lines, and the command lines in it as shell."""
    strings = pystrings.reading(text)
    if strings is None:
        return []
    line_map = (tuple(base[min(n, len(base)) - 1] for n in strings.line_map) if base
                else strings.line_map)
    out = [_target(t, PYTHON_STRINGS, "python", strings.text, line_map=line_map)]
    commands = cmdlines.reading(t.path, strings.text, "python")
    if commands is not None:
        covers = tuple((line_map[min(a, len(line_map)) - 1], line_map[min(b, len(line_map)) - 1])
                       for a, b in commands.covers)
        out.append(_target(t, PYTHON_STRINGS + "-" + COMMAND_LINES, "bash", commands.text,
                           covers=covers, line_map=line_map))
    return out


def _target(t: ScanTarget, how: str, family: str, text: str, *,
            covers: tuple[tuple[int, int], ...] = (),
            line_map: tuple[int, ...] = ()) -> ScanTarget:
    sha = hashlib.sha256(f"{how}\0{DIGEST}\0".encode() + text.encode("utf-8")).hexdigest()
    return ScanTarget(key=f"{t.key}#{how}", path=t.path, origin=t.origin, sha256=sha,
                      family=family, text=text, derived=how, line_map=line_map, covers=covers)


_READING_SCHEMA = "auditor/derived-readings/v1"


def reading_key(t: ScanTarget) -> str:
    """The cache key of ``t``'s derived readings: everything :func:`derive` reads of it (path,
    family, text) and everything that makes them (the scan modules' code and auditor's version by
    :func:`auditor.scan.cache.code_digest`, :data:`DIGEST`, the Python and PyYAML versions)."""
    from auditor.scan.cache import code_digest

    text = hashlib.sha256(t.text.encode("utf-8", "surrogatepass")).hexdigest()
    raw = json.dumps([_READING_SCHEMA, code_digest(), DIGEST, sys.version,
                      getattr(yaml, "__version__", ""), t.path, t.family, text])
    return hashlib.sha256(raw.encode()).hexdigest()


@dataclass(frozen=True)
class _Reading:
    how: str
    family: str
    text: str
    covers: tuple[tuple[int, int], ...]
    line_map: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        return {"how": self.how, "family": self.family, "text": self.text,
                "covers": [list(c) for c in self.covers], "line_map": list(self.line_map)}

    @staticmethod
    def from_json(data: Any) -> _Reading:
        if not isinstance(data, dict) or not isinstance(data.get("how"), str) \
                or not isinstance(data.get("text"), str) \
                or not isinstance(data.get("family"), str):
            raise ValueError("not a reading")
        covers = tuple((int(a), int(b)) for a, b in data["covers"])
        line_map = tuple(int(n) for n in data["line_map"])
        return _Reading(data["how"], data["family"], data["text"], covers, line_map)


class ReadingCache:
    """Each file's derived readings in ``<cache>/derived`` (:class:`~auditor.fsutil.JsonStore`),
    keyed by :func:`reading_key`; an unreadable or malformed entry is a miss, a failed write
    only costs speed. ``hits`` and ``misses`` count the lookups."""

    def __init__(self, root: Path) -> None:
        self.store = JsonStore(root / "derived")
        self.hits = 0
        self.misses = 0

    def derive(self, t: ScanTarget) -> list[ScanTarget]:
        """:func:`derive` of ``t``, from the cache when it holds them."""
        got = self.lookup(t)
        if got is None:
            got = derive(t)
            self.put(t, got)
        return got

    def lookup(self, t: ScanTarget) -> list[ScanTarget] | None:
        """The readings of ``t`` kept by content (a hit), or None (a miss)."""
        data = self.store.get(reading_key(t))
        if data is not None and data.get("schema") == _READING_SCHEMA:
            try:
                got = [_Reading.from_json(r) for r in data["readings"]]
            except (KeyError, TypeError, ValueError):
                got = None
            if got is not None:
                self.hits += 1
                return [_target(t, r.how, r.family, r.text, covers=r.covers,
                                line_map=r.line_map) for r in got]
        self.misses += 1
        return None

    def put(self, t: ScanTarget, made: Sequence[ScanTarget]) -> None:
        """Keep the readings :func:`derive` made of ``t``."""
        kept = [_Reading(d.derived, d.family, d.text, d.covers, d.line_map).to_json()
                for d in made if d.family is not None]
        if len(kept) == len(made):  # every reading made again from what is kept
            self.store.put(reading_key(t), {"schema": _READING_SCHEMA, "readings": kept})
