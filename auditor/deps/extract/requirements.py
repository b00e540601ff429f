"""pip requirements files: requirements*.txt and requirements/*.txt, with their includes.

Handled: ``-r``/``--requirement`` and ``-c``/``--constraint`` includes (resolved against the
including file, kept inside the tree, each file read once), ``--hash`` options, markers, direct
URLs and VCS requirements, ``-e`` editables, and the index options ``-i``/``--index-url``,
``--extra-index-url``, ``-f``/``--find-links`` and ``--trusted-host``. An option this module does
not know is reported as not checked rather than ignored.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Callable
from dataclasses import replace
from pathlib import PurePosixPath

from auditor.deps.declaration import Collector, Extraction
from auditor.deps.extract.lines import logical_lines

INDEX_OPTIONS = {
    "-i": "index-url", "--index-url": "index-url", "--extra-index-url": "extra-index-url",
    "-f": "find-links", "--find-links": "find-links", "--trusted-host": "trusted-host",
}
INCLUDE_OPTIONS = {"-r": "requirement", "--requirement": "requirement",
                   "-c": "constraint", "--constraint": "constraint"}
# Options that change nothing about which packages come from where.
HARMLESS_FLAGS = {"--no-index", "--pre", "--prefer-binary", "--require-hashes", "--no-deps",
                  "--use-feature", "--only-binary", "--no-binary", "--upgrade", "-U",
                  "--no-build-isolation", "--config-settings", "--global-option"}
VCS_LIKE = ("git+", "hg+", "svn+", "bzr+")


def is_requirements_file(p: PurePosixPath) -> bool:
    if p.suffix != ".txt":
        return False
    return p.name.startswith("requirements") or p.parent.name == "requirements"


def _logical_lines(text: str) -> list[tuple[int, int, str]]:
    """(first line, last line, joined text): comments removed, ``\\`` continuations joined (a
    line that only held a comment ends a continuation)."""
    return logical_lines(text, lambda raw: re.sub(r"(^|\s)#.*$", "", raw))


def _split_option(token: str, rest: list[str]) -> tuple[str, str | None]:
    """``--opt=value`` / ``--opt value`` / ``-ivalue`` -> (option, value)."""
    if token.startswith("--") and "=" in token:
        opt, _, value = token.partition("=")
        return opt, value
    if token.startswith("-") and not token.startswith("--") and len(token) > 2:
        return token[:2], token[2:]
    return token, (rest.pop(0) if rest else None)


def parse_file(path: str, text: str, col: Collector, includes: list[tuple[str, int, str]]) -> None:
    """Parse one requirements file into ``col``; its includes are appended to ``includes``."""
    for line, last, logical in _logical_lines(text):
        col.end_line = last if last != line else 0
        if logical.startswith("-"):
            _option_line(line, logical, col, includes)
            continue
        # a requirement, possibly followed by per-requirement options (--hash=...)
        req_text, hashes = _strip_hashes(logical)
        if req_text is None:
            col.skip(line, f"cannot be parsed: {logical[:120]!r}")
            continue
        if _is_local_path(req_text):
            continue
        col.requirement(req_text, line, hashes=hashes, raw=logical)


def _option_line(line: int, logical: str, col: Collector,
                 includes: list[tuple[str, int, str]]) -> None:
    """A line that starts with an option: an editable, an index, an include or a flag."""
    try:
        tokens = shlex.split(logical)
    except ValueError:
        col.skip(line, f"cannot be parsed: {logical[:120]!r}")
        return
    opt_token = tokens.pop(0)
    opt, value = _split_option(opt_token, tokens)
    if opt in ("-e", "--editable"):
        if value is None:
            col.skip(line, "-e without a requirement")
        elif "://" in value or value.startswith(VCS_LIKE):
            col.requirement(value, line, group="editable", raw=logical)
        # a local editable path is part of the tree itself: nothing comes in with it
    elif opt in INDEX_OPTIONS:
        if not value:
            col.skip(line, f"{opt} without a value")
        else:
            col.index(INDEX_OPTIONS[opt], value, line, logical)
    elif opt in INCLUDE_OPTIONS:
        if not value:
            col.skip(line, f"{opt} without a file")
        else:
            includes.append((value, line, INCLUDE_OPTIONS[opt]))
    elif opt not in HARMLESS_FLAGS:
        col.skip(line, f"unknown option {opt!r}: not checked")


def _strip_hashes(logical: str) -> tuple[str | None, tuple[str, ...]]:
    hashes: list[str] = []
    parts = re.split(r"\s+(?=--)", logical)
    req = parts[0]
    for opt in parts[1:]:
        m = re.fullmatch(r"--hash[=\s]+(\S+)", opt.strip())
        if m:
            hashes.append(m.group(1))
        elif re.fullmatch(r"--(global-option|config-settings|install-option)[=\s]+\S+",
                          opt.strip()):
            continue
        else:
            return None, ()
    return req, tuple(hashes)


def _is_local_path(text: str) -> bool:
    t = text.split(";", 1)[0].strip()
    return t in (".", "..") or t.startswith(("./", "../", "/", "file:")) or (
        t.endswith((".whl", ".tar.gz", ".zip")) and "://" not in t and " @ " not in t)


def resolve(from_file: str, target: str, all_paths: frozenset[str]) -> tuple[str | None, str]:
    """A path written in ``from_file`` (relative to its folder) as a tree path, or (None, why)."""
    if "://" in target:
        return None, "is a remote file: not checked"
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(from_file), target))
    if target.startswith("/") or resolved == ".." or resolved.startswith("../"):
        return None, "points outside the tree: not checked"
    if resolved not in all_paths:
        return None, "no such file in the tree"
    return resolved, ""


def extract(paths: list[str], read: Callable[[str], str | None],
            all_paths: frozenset[str]) -> Extraction:
    """Every requirements file in ``paths`` plus the files they include (read once each)."""
    result = Extraction()
    todo = list(paths)
    seen: set[str] = set()
    constraint_files: set[str] = set()
    while todo:
        path = todo.pop(0)
        if path in seen:
            continue
        seen.add(path)
        text = read(path)
        col = Collector(path)
        if text is None:
            col.skip(0, "could not be read (missing or too large)")
            result += col.done()
            continue
        includes: list[tuple[str, int, str]] = []
        parse_file(path, text, col, includes)
        if path in constraint_files:
            col.declarations = [replace(d, group="constraint") for d in col.declarations]
        for target, line, how in includes:
            resolved, why = resolve(path, target, all_paths)
            if resolved is None:
                col.skip(line, f"-{how[0]} {target!r}: {why}")
                continue
            if how == "constraint":
                constraint_files.add(resolved)
            result += Extraction(includes=((path, resolved),))
            if resolved not in seen:
                todo.append(resolved)
        result += col.done()
    return result
