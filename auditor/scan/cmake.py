"""CMake rules: what the build fetches, runs or applies (semgrep has no CMake parser).

:func:`commands` splits a CMake file into command invocations with their arguments and line
numbers (quoted and bracket arguments, ``#`` and ``#[[...]]`` comments, nested parentheses).
:class:`CMakeScanner` reads ``CMakeLists.txt`` and ``*.cmake`` files:

- ``dependency.builtin.cmake-fetch-unpinned`` — ``FetchContent_Declare``/``FetchContent_Populate``/
  ``ExternalProject_Add``/``CPMAddPackage`` with a ``URL`` and no ``URL_HASH``, or a
  ``GIT_REPOSITORY`` whose ``GIT_TAG`` is not a full commit id (a branch or tag can be moved under
  the build): reviewed;
- ``dependency.builtin.cmake-download-unpinned`` — ``file(DOWNLOAD ...)`` without
  ``EXPECTED_HASH``/``EXPECTED_MD5``: reviewed;
- ``network.builtin.cmake-download-run`` — what such a download brought is run or included: the
  downloaded file ``include()``d, run by ``execute_process``, a custom command or a step command
  (by its own name, an interpreter, ``cmake -P``, ``git apply``/``patch``), the archive it unpacks
  (``file(ARCHIVE_EXTRACT)``, ``cmake -E tar``) ``add_subdirectory``'d; a project fetched from a
  ``URL`` with no hash, or from a branch (no ``GIT_TAG``, or one without a digit: ``main``,
  ``master``...), made available (``FetchContent_MakeAvailable``, ``CPMAddPackage``: its
  CMakeLists.txt runs), built by ``ExternalProject_Add``'s steps, or a script of its tree run.
  A release tag (``v4.0.0``) stays a review: vLLM runs CUTLASS's Python from a tag;
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
_CPM = ("cpmaddpackage", "cpmfindpackage")  # CPMFindPackage downloads what find_package lacks
_FETCHERS = ("fetchcontent_declare", "fetchcontent_populate", "externalproject_add", *_CPM)
# CPM's shorthand ("gh:owner/repo@1.2.3#tag", also in URI) and its *_REPOSITORY keywords
_CPM_HOSTS = {"gh": "https://github.com/", "gl": "https://gitlab.com/",
              "bb": "https://bitbucket.org/"}
_CPM_REPOSITORY = {"GITHUB_REPOSITORY": "gh", "GITLAB_REPOSITORY": "gl",
                   "BITBUCKET_REPOSITORY": "bb"}
_CPM_SHORT = re.compile(r"^(?:(?P<host>gh|gl|bb):(?P<path>[^@#\s]+)|(?P<url>[a-z][a-z0-9+.-]*://"
                        r"[^@#\s]+?))(?:@(?P<version>[^#\s]*))?(?:#(?P<tag>\S*))?$")
# a GIT_TAG with no digit is a branch (main, master, dev, nightly): it moves with every push
_BRANCH = re.compile(r"^[A-Za-z_./-]+$")
RULE_RUN = "network.builtin.cmake-download-run"
# programs that run the build scripts of the folder they are started in
_BUILDERS = re.compile(r"^(?:\$\{cmake_command\}|cmake|ctest|make|gmake|ninja|scons|meson|bazel|"
                       r"(?:ba|z)?sh|python[0-9.]*|\$\{python_executable\}|\$\{python3_executable\}|"
                       r"pip[0-9.]*|\./.*)$")
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
                yield _finding("dependency.builtin.cmake-download-unpinned", Category.DEPENDENCY,
                               Severity.HIGH, c, f"the build downloads {url} with no EXPECTED_HASH",
                               "file(DOWNLOAD) without EXPECTED_HASH takes whatever the server "
                               "returns. Pin the file by its sha256 (EXPECTED_HASH SHA256=...) "
                               "or vendor it; the audit blocks where the build runs or "
                               "includes it.")
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
    yield from _run_unpinned(cmds, values)


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
    out = Command(c.name, c.line, c.end_line, tuple(args))
    return _cpm_long_form(out) if c.name in _CPM else out


def _cpm_shorthand(args: list[Arg]) -> tuple[str, str, str, str] | None:
    """(repo, url, version, tag) of a CPM shorthand (the first argument, or ``URI``'s), taken
    out of ``args``; ``None`` when the call has none."""
    uri = next((i for i, a in enumerate(args) if not a.quoted and a.value == "URI"), None)
    if uri is not None and uri + 1 < len(args):
        short = args[uri + 1].value
        del args[uri:uri + 2]
    elif args and _CPM_SHORT.match(args[0].value) and (args[0].quoted or len(args) == 1
                                                       or ":" in args[0].value):
        short = args.pop(0).value
    else:
        return None
    m = _CPM_SHORT.match(short)
    if m is None:
        return None
    url = m.group("url") or ""
    repo = (_CPM_HOSTS[m.group("host")] + m.group("path").removesuffix(".git") + ".git"
            if m.group("host") else url if url.endswith(".git") else "")
    return repo, "" if repo else url, m.group("version") or "", m.group("tag") or ""


def _cpm_repository(c: Command, args: list[Arg]) -> tuple[str, str, str, str] | None:
    """(repo, "", "", "") of ``GITHUB_REPOSITORY o/r`` and the like, taken out of ``args``."""
    kw = next((k for k in _CPM_REPOSITORY if c.has(k)), None)
    if kw is None or c.has("GIT_REPOSITORY") or not c.keyword_values(kw):
        return None
    path = c.keyword_values(kw)[0].value
    k = next(i for i, a in enumerate(args) if not a.quoted and a.value == kw)
    del args[k:k + 2]
    return _CPM_HOSTS[_CPM_REPOSITORY[kw]] + path.removesuffix(".git") + ".git", "", "", ""


def _cpm_long_form(c: Command) -> Command:
    """A CPM call in the keyword form the fetch checks read: ``CPMAddPackage("gh:o/r@1.2#t")``
    (or ``URI "gh:..."``, or ``GITHUB_REPOSITORY o/r VERSION 1.2``) as ``NAME r GIT_REPOSITORY
    https://github.com/o/r.git GIT_TAG t`` (a version alone is the tag ``v<version>``, nothing
    at all the default branch); a shorthand URL that is no git repository is a ``URL``."""
    args = list(c.args)
    source = _cpm_shorthand(args) or _cpm_repository(c, args)
    if source is None:
        return c
    repo, url, version, tag = source
    line = c.line
    new: list[Arg] = []
    if not c.has("NAME"):
        name = re.sub(r"(?:-v?\d[\w.]*)?(?:\.git|\.zip|\.tgz|\.tar(?:\.\w+)?)$", "",
                      (repo or url).rstrip("/").rsplit("/", 1)[-1])
        new += [Arg("NAME", line, False), Arg(name, line, True)]
    if url:
        new += [Arg("URL", line, False), Arg(url, line, True)]
    else:
        new += [Arg("GIT_REPOSITORY", line, False), Arg(repo, line, True)]
        versions = c.keyword_values("VERSION") if c.has("VERSION") else []
        version = version or (versions[0].value if versions else "")
        tag = tag or (f"v{version}" if version else "")
        if tag and not c.has("GIT_TAG"):
            new += [Arg("GIT_TAG", line, False), Arg(tag, line, True)]
    return Command(c.name, c.line, c.end_line, (*new, *args))


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


def _project(c: Command) -> str:
    """The name a fetch command declares (``CPMAddPackage(NAME x ...)`` names it by keyword)."""
    named = c.keyword_values("NAME") if c.name in _CPM else []
    return named[0].value if named else c.args[0].value if c.args else "?"


def _fetch(c: Command) -> Iterator[RawFinding]:
    name = _project(c)
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


@dataclass(frozen=True)
class _Origin:
    """What came from a URL or a branch with no digest, and where the build keeps it."""

    source: str  # "downloaded from URL (line N)"
    paths: tuple[str, ...]  # the file, or the folder, it is at
    project: str = ""  # the fetched project's name ("" for a file(DOWNLOAD))


def _unpinned_fetch(c: Command) -> str | None:
    """Where a fetch command takes its code from, when nothing pins it: a URL with no hash, or a
    branch (a release tag, or a tag from a variable the file does not set, is only reviewed)."""
    urls = c.keyword_values("URL")
    if urls and not (c.has("URL_HASH") or c.has("URL_MD5")):
        return f"downloaded from {urls[0].value[:120]} with no URL_HASH"
    repo = c.keyword_values("GIT_REPOSITORY")
    if repo and not urls:
        tag = c.keyword_values("GIT_TAG")
        value = tag[0].value if tag else ""
        if not value or _BRANCH.match(value):
            at = f"branch {value}" if value else "its default branch"
            return f"fetched from {repo[0].value[:120]} at {at}"
    return None


def _norm(word: str) -> str:
    w = word.strip()
    return w[2:] if w.startswith("./") else w


def _within(word: str, origin: _Origin) -> str | None:
    """The origin path ``word`` names (the file itself or something under its folder)."""
    w = _norm(word)
    for p in origin.paths:
        q = _norm(p).rstrip("/")
        if q and (w == q or w.startswith(q + "/")):
            return p
        # a folder CMake names under the binary dir (_deps/x-src, x-prefix/src/x), by any root
        if p.startswith(("_deps/", f"{origin.project}-prefix/")) and (
                w.endswith("/" + q) or f"/{q}/" in w):
            return p
    return None


def _origins(cmds: Sequence[Command], values: dict[str, str]) -> list[_Origin]:
    """Every download and fetch without a digest in the file, with the paths it lands at (the
    archive a download unpacks, and a fetched project's source folder by each of its names)."""
    out: list[_Origin] = []
    for raw in cmds:
        c = expanded(raw, values)
        args = [a.value for a in c.args]
        if c.name == "file" and len(args) > 2 and args[0].upper() == "DOWNLOAD" and not (
                c.has("EXPECTED_HASH") or c.has("EXPECTED_MD5")):
            out.append(_Origin(f"downloaded from {args[1][:120]} (line {c.line}) with no "
                               "EXPECTED_HASH", (args[2],)))
        elif c.name == "file" and args[:1] == ["ARCHIVE_EXTRACT"]:
            src = c.keyword_values("INPUT")
            dest = c.keyword_values("DESTINATION")
            o = next((o for o in out if src and _within(src[0].value, o)), None)
            if o is not None and dest:
                out.append(_Origin(o.source, (dest[0].value,)))
        elif c.name == "execute_process":
            for _kw, words in _groups(c):
                if "cmake" in posixpath.basename(words[0]).lower() and words[1:3] == ["-E", "tar"]:
                    o = next((o for o in out for w in words[3:] if _within(w, o)), None)
                    where = c.keyword_values("WORKING_DIRECTORY")
                    if o is not None and where:
                        out.append(_Origin(o.source, (where[0].value,)))
        elif c.name in _FETCHERS:
            source = _unpinned_fetch(c)
            if source is None:
                continue
            name = _project(c)
            paths = [f"${{{name}_SOURCE_DIR}}", f"${{{name.lower()}_SOURCE_DIR}}",
                     f"_deps/{name.lower()}-src", f"{name}-prefix/src/{name}"]
            paths += [a.value for a in c.keyword_values("SOURCE_DIR")[:1]]
            out.append(_Origin(f"{source} (line {c.line})", tuple(paths), name))
        elif c.name in ("fetchcontent_getproperties", "externalproject_get_property") and args:
            # the source folder under a name of the file's choosing
            o = next((o for o in out if o.project and o.project.lower() == args[0].lower()), None)
            if o is not None and "SOURCE_DIR" in args[1:]:
                k = args.index("SOURCE_DIR", 1)
                var = args[k + 1] if c.name == "fetchcontent_getproperties" and k + 1 < len(
                    args) else "SOURCE_DIR"
                out.append(_Origin(o.source, (f"${{{var}}}",), o.project))
    return out


def _runs(words: list[str]) -> list[str]:
    """The files a command line runs or applies: its program and what :func:`_inputs` takes in
    (``cmake -E env VAR=... prog ...`` is ``prog ...``)."""
    if len(words) > 2 and "cmake" in posixpath.basename(words[0]).lower() and words[1:3] == [
            "-E", "env"]:
        rest = words[3:]
        while rest and ("=" in rest[0] and not rest[0].startswith("-") or rest[0].startswith(
                ("--unset", "--modify"))):
            rest = rest[1:]
        return _runs(rest)
    return [*words[:1], *_inputs(words)] if words else []


def _run_unpinned(cmds: Sequence[Command], values: dict[str, str]) -> Iterator[RawFinding]:
    """A download or fetch with no digest whose content the build then runs or includes."""
    origins = _origins(cmds, values)
    if not origins:
        return
    by_project = {o.project.lower(): o for o in origins if o.project}
    for raw in cmds:
        c = expanded(raw, values)
        hits = _includes(c, origins, by_project) + _command_runs(c, origins, by_project)
        for how, what, o in hits[:1]:
            more = f" (and {len(hits) - 1} more)" if len(hits) > 1 else ""
            yield _finding(RULE_RUN, Category.NETWORK, Severity.CRITICAL, c,
                           f"{how} {what[:120]}, {o.source}{more}",
                           "The build runs code that came from a URL or a branch with no digest: "
                           "whoever serves the URL, or moves the branch, decides what runs on the "
                           "build machine and what goes into the wheel. Pin it (EXPECTED_HASH / "
                           "URL_HASH SHA256=..., GIT_TAG <full commit>) or put it in the tree.")


_Hit = tuple[str, str, _Origin]  # (how, what, origin)


def _includes(c: Command, origins: Sequence[_Origin],
              by_project: dict[str, _Origin]) -> list[_Hit]:
    """CMake code of an origin the command runs: included, added as a subdirectory, made
    available, or built by ExternalProject's steps."""
    first = c.args[0].value if c.args else ""
    if c.name in ("include", "add_subdirectory") and c.args:
        how = ("include() runs the CMake code of" if c.name == "include" else
               "add_subdirectory() runs the CMakeLists.txt of")
        return [(how, first, o) for o in origins if _within(first, o)]
    if c.name == "fetchcontent_makeavailable":
        return [("FetchContent_MakeAvailable runs the CMakeLists.txt of", a.value,
                 by_project[a.value.lower()]) for a in c.args if a.value.lower() in by_project]
    name = _project(c)
    if c.name in _CPM and name.lower() in by_project and not c.has("DOWNLOAD_ONLY"):
        how = "CPMAddPackage" if c.name == "cpmaddpackage" else "CPMFindPackage"
        return [(f"{how} runs the CMakeLists.txt of", name, by_project[name.lower()])]
    if c.name == "externalproject_add" and first.lower() in by_project and _builds(c):
        return [("ExternalProject_Add builds (runs the build scripts of)", first,
                 by_project[first.lower()])]
    return []


def _command_runs(c: Command, origins: Sequence[_Origin],
                  by_project: dict[str, _Origin]) -> list[_Hit]:
    """An origin's file run by one of the command's command lines (by its own name, an
    interpreter, ``cmake -P``, ``git apply``...), or a build tool started in an origin's folder."""
    if c.name not in (*_FETCHERS, "execute_process", "add_custom_command", "add_custom_target"):
        return []
    own = by_project.get(_project(c).lower()) if c.name in _FETCHERS else None
    where = c.keyword_values("WORKING_DIRECTORY")
    inside = next((o for o in origins if where and _within(where[0].value, o)), None)
    hits: list[_Hit] = []
    for keyword, words in _groups(c):
        prog = posixpath.basename(_runs(words)[0])
        tool_mode = words[1:2] == ["-E"]  # cmake -E copy/tar/env...: no build script runs
        if inside is not None and not tool_mode and (_BUILDERS.match(prog.lower())
                                                     or _relative_file(words[0])):
            hits.append((f"{keyword} runs {prog} in", where[0].value, inside))
            continue
        for w in _runs(words):
            o = next((o for o in origins if _within(w, o)), None)
            if o is None and own is not None and keyword in (
                    "PATCH_COMMAND", "UPDATE_COMMAND") and _relative_file(w):
                o = own  # a step runs in the fetched tree: a relative script is its own
            if o is not None:
                hits.append((f"{keyword} runs", w, o))
                break
    return hits


def _builds(c: Command) -> bool:
    """Whether ExternalProject_Add runs the fetched project's build: not when its configure and
    build steps are both switched off (``CONFIGURE_COMMAND ""``, ``BUILD_COMMAND ""``)."""
    off = [all(not a.value.strip() for a in c.keyword_values(k)) and c.has(k)
           for k in ("CONFIGURE_COMMAND", "BUILD_COMMAND")]
    return not all(off)


def _relative_file(word: str) -> bool:
    """A relative path to a file (``./fix.sh``, ``scripts/x.py``), not a program on PATH."""
    w = word.strip()
    return bool(w) and "${" not in w and not w.startswith(("/", "~", "$", "-")) and (
        "/" in w or w.endswith((".sh", ".py", ".pl", ".cmake", ".patch", ".diff")))


def _finding(rule: str, category: Category, severity: Severity, c: Command, message: str,
             help_text: str) -> RawFinding:
    return RawFinding(rule=rule, category=category, severity=severity, line=c.line,
                      end_line=c.end_line, message=message, help=help_text)
