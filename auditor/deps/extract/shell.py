"""``pip install`` lines in Dockerfiles and shell scripts.

Recognised: ``pip``/``pip3``/``pipX.Y install``, ``python -m pip install``, ``uv pip install``, in
``RUN`` instructions and script lines, with ``\\`` continuations and ``&&``/``;``/``|`` chains.
Requirements, URLs and VCS requirements become declarations; ``-i``/``--index-url``,
``--extra-index-url``, ``-f``/``--find-links`` and ``--trusted-host`` become index declarations;
an argument built from a shell variable or substitution is reported as not checked. Package
sources set through the environment (``ENV``/``ARG``/``export`` of ``PIP_INDEX_URL``,
``PIP_EXTRA_INDEX_URL``, ``PIP_FIND_LINKS``, ``PIP_TRUSTED_HOST`` and uv's ``UV_*`` equivalents)
are index declarations too. Dockerfile ``RUN --mount=...`` / ``--network=...`` flags are skipped.
An install spelt otherwise (``p''ip``, ``i\\nstall``, ``$PIP install`` with ``PIP=pip`` set earlier)
is found in the script's words as the shell reads them (:mod:`auditor.scan.shellwords`).
"""

from __future__ import annotations

import re
import shlex
from pathlib import PurePosixPath

from auditor.deps.declaration import Collector, Extraction, Topic
from auditor.deps.extract.lines import logical_lines
from auditor.deps.extract.requirements import INDEX_OPTIONS, is_requirements_file
from auditor.scan import shellwords

SHELL_SUFFIXES = (".sh", ".bash")
_PIP = re.compile(r"^(pip[0-9.]*|.*/pip[0-9.]*)$")
_PYTHON = re.compile(r"^(python[0-9.]*|.*/python[0-9.]*)$")
# Dockerfile RUN flags written before the command: RUN --mount=type=cache,target=... pip install
_RUN_FLAG = re.compile(r"^--(mount|network|security)=")
# package sources set through the environment (Dockerfile ENV/ARG, shell export/assignment)
_INDEX_ENV = re.compile(
    r"(?:^|[\s;&|(])(?:ENV\s+|ARG\s+|export\s+)?(?P<var>(?:PIP|UV)_(?:EXTRA_)?INDEX_URL|"
    r"PIP_FIND_LINKS|UV_FIND_LINKS|PIP_TRUSTED_HOST|UV_INDEX|UV_DEFAULT_INDEX)"
    r"(?:=|\s+)(?P<q>[\"']?)(?P<value>[^\s\"']+)(?P=q)")
_ENV_OPTION = {"PIP_INDEX_URL": "index-url", "UV_INDEX_URL": "index-url",
               "UV_DEFAULT_INDEX": "index-url", "PIP_EXTRA_INDEX_URL": "extra-index-url",
               "UV_EXTRA_INDEX_URL": "extra-index-url", "UV_INDEX": "extra-index-url",
               "PIP_FIND_LINKS": "find-links", "UV_FIND_LINKS": "find-links",
               "PIP_TRUSTED_HOST": "trusted-host"}
_SEPARATORS = {"&&", "||", ";", "|", "&", "(", ")", ";;"}
# pip install options that take a value but do not name where packages come from
_VALUE_OPTIONS = {"-t", "--target", "--prefix", "--root", "--platform", "--python-version",
                  "--implementation", "--abi", "--src", "--upgrade-strategy", "--progress-bar",
                  "--cache-dir", "--log", "--timeout", "--retries", "--proxy", "--cert",
                  "--client-cert", "--global-option", "--config-settings", "-C",
                  "--only-binary", "--no-binary", "--use-feature", "--report", "--python",
                  "--exists-action", "--root-user-action", "--keyring-provider"}


def is_script(p: PurePosixPath) -> bool:
    name = p.name
    return (name == "Dockerfile" or name.startswith(("Dockerfile.", "Containerfile"))
            or name.endswith((".dockerfile", ".Dockerfile")) or name == "Containerfile"
            or p.suffix in SHELL_SUFFIXES)


def _logical_lines(text: str) -> list[tuple[int, int, str]]:
    """(first line, last line, joined text) with ``\\`` continuations joined; comment lines are
    dropped, also inside a (Dockerfile) continuation."""
    return logical_lines(text, lambda raw: None if raw.lstrip().startswith("#") else raw.rstrip())


def _pip_args(words: list[str]) -> list[str] | None:
    """The arguments after ``install`` when ``words`` is a pip install command, else None."""
    i = 0
    while i < len(words) and (re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[i])
                              or words[i] in ("sudo", "exec", "RUN", "env", "time")
                              or _RUN_FLAG.match(words[i])):
        i += 1
    w = words[i:]
    if len(w) >= 2 and _PIP.match(w[0]) and w[1] == "install":
        return w[2:]
    if len(w) >= 4 and _PYTHON.match(w[0]) and w[1] == "-m" and w[2] == "pip" and w[3] == "install":
        return w[4:]
    if len(w) >= 3 and w[0] == "uv" and w[1] == "pip" and w[2] == "install":
        return w[3:]
    return None


def extract(path: str, text: str) -> Extraction:
    col = Collector(path)
    physical = text.splitlines()
    respelt: list[shellwords.Command] | None = None  # the script's words as the shell reads them
    for line, last, logical in _logical_lines(text):
        span = _Span(physical, line, last)
        _index_variables(col, logical, span)
        if "install" not in logical or "pip" not in logical:
            # `p''ip i\nstall`, `$PIP install`: spelt otherwise, the same install
            if respelt is None:
                respelt = shellwords.parse(text)
            for cmd in respelt:
                args = _pip_args(list(cmd.words)) if line <= cmd.line <= last else None
                if args is not None:
                    _take(col, args, logical, span)
            continue
        commands = _commands(logical)
        if commands is None:
            col.skip(line, f"cannot be parsed as shell: {logical[:120]!r}")
            continue
        for words in commands:
            args = _pip_args(words)
            if args is None:
                continue
            _take(col, args, logical, span)
    return col.done()


def _index_variables(col: Collector, logical: str, span: _Span) -> None:
    """Package sources set through pip's environment variables (PIP_INDEX_URL=...)."""
    for m in _INDEX_ENV.finditer(logical):
        value, var = m.group("value"), m.group("var")
        where = span.line_of(value)
        if "$" in value or "`" in value:
            col.skip(where, f"{var} is set to {value[:80]!r}, computed by the shell: the "
                     "package source is not checked", group="pip install",
                     topic=Topic.SHELL_COMPUTED)
        elif "://" in value or var.endswith("TRUSTED_HOST"):
            col.index(_ENV_OPTION[var], value, where, logical)


def _commands(logical: str) -> list[list[str]] | None:
    """The simple commands of a shell line (or a Dockerfile RUN, exec form too) as word lists;
    None when the shell text cannot be split."""
    body = re.sub(r"^RUN\s+", "", logical)
    if body.startswith("["):  # exec form: RUN ["pip", "install", ...]
        return [re.findall(r'"((?:\\.|[^"\\])*)"', body)]
    try:
        lex = shlex.shlex(body, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        lex.commenters = "#"
        tokens = list(lex)
    except ValueError:
        return None
    commands: list[list[str]] = [[]]
    for tok in tokens:
        if tok in _SEPARATORS:
            commands.append([])
        else:
            commands[-1].append(tok)
    return commands


class _Span:
    """The physical lines of one logical line: which line a token is written on."""

    def __init__(self, lines: list[str], first: int, last: int) -> None:
        self.lines, self.first, self.last = lines, first, last

    def line_of(self, token: str) -> int:
        for n in range(self.first, min(self.last, len(self.lines)) + 1):
            if token in self.lines[n - 1]:
                return n
        return self.first


def _take(col: Collector, args: list[str], raw: str, span: _Span) -> None:
    rest = list(args)
    while rest:
        tok = rest.pop(0)
        line = span.line_of(tok)
        if "$" in tok or "`" in tok:
            col.skip(line, f"pip install argument {tok[:80]!r} is computed by the shell: "
                     "not checked", group="pip install", topic=Topic.SHELL_COMPUTED)
            if tok.startswith("-") and "=" not in tok and rest:
                rest.pop(0)
            continue
        if tok.startswith("-"):
            opt, value = tok, None
            if tok.startswith("--") and "=" in tok:
                opt, _, value = tok.partition("=")
            elif not tok.startswith("--") and len(tok) > 2 and tok[:2] in ("-i", "-f", "-r",
                                                                             "-c", "-e"):
                opt, value = tok[:2], tok[2:]
            takes_value = opt in INDEX_OPTIONS or opt in _VALUE_OPTIONS or opt in (
                "-r", "--requirement", "-c", "--constraint", "-e", "--editable")
            if takes_value and value is None:
                value = rest.pop(0) if rest else ""
            if value and ("$" in value or "`" in value) and opt not in _VALUE_OPTIONS:
                col.skip(line, f"pip install {opt} {value[:80]!r} is computed by the shell: "
                         "not checked", group="pip install", topic=Topic.SHELL_COMPUTED)
                continue
            if opt in INDEX_OPTIONS:
                col.index(INDEX_OPTIONS[opt], value or "", line, raw)
            elif opt in ("-e", "--editable") and value and ("://" in value
                                                            or value.startswith("git+")):
                col.requirement(value, line, group="pip install", raw=raw)
            elif opt in ("-r", "--requirement", "-c", "--constraint") and not (
                    value and is_requirements_file(PurePosixPath(value))):
                # files named requirements*.txt are read from the tree anyway
                col.skip(line, f"pip install {opt} {value!r}: not a requirements file of the "
                         "tree, not checked")
            continue
        if tok in (".", "..") or tok.startswith(("./", "../", "/", "file:")) or (
                tok.endswith((".whl", ".tar.gz", ".zip")) and "://" not in tok):
            continue  # a local path: part of the tree (or the image), not a new dependency
        col.requirement(tok, line, group="pip install", raw=raw)
