"""CMake: ``FetchContent_Declare`` and ``ExternalProject_Add`` (``GIT_REPOSITORY``/``GIT_TAG``,
``URL``/``URL_HASH``) in CMakeLists.txt and *.cmake files.

``${VAR}`` references are replaced when the same file sets ``VAR`` exactly once to a literal; a ref
that stays computed is kept as written (and so is not a full commit sha: the diff flags it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from auditor.deps.declaration import Collector, Declaration, Extraction, Kind

FETCH_COMMANDS = {"fetchcontent_declare", "externalproject_add"}
KEYWORDS = {"GIT_REPOSITORY", "GIT_TAG", "URL", "URL_HASH", "URL_MD5", "GIT_SHALLOW",
            "GIT_PROGRESS", "SOURCE_DIR", "BINARY_DIR", "SOURCE_SUBDIR", "PATCH_COMMAND",
            "CONFIGURE_COMMAND", "BUILD_COMMAND", "INSTALL_COMMAND", "UPDATE_COMMAND",
            "DOWNLOAD_COMMAND", "CMAKE_ARGS", "EXCLUDE_FROM_ALL", "SYSTEM", "FIND_PACKAGE_ARGS",
            "OVERRIDE_FIND_PACKAGE", "TEST_COMMAND", "PREFIX", "DOWNLOAD_EXTRACT_TIMESTAMP",
            "GIT_SUBMODULES", "LOG_DOWNLOAD", "BUILD_BYPRODUCTS", "DEPENDS"}


def is_cmake(p: PurePosixPath) -> bool:
    return p.name == "CMakeLists.txt" or p.suffix == ".cmake"


@dataclass(frozen=True)
class _Tok:
    kind: str  # word, string, open, close
    value: str
    line: int


_TOKEN = re.compile(
    r'(?P<bracketcomment>#\[(?P<eq1>=*)\[[\s\S]*?\](?P=eq1)\])'
    r'|(?P<comment>#[^\n]*)'
    r'|(?P<bracket>\[(?P<eq2>=*)\[[\s\S]*?\](?P=eq2)\])'
    r'|(?P<string>"(?:\\.|[^"\\])*")'
    r'|(?P<open>\()|(?P<close>\))'
    r'|(?P<word>[^\s()#"]+)'
    r'|(?P<space>\s+)')


def _tokens(text: str) -> list[_Tok]:
    out: list[_Tok] = []
    line = 1
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup or ""
        value = m.group()
        if kind in ("word", "open", "close"):
            out.append(_Tok(kind, value, line))
        elif kind == "string":
            out.append(_Tok("string", re.sub(r"\\(.)", r"\1", value[1:-1]), line))
        elif kind == "bracket":
            body = re.sub(r"^\[=*\[\n?", "", value)
            out.append(_Tok("string", re.sub(r"\]=*\]$", "", body), line))
        line += value.count("\n")
    return out


def _commands(toks: list[_Tok]) -> list[tuple[str, int, list[_Tok], int]]:
    """(lower-case command, first line, argument tokens, line of the closing parenthesis)."""
    out: list[tuple[str, int, list[_Tok], int]] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        if t.kind == "word" and i + 1 < len(toks) and toks[i + 1].kind == "open":
            depth = 0
            args: list[_Tok] = []
            j = i + 1
            while j < len(toks):
                if toks[j].kind == "open":
                    depth += 1
                    if depth > 1:
                        args.append(toks[j])
                elif toks[j].kind == "close":
                    depth -= 1
                    if depth == 0:
                        break
                    args.append(toks[j])
                else:
                    args.append(toks[j])
                j += 1
            end = toks[j].line if j < len(toks) else (args[-1].line if args else t.line)
            out.append((t.value.lower(), t.line, args, end))
            i = j + 1
        else:
            i += 1
    return out


def extract(path: str, text: str) -> Extraction:
    col = Collector(path)
    if "fetchcontent_declare" not in text.lower() and "externalproject_add" not in text.lower():
        return col.done()
    commands = _commands(_tokens(text))
    expand = _Expander(_literal_sets(commands))
    for name, line, args, last in commands:
        if name not in FETCH_COMMANDS:
            continue
        words = [a for a in args if a.kind in ("word", "string")]
        if not words:
            col.skip(line, f"{name} without arguments")
            continue
        _fetch(col, name, line, last, words, expand)
    return col.done()


def _literal_sets(commands: list[tuple[str, int, list[_Tok], int]]) -> dict[str, str]:
    """The variables ``set()`` exactly once, to one literal value."""
    sets: dict[str, list[str | None]] = {}
    for name, _, args, _ in commands:
        if name == "set" and args and args[0].kind in ("word", "string"):
            values = [a.value for a in args[1:] if a.kind in ("word", "string")]
            if "CACHE" in values:  # set(VAR "value" CACHE STRING "doc")
                values = values[: values.index("CACHE")]
            literal = values[0] if len(values) == 1 else None
            sets.setdefault(args[0].value, []).append(literal)
    return {k: v[0] for k, v in sets.items() if len(v) == 1 and v[0] is not None}


@dataclass(frozen=True)
class _Expander:
    """``${VAR}`` replaced by the literal variables (nested up to five levels)."""

    variables: dict[str, str]

    def __call__(self, value: str) -> str:
        for _ in range(5):
            new = re.sub(r"\$\{([A-Za-z0-9_.\-]+)\}",
                         lambda m: self.variables.get(m.group(1), m.group()), value)
            if new == value:
                break
            value = new
        return value


def _options(words: list[_Tok], expand: _Expander) -> dict[str, str]:
    """The fetch's keyword options (the first value of each), expanded."""
    opts: dict[str, str] = {}
    k = 1
    while k < len(words):
        w = words[k].value
        if w in KEYWORDS and words[k].kind == "word":
            if k + 1 < len(words) and not (words[k + 1].value in KEYWORDS
                                           and words[k + 1].kind == "word"):
                opts.setdefault(w, expand(words[k + 1].value))
                k += 2
                continue
            opts.setdefault(w, "")
        k += 1
    return opts


def _fetch(col: Collector, name: str, line: int, last: int, words: list[_Tok],
           expand: _Expander) -> None:
    """One FetchContent_Declare / ExternalProject_Add: a declaration, or why it is not checked."""
    path = col.file
    fetch_name = expand(words[0].value)
    opts = _options(words, expand)
    cname = re.sub(r"[-_.]+", "-", fetch_name).lower()
    shown = " ".join(f"{k} {opts[k]}" for k in ("GIT_REPOSITORY", "GIT_TAG", "URL",
                                                 "URL_HASH", "URL_MD5") if k in opts)
    raw = f"{words[0].value} {shown}"
    if "GIT_REPOSITORY" in opts:
        col.declarations.append(Declaration(
            name=cname, specifier="", pin=None, markers="", url=opts["GIT_REPOSITORY"] or None,
            kind=Kind.CMAKE_GIT, file=path, line=line, group=name,
            ref=opts.get("GIT_TAG") or None, text=raw, end_line=last if last != line else 0))
    elif "URL" in opts:
        digest = opts.get("URL_HASH") or (f"MD5={opts['URL_MD5']}" if opts.get("URL_MD5")
                                          else None)
        col.declarations.append(Declaration(
            name=cname, specifier="", pin=None, markers="", url=opts["URL"] or None,
            kind=Kind.CMAKE_URL, file=path, line=line, group=name, hash=digest,
            text=raw, end_line=last if last != line else 0))
    elif "DOWNLOAD_COMMAND" in opts:
        col.skip(line, f"{name}({fetch_name}) downloads with a custom command: not checked")
    elif "SOURCE_DIR" not in opts:
        col.skip(line, f"{name}({fetch_name}): no GIT_REPOSITORY or URL found: not checked")
