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
  that fetch (curl, wget, git clone, pip install) or run something from a fetched source folder;
- ``process-exec.builtin.cmake-outside-tree`` — a file from outside the audited tree enters the
  build: a patch applied (``git apply``, ``patch``), a script run, a file copied by a step command,
  ``execute_process`` or a custom command, or a file ``include()``d, ``file(COPY)``d or
  ``configure_file``d, or a ``FETCHCONTENT_SOURCE_DIR_<NAME>`` put in place of a fetch, from an
  absolute path, ``~``, ``$HOME`` or ``$ENV{...}``, or with ``..`` above the tree's root.

Variables, cache entries, ``option()`` and ``list(APPEND)`` are followed before a command is
judged (:func:`variables`): ``PATCH_COMMAND ${p}`` is judged as what ``p`` holds.
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
_REF = re.compile(r"\$\{([A-Za-z0-9_.+-]+)\}")
# a folder of the audited tree (or the build's own): paths under it are the tree's
_ROOT = re.compile(r"^\$\{(CMAKE_SOURCE_DIR|CMAKE_CURRENT_SOURCE_DIR|PROJECT_SOURCE_DIR|"
                   r"CMAKE_CURRENT_LIST_DIR|CMAKE_BINARY_DIR|CMAKE_CURRENT_BINARY_DIR|"
                   r"PROJECT_BINARY_DIR|[A-Za-z0-9_-]+_(?:SOURCE|BINARY)_DIR)\}")
_INTERPRETER = re.compile(r"^(?:(?:ba|da|z|k)?sh|source|\.|perl|ruby|node)$")
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
        return f"{__version__}+cmake2"

    def options_key(self) -> str:
        return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()

    def accepts(self, target: ScanTarget) -> bool:
        return is_cmake(target.path) and not target.derived  # a reading is not CMake

    def coverage(self, target: ScanTarget) -> str | None:
        return "builtin:cmake" if self.accepts(target) else None

    def scan(self, files: Sequence[ScanTarget], workdir: Path) -> ScannerRun:
        return ScannerRun(findings={t.key: tuple(scan_text(t.text, t.path)) for t in files},
                          errors={})


def scan_text(text: str, path: str = "CMakeLists.txt") -> Iterator[RawFinding]:
    """The findings of a CMake file at ``path`` (its folder is where relative paths start)."""
    cmds = commands(text)
    values = variables(cmds)
    here = posixpath.dirname(path)
    for raw in cmds:
        c = expanded(raw, values)
        yield from _outside_tree(c, here)
        if c.name in _FETCHERS:
            yield from _fetch(c)
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


def variables(cmds: Sequence[Command]) -> dict[str, str]:
    """What each variable holds after the file's ``set``/``option``/``list(APPEND)`` calls (a
    list as CMake keeps it, ``;``-separated; the last assignment wins, as at the file's end)."""
    out: dict[str, str] = {}
    for c in cmds:
        args = [a.value for a in c.args]
        if c.name == "set" and args and not args[0].startswith("ENV{"):
            items = args[1:]
            for stop in ("CACHE", "PARENT_SCOPE"):
                if stop in items:
                    items = items[:items.index(stop)]
            if "CACHE" in args[1:] and args[0] in out:  # a cache entry does not override
                continue
            out[args[0]] = ";".join(_expand(v, out) for v in items)
        elif c.name == "option" and len(args) >= 3:
            out.setdefault(args[0], args[2])
        elif c.name == "list" and len(args) >= 3 and args[0] in ("APPEND", "PREPEND"):
            new = [_expand(v, out) for v in args[2:]]
            old = [v for v in out.get(args[1], "").split(";") if v]
            out[args[1]] = ";".join(old + new if args[0] == "APPEND" else new + old)
    return out


def _expand(value: str, values: dict[str, str], depth: int = 0) -> str:
    if depth > 8 or "${" not in value:
        return value
    return _REF.sub(lambda m: _expand(values[m.group(1)], values, depth + 1)
                    if m.group(1) in values else m.group(0), value)


def expanded(c: Command, values: dict[str, str]) -> Command:
    """``c`` with its variable references replaced by what they hold (an unquoted argument that
    holds a list becomes its items, as CMake passes them)."""
    args: list[Arg] = []
    for a in c.args:
        v = _expand(a.value, values)
        if a.quoted or v == a.value:
            args.append(Arg(v, a.line, a.quoted))
        else:
            args.extend(Arg(x, a.line, False) for x in v.split(";") if x)
    return Command(c.name, c.line, c.end_line, tuple(args))


def _outside(word: str, here: str) -> bool:
    """Whether a path names a file outside the audited tree."""
    w = word.strip()
    if not w or w.startswith("-") or w == "<":
        return False
    if w.startswith(("/proc/", "/sys/", "/dev/")) or w in ("/dev/null",):
        return False
    if w.startswith(("/", "~", "$ENV{", "$HOME", "${HOME}", "file:///")) or "$ENV{" in w:
        return True
    m = _ROOT.match(w)
    if m:  # a tree folder's variable: outside only when ``..`` climbs above the root
        base = here if m.group(1) in ("CMAKE_CURRENT_SOURCE_DIR", "CMAKE_CURRENT_LIST_DIR") else ""
        rest = w[m.end():].lstrip("/")
        return posixpath.normpath(posixpath.join(base, rest or ".")).startswith("..")
    if "${" in w:
        return False
    return posixpath.normpath(posixpath.join(here, w)).startswith("..")


def _inputs(words: list[str]) -> list[str]:
    """The files a command takes in: the patch ``git apply``/``patch`` applies, the script an
    interpreter runs, the sources ``cp``/``cmake -E copy`` copies."""
    if not words:
        return []
    prog = posixpath.basename(words[0]).lower()
    rest = words[1:]
    operands = [w for w in rest if not w.startswith("-")]
    if prog == "git" and rest[:1] and rest[0] in ("apply", "am"):
        return operands[1:]
    if prog == "patch":
        out = [w for k, w in enumerate(rest) if k and rest[k - 1] in ("-i", "<")]
        out += [w.split("=", 1)[1] for w in rest if w.startswith("--input=")]
        return out + [w for k, w in enumerate(rest)
                      if not w.startswith("-") and w != "<" and not (k and rest[k - 1] in
                                                                      ("-i", "<", "-d", "-p"))]
    if prog in ("cp", "rsync", "install", "ln"):
        return operands[:-1]
    if "cmake" in prog and rest[:1] == ["-E"] and len(rest) > 2 and rest[1].startswith(
            ("copy", "create_symlink")):
        return rest[2:-1]
    if "cmake" in prog and "-P" in rest:
        k = rest.index("-P")
        return rest[k + 1:k + 2]
    if _INTERPRETER.match(prog) or "python" in prog.lower():
        return operands[:1] if "-c" not in rest and "-m" not in rest else []
    return []


def _groups(c: Command) -> list[tuple[str, list[str]]]:
    """(keyword, words) after each ``COMMAND`` or ``*_COMMAND`` keyword."""
    out: list[tuple[str, list[str]]] = []
    current: list[str] | None = None
    for a in c.args:
        if not a.quoted and (a.value == "COMMAND" or a.value.endswith("_COMMAND")):
            keyword = out[-1][0] if a.value == "COMMAND" and out else a.value
            current = []
            out.append((keyword, current))
        elif is_keyword(a):
            current = None
        elif current is not None:
            current.append(a.value)
    return [(k, w) for k, w in out if w]


def _outside_tree(c: Command, here: str) -> Iterator[RawFinding]:
    found: list[tuple[str, str]] = []  # (what, path)
    if c.name in (*_FETCHERS, "execute_process", "add_custom_command", "add_custom_target"):
        name = c.args[0].value if c.name in _FETCHERS and c.args else c.name
        for keyword, words in _groups(c):
            found += [(f"{name}: {keyword} takes", w) for w in _inputs(words)
                      if _outside(w, here)]
    elif c.name == "include" and c.args and _outside(c.args[0].value, here):
        found.append(("include() reads CMake code from", c.args[0].value))
    elif c.name in ("file", "configure_file") and c.args:
        args = [a.value for a in c.args]
        if c.name == "configure_file":
            srcs = args[:1]
        elif args[0].upper() in ("COPY", "INSTALL"):
            srcs = [a for a in args[1:args.index("DESTINATION")] if a not in ("FILES",)] \
                if "DESTINATION" in args else []
        else:
            srcs = []
        found += [(f"{c.name}() copies", w) for w in srcs if _outside(w, here)]
    elif c.name == "set" and c.args and c.args[0].value.startswith("FETCHCONTENT_SOURCE_DIR_") \
            and len(c.args) > 1 and _outside(c.args[1].value, here):
        found.append((f"{c.args[0].value} puts in place of the fetch", c.args[1].value))
    for what, where in found[:1]:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        yield _finding("process-exec.builtin.cmake-outside-tree", Category.PROCESS_EXEC,
                       Severity.CRITICAL, c,
                       f"{what} {where[:160]}, from outside the audited tree{more}",
                       "A file the review never saw enters the build: whatever is at that path "
                       "on the build machine (or what an environment variable names) is applied, "
                       "run or copied. Put the file in the tree, where it is reviewed, or pin "
                       "it by a hash.")


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


def _fetch(c: Command) -> Iterator[RawFinding]:
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
        value = tag[0].value if tag else ""
        if not _COMMIT.match(value):
            what = f"GIT_TAG {value}" if value else "no GIT_TAG"
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
