"""Package sources a series adds, judged against upstream's tree and the engine profile.

Rules whose id ends in ``.package-source`` (semgrep's ``dependency.shell.package-source``, the
builtin scanner's ``dependency.builtin.package-source``) find the lines that configure a package
index, a find-links location or a conda channel. This module names the source on such a line — a
``$VAR``/``${VAR}`` value is looked up in the assignments of the same file (a Dockerfile ``ARG``,
an ``export``) — and compares it with the sources upstream's own tree configures and the engine
profile lists (``[extra.scan] package_indexes``). The finding's rule id gets a suffix that the
policy acts on:

- ``<rule>.new-host``: a source neither upstream nor the profile uses; the message names it;
- ``<rule>.known-host``: every source is upstream's, the profile's or the default index;
- ``<rule>.from-variable``: the value comes from a variable the file does not set.

Hosts compare exactly (lower case, without port or credentials); a conda channel by its name
(``defaults`` and ``conda-forge`` are conda's own, as PyPI is pip's). A relative folder
(``pip install -f ./wheels``) is the tree's own and an absolute one the image's: no package host;
one under ``/tmp``, ``/dev/shm`` or a home folder compares by its path, as a host does. A Python
argv item after a quoted option (``("--index-url", index_url)``) is a variable's value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from auditor.errors import AuditError
from auditor.gitio import Git
from auditor.scan.pkgconfig import INDEX_ENV_VARS

SUFFIX = ".package-source"
NEW, KNOWN, FROM_VARIABLE = "new-host", "known-host", "from-variable"
# the installers' own default index (and conda's default channels): never a new source
DEFAULT_INDEXES = frozenset({"pypi.org", "pypi.python.org", "files.pythonhosted.org",
                             "defaults", "conda-forge"})

_URL = re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://(?:[^/\s\"'@]*@)?(\[[0-9a-f:.]+\]|[^/\s\"':?#\\,;)\]}$]+)")
_VAR = re.compile(r"\$\{(\w+)(?::?[-=]([^}]*))?\}|\$(\w+)")
_ASSIGN = re.compile(
    r"(?m)(?:^|[\s;&(])(?:export\s+|readonly\s+|local\s+|declare\s+(?:-\w+\s+)*|ENV\s+|ARG\s+)?"
    r"(\w+)\s?=\s?(\"[^\"\n]*\"|'[^'\n]*'|[^\s;&|)]*)"
    r"|^\s*ENV\s+(\w+)\s+(\"[^\"\n]*\"|'[^'\n]*'|\S+)")
_INDEX_ASSIGNMENT = re.compile(r"(?i)\b\w*(?:INDEX|FIND_LINKS|CHANNEL)\w*[\"']?\s*[=:]\s*[\"']?"
                               r"[a-z][a-z0-9+.-]*://")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_HOSTLIKE = re.compile(r"^(?:[\w-]+\.)+[A-Za-z]{2,}(?::\d+)?(?:/|$)")
# where a source is written: an option's value, an environment variable's, a config key's
_VALUE_SITES = re.compile(
    r"(?:(?<![\w-])--(?:index-url|extra-index-url|find-links|default-index|index|channel)"
    r"(?:=|[\"']?(?:[\s,]|\\\n)+[\"']?)"
    # short options only in their own tool's command (sed -i, bash -c are not sources)
    r"|\bpip[0-9.]*[\"']?[\s,]+[\"']?(?:install|download|wheel)\b(?:[^\n;|&#]|\\\n)*?[\s\"']-[if]"
    r"(?:=|[\"']?(?:[\s,]|\\\n)+[\"']?)"
    r"|\b(?:conda|mamba|micromamba)\b(?:[^\n;|&#]|\\\n)*?\s-c(?:=|\s+)"
    r"|(?<![\w$])" + INDEX_ENV_VARS + r"[\"']?\]?\s*(?:=|:|,|\s)\s*"
    r"|\b(?:index-url|extra-index-url|find-links|url|channels?)\s*[=:]\s*\[?"
    r"|\bset\s+[\w.]*(?:index-url|find-links)\s+"
    r"|\b(?:--add|--append|--prepend)\s+channels\s+"
    r"|^\s*-\s+(?=[\w.:/@-]+\s*$)"
    r")[\"']?(?:[\w-]+=(?=[a-z][a-z0-9+.-]*://))?((?:\$\{[^}\s]*\}|[^\s\"',;)}\]])+)", re.MULTILINE)


# a Python expression (a name, an attribute) as an argv item after a quoted option
_PY_EXPR = re.compile(r"^[A-Za-z_][\w.]*$")
# an unquoted assignment's value that is a Python expression, not a word a shell assigns: a
# keyword constant, a subscript or call, an attribute chain (issue 29: an installer's
# ``index_url = None`` / ``index_url = opts["index_url"][1]`` named the "hosts" None and opts...)
_PY_VALUE = re.compile(r"^(?:None|True|False|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*[\[(].*"
                       r"|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)$")
_ARGV_ITEM = re.compile(r"[\"']\s*,\s*\Z")
# folders anyone can write, or another user's: packages there are not the tree's or the image's
_SHARED_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm", "/home/", "/root", "/run/user")


@dataclass(frozen=True)
class Judgement:
    suffix: str  # NEW, KNOWN or FROM_VARIABLE
    message: str


def upstream_sources(repo: Git, tree: str) -> frozenset[str]:
    """Sources named on upstream's lines that mention an index, find-links, channel or trusted
    host (``git grep`` over the tree). A failed grep yields the empty set: every source is then
    new, which errs towards blocking."""
    greps = (
        ("-i", "-E", "-e", r"index|find[-_]links|channel|trusted[-_]host|\.whl", tree),
        # conda channel lists: the items follow the key
        ("-A", "12", "-E", "-e", r"^\s*(channels|default_channels)\s*:", tree, "--",
         "*.yml", "*.yaml", "*condarc"),
    )
    text = ""
    for args in greps:
        try:
            res = repo.run("grep", "-I", "-h", *args, check=False, text=False)
        except AuditError:
            return frozenset()
        if res.returncode not in (0, 1):
            return frozenset()
        out_bytes = res.stdout if isinstance(res.stdout, bytes) else str(res.stdout).encode()
        text += out_bytes.decode("utf-8", "replace") + "\n"
    out: set[str] = set()
    for line in text.splitlines():
        if _INDEX_ASSIGNMENT.search(line):  # ARG PYTORCH_CUDA_INDEX_BASE_URL=https://...
            out.update(_hosts(line))
        for m in _VALUE_SITES.finditer(line):
            value = m.group(1)
            if "$" not in value:
                out.update(_hosts(value) or {_plain(value)})
    return frozenset(out)


def _hosts(text: str) -> set[str]:
    return {_host(m.group(1)) for m in _URL.finditer(text) if m.group(1)}


def _host(netloc: str) -> str:
    host = netloc.rsplit("@", 1)[-1].lower()
    if host.startswith("["):
        return host
    return host.split(":", 1)[0].rstrip(".")


def _plain(value: str) -> str:
    """A local path, a scheme-less host or a channel name, as compared."""
    value = value.strip("\"'")
    m = _HOSTLIKE.match(value)
    if m and not value.startswith((".", "/", "~")):
        return _host(value.split("/", 1)[0])
    return value.rstrip("/")


def _assignments(text: str) -> dict[str, list[str]]:
    """NAME -> every value the file assigns it (shell, Dockerfile ARG/ENV, Python constants).
    An unquoted Python expression (``None``, ``opts["index_url"][1]``, ``args.index_url``) is
    no source of its own: it is kept as ``""``, a value this file does not give."""
    out: dict[str, list[str]] = {}
    for m in _ASSIGN.finditer(text):
        name = m.group(1) or m.group(3)
        value = (m.group(2) if m.group(1) else m.group(4)) or ""
        if _PY_VALUE.match(value) and not _HOSTLIKE.match(value):
            value = ""
        out.setdefault(name, []).append(value.strip("\"'"))
    return out


def _resolve(value: str, env: Mapping[str, list[str]], depth: int = 0) -> tuple[set[str], bool]:
    """The sources a value names, and whether some variable in it could not be resolved."""
    hosts = _hosts(value)
    if hosts:
        return hosts, False
    if _IDENT.fullmatch(value) and value in env and depth < 4:  # a Python constant
        found: set[str] = set()
        for v in env[value]:
            if v:  # "": an expression this file does not give (see _assignments)
                found |= _resolve(v, env, depth + 1)[0]
        return (found, False) if found else (set(), True)
    refs = list(_VAR.finditer(value))
    if not refs:
        return ({_plain(value)} if value.strip("\"'") else set()), False
    found = set()
    unresolved = False
    for ref in refs:
        name = ref.group(1) or ref.group(3)
        default = ref.group(2)
        values = [v for v in env.get(name, []) if v] or ([default] if default else [])
        if not values or depth >= 4:
            unresolved = True
            continue
        for v in values:
            rest = value[:ref.start()] + v + value[ref.end():]
            got, unres = _resolve(rest, env, depth + 1)
            found |= got
            unresolved |= unres and not got
    return found, unresolved and not found


class SourceJudge:
    """Decides, for one scan, whether a package-source finding names a new source."""

    def __init__(self, known: Iterable[str]) -> None:
        self.known = frozenset(k.lower().rstrip("/") for k in known) | DEFAULT_INDEXES
        self._env_cache: dict[str, dict[str, list[str]]] = {}

    @staticmethod
    def applies(rule: str) -> bool:
        return rule.endswith(SUFFIX)

    def judge(self, code: str, text: str) -> Judgement:
        """``code``: the finding's lines; ``text``: the whole file (for variable values)."""
        env = self._env_cache.get(text)
        if env is None:
            env = self._env_cache[text] = _assignments(text)
        sites = list(_VALUE_SITES.finditer(code))
        values = [m.group(1) for m in sites]
        sources: set[str] = set()
        unresolved = False
        for m, value in zip(sites, values, strict=True):
            if _PY_EXPR.match(value) and _ARGV_ITEM.search(code, 0, m.start(1)):
                # a Python argv item (``("--index-url", index_url)``): the value is the
                # expression's, as a variable's
                if not env.get(value):
                    unresolved = True
                    continue
            got, unres = _resolve(value, env)
            sources |= got
            unresolved |= unres
        if not values:  # an item of a list (a TOML array line): its URLs
            sources = _hosts(code)
        # a relative folder is the tree's own, an absolute one the image's (a COPY of the tree,
        # /io in a manylinux build); /tmp, /dev/shm or a home folder is nobody's: judged as a host
        local = {s for s in sources if s.startswith(("./", "../")) or s == "." or (
            s.startswith("/") and not s.startswith(_SHARED_FOLDERS))}
        new = sorted(s for s in sources - local if s.lower() not in self.known)
        if new:
            return Judgement(NEW, "Adds the package source " + ", ".join(new)
                             + ", which upstream's tree does not use and the engine profile "
                               "does not list (package_indexes)")
        if unresolved or not sources:
            return Judgement(FROM_VARIABLE, "A package source is taken from a variable this file "
                                            "does not set; check the value it gets at build or "
                                            "start time")
        if local and local == sources:
            return Judgement(KNOWN, "Installs packages from the tree's own folder "
                             + ", ".join(sorted(local)) + ": no package host")
        return Judgement(KNOWN, "Uses the package source " + ", ".join(sorted(sources))
                         + ", which upstream or the engine profile already uses")
