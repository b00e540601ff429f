"""CMake rules: what the build fetches, runs or applies (semgrep has no CMake parser).

:func:`commands` splits a CMake file into command invocations with their arguments and line
numbers (quoted and bracket arguments, ``#`` and ``#[[...]]`` comments, nested parentheses).
:class:`CMakeScanner` reads ``CMakeLists.txt`` and ``*.cmake`` files:

- ``dependency.builtin.cmake-fetch-unpinned`` — ``FetchContent_Declare``/``ExternalProject_Add``/
  ``CPMAddPackage`` with a ``URL`` and no ``URL_HASH``, or a ``GIT_REPOSITORY`` whose ``GIT_TAG``
  is not a full commit id (a branch or tag can be moved under the build);
- ``network.builtin.cmake-download`` — ``file(DOWNLOAD ...)`` without ``EXPECTED_HASH``;
- ``process-exec.builtin.cmake-fetched-step`` — ``PATCH_COMMAND``, ``UPDATE_COMMAND`` and the other
  step commands of a fetched project (code that runs on what was fetched);
- ``process-exec.builtin.cmake-execute-process`` — ``execute_process`` at configure time;
- ``process-exec.builtin.cmake-custom-command`` — ``add_custom_command``/``add_custom_target``
  that fetch (curl, wget, git clone, pip install) or run something from a fetched source folder.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from auditor import __version__
from auditor.model import Category, Severity
from auditor.scan.interface import RawFinding, Scanner, ScannerRun, ScanTarget

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BRACKET_OPEN = re.compile(r"\[(=*)\[")
_COMMIT = re.compile(r"^[0-9a-fA-F]{40}$")
_VAR = re.compile(r"^\$\{([A-Za-z0-9_]+)\}$")
_FETCHERS = ("fetchcontent_declare", "externalproject_add", "cpmaddpackage")
# an argument that starts another keyword section (GIT_TAG, URL_HASH, WORKING_DIRECTORY ...)
_KEYWORD = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")
_KEYWORDS = frozenset({"URL", "COMMAND", "DEPENDS", "OUTPUT", "COMMENT", "VERBATIM", "SOURCES",
                       "BYPRODUCTS", "ALL"})
_STEP_COMMANDS = ("PATCH_COMMAND", "UPDATE_COMMAND", "CONFIGURE_COMMAND", "BUILD_COMMAND",
                  "INSTALL_COMMAND", "TEST_COMMAND", "DOWNLOAD_COMMAND")
_FETCHED_DIR = re.compile(r"\$\{(?!CMAKE_|PROJECT_)[A-Za-z0-9_-]+_SOURCE_DIR\}|_deps/|FETCHCONTENT_BASE_DIR")


def is_keyword(arg: Arg) -> bool:
    """Whether an argument opens a keyword section (``COMMAND``, ``WORKING_DIRECTORY`` ...)."""
    return not arg.quoted and (bool(_KEYWORD.match(arg.value)) or arg.value in _KEYWORDS)


def is_cmake(path: str) -> bool:
    name = posixpath.basename(path).lower()
    return name == "cmakelists.txt" or name.endswith(".cmake")


@dataclass(frozen=True)
class Arg:
    value: str
    line: int
    quoted: bool


@dataclass(frozen=True)
class Command:
    name: str  # lower case
    line: int
    end_line: int
    args: tuple[Arg, ...]

    def keyword_values(self, keyword: str) -> list[Arg]:
        """The arguments after ``keyword`` up to the next upper-case keyword."""
        out: list[Arg] = []
        for i, a in enumerate(self.args):
            if not a.quoted and a.value == keyword:
                for b in self.args[i + 1:]:
                    if not b.quoted and (_KEYWORD.match(b.value) or b.value in _KEYWORDS):
                        break
                    out.append(b)
                return out
        return out

    def has(self, keyword: str) -> bool:
        return any(not a.quoted and a.value == keyword for a in self.args)


def commands(text: str) -> list[Command]:
    """The command invocations of a CMake file (never raises; odd input yields fewer)."""
    out: list[Command] = []
    i, n, line = 0, len(text), 1
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
            i += 1
        elif ch == "#":
            i, line = _skip_comment(text, i, line)
        elif ch.isalpha() or ch == "_":
            m = _IDENT.match(text, i)
            assert m is not None
            j = m.end()
            while j < n and text[j] in " \t":
                j += 1
            if j < n and text[j] == "(":
                start = line
                args, i, line = _args(text, j + 1, line)
                out.append(Command(m.group().lower(), start, line, tuple(args)))
            else:
                i = m.end()
        else:
            i += 1
    return out


def _skip_comment(text: str, i: int, line: int) -> tuple[int, int]:
    m = _BRACKET_OPEN.match(text, i + 1)
    if m:
        close = text.find("]" + m.group(1) + "]", m.end())
        end = len(text) if close < 0 else close + len(m.group(1)) + 2
    else:
        nl = text.find("\n", i)
        end = len(text) if nl < 0 else nl
    return end, line + text.count("\n", i, end)


def _args(text: str, i: int, line: int) -> tuple[list[Arg], int, int]:
    args: list[Arg] = []
    depth = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
            i += 1
        elif ch in " \t\r":
            i += 1
        elif ch == "#":
            i, line = _skip_comment(text, i, line)
        elif ch == "(":
            depth += 1
            i += 1
        elif ch == ")":
            if depth == 0:
                return args, i + 1, line
            depth -= 1
            i += 1
        elif ch == '"' or (ch == "[" and _BRACKET_OPEN.match(text, i)):
            value, i = _quoted(text, i) if ch == '"' else _bracket(text, i)
            args.append(Arg(value, line, True))
            line += value.count("\n")
        else:
            j = i
            while j < n and text[j] not in ' \t\r\n()#"':
                j += 2 if text[j] == "\\" else 1
            args.append(Arg(text[i:j], line, False))
            i = j
    return args, i, line


def _quoted(text: str, i: int) -> tuple[str, int]:
    """A quoted argument opening at ``i``: its text (escapes kept) and the index after it."""
    n = len(text)
    j = i + 1
    buf: list[str] = []
    while j < n and text[j] != '"':
        if text[j] == "\\" and j + 1 < n:
            buf.append(text[j:j + 2])
            j += 2
            continue
        buf.append(text[j])
        j += 1
    return "".join(buf), j + 1


def _bracket(text: str, i: int) -> tuple[str, int]:
    """A bracket argument ``[=[...]=]`` opening at ``i``: its text and the index after it."""
    n = len(text)
    m = _BRACKET_OPEN.match(text, i)
    assert m is not None
    close = text.find("]" + m.group(1) + "]", m.end())
    end = n if close < 0 else close
    return text[m.end():end], n if close < 0 else close + len(m.group(1)) + 2


class CMakeScanner(Scanner):
    name = "cmake"

    def version(self) -> str:
        return f"{__version__}+cmake1"

    def options_key(self) -> str:
        return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()

    def accepts(self, target: ScanTarget) -> bool:
        return is_cmake(target.path) and not target.derived  # a reading is not CMake

    def coverage(self, target: ScanTarget) -> str | None:
        return "builtin:cmake" if self.accepts(target) else None

    def scan(self, files: Sequence[ScanTarget], workdir: Path) -> ScannerRun:
        return ScannerRun(findings={t.key: tuple(scan_text(t.text)) for t in files}, errors={})


def scan_text(text: str) -> Iterator[RawFinding]:
    cmds = commands(text)
    variables: dict[str, str] = {}
    for c in cmds:
        if c.name == "set" and len(c.args) >= 2:
            variables[c.args[0].value] = c.args[1].value
    for c in cmds:
        if c.name in _FETCHERS:
            yield from _fetch(c, variables)
        elif c.name == "file" and c.args and c.args[0].value.upper() == "DOWNLOAD":
            if not (c.has("EXPECTED_HASH") or c.has("EXPECTED_MD5")):
                url = c.args[1].value if len(c.args) > 1 else "?"
                yield _finding("network.builtin.cmake-download", Category.NETWORK, Severity.HIGH,
                               c, f"the build downloads {url} with no EXPECTED_HASH",
                               "file(DOWNLOAD) without EXPECTED_HASH takes whatever the server "
                               "returns. Pin the file by its sha256 (EXPECTED_HASH SHA256=...) "
                               "or vendor it.")
        elif c.name == "execute_process":
            cmd = " ".join(a.value for a in c.keyword_values("COMMAND"))[:160]
            yield _finding("process-exec.builtin.cmake-execute-process", Category.PROCESS_EXEC,
                           Severity.MEDIUM, c, f"configuring the build runs: {cmd}",
                           "execute_process runs at configure time, on the build machine. Check "
                           "what it runs and that nothing it runs was fetched unpinned.")
        elif c.name in ("add_custom_command", "add_custom_target") and _fetches_or_runs_fetched(c):
            yield _finding("process-exec.builtin.cmake-custom-command", Category.PROCESS_EXEC,
                           Severity.HIGH, c,
                           "a build step fetches something or runs what was fetched: "
                           + " ".join(a.value for a in c.args)[:160],
                           "The build runs a command that downloads, or one that comes from a "
                           "fetched source tree. Check its origin is pinned by a commit or a "
                           "hash and read what it does.")


def _fetches_or_runs_fetched(c: Command) -> bool:
    words = [a.value for a in c.args]
    tools = {w.rsplit("/", 1)[-1].lower() for w in words}
    if tools & {"curl", "wget", "aria2c"}:
        return True
    if "git" in tools and tools & {"clone", "fetch", "pull"}:
        return True
    if tools & {"pip", "pip3", "uv"} and "install" in tools:
        return True
    return any(_FETCHED_DIR.search(w) for w in words)


def _fetch(c: Command, variables: dict[str, str]) -> Iterator[RawFinding]:
    name = c.args[0].value if c.args else "?"
    urls = c.keyword_values("URL")
    if urls and not (c.has("URL_HASH") or c.has("URL_MD5")):
        yield _finding("dependency.builtin.cmake-fetch-unpinned", Category.DEPENDENCY,
                       Severity.HIGH, c,
                       f"{name} is fetched from {urls[0].value} with no URL_HASH",
                       "A fetched archive without URL_HASH can change under the build. Add "
                       "URL_HASH SHA256=... for the reviewed archive.")
    repo = c.keyword_values("GIT_REPOSITORY")
    if repo:
        tag = c.keyword_values("GIT_TAG")
        raw = tag[0].value if tag else ""
        m = _VAR.match(raw)
        value = variables.get(m.group(1), raw) if m else raw
        if not _COMMIT.match(value):
            what = f"GIT_TAG {raw}" + (f" (= {value})" if value != raw else "") if raw else \
                "no GIT_TAG"
            yield _finding("dependency.builtin.cmake-fetch-unpinned", Category.DEPENDENCY,
                           Severity.MEDIUM, c,
                           f"{name} is fetched from {repo[0].value} with {what}, not a commit",
                           "A branch or tag can be moved to other code after review. Pin "
                           "GIT_TAG to the full 40-character commit id that was reviewed.")
    for step in _STEP_COMMANDS:
        cmd = " ".join(a.value for a in c.keyword_values(step)).strip()[:160]
        if cmd:  # an empty step command switches the step off
            yield _finding("process-exec.builtin.cmake-fetched-step", Category.PROCESS_EXEC,
                           Severity.MEDIUM, c, f"{name}: {step} runs {cmd}",
                           "A step command runs on fetched sources (a patch applied, a script "
                           "run). Read what it changes and where the patch or script comes from.")


def _finding(rule: str, category: Category, severity: Severity, c: Command, message: str,
             help_text: str) -> RawFinding:
    return RawFinding(rule=rule, category=category, severity=severity, line=c.line,
                      end_line=c.end_line, message=message, help=help_text)
