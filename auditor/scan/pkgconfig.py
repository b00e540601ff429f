"""Package sources and launch environment in configuration files semgrep does not parse.

The builtin scanner calls :func:`config_findings` for files whose format no semgrep language
covers: pip's ``pip.conf``/``pip.ini`` (INI), ``uv.toml`` and ``pyproject.toml`` (``[tool.uv]``,
``[[tool.uv.index]]``, poetry and pdm sources), conda's ``.condarc`` and ``environment.yml``
channels, requirements files (``--index-url`` lines), environment files (``.env``, ``*.env``) and
systemd units (``Environment=``). It reports, one finding per line that carries a value:

- ``dependency.builtin.package-source``: an index, find-links location or channel (the scan engine
  then names the host and judges it new or known, :mod:`auditor.scan.sources`);
- ``dependency.builtin.index-tls-off``: TLS checks off for an index (trusted/insecure host,
  ``ssl_verify: false``, ``verify_ssl = false``);
- ``dependency.builtin.default-index-tls-off``: TLS checks off for the default index's own hosts
  only (``trusted-host = pypi.org files.pythonhosted.org``): no new index, reviewed (issue 29);
- ``process-exec.builtin.launch-environment``: LD_PRELOAD, PYTHONPATH or LD_LIBRARY_PATH pointed
  outside the system folders, or ``--trust-remote-code``, in a unit or environment file.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Sequence

from auditor.model import Category, Severity
from auditor.scan.interface import RawFinding

SOURCE_RULE = "dependency.builtin.package-source"
TLS_RULE = "dependency.builtin.index-tls-off"
DEFAULT_TLS_RULE = "dependency.builtin.default-index-tls-off"
LAUNCH_RULE = "process-exec.builtin.launch-environment"

_SOURCE_HELP = ("Every package name resolved from this source can be served by whoever runs it: a "
                "package named like an engine dependency (dependency confusion) or another build "
                "of it. Keep installs on the indexes upstream uses; if a private mirror is needed, "
                "pin every requirement with --require-hashes and name it in the engine profile.")
_TLS_HELP = ("With TLS checks off anyone on the network path can serve packages in the index's "
             "name. Remove the setting; a mirror with a private certificate authority takes a "
             "cert setting instead.")
_DEFAULT_TLS_HELP = ("Trusting pypi.org or files.pythonhosted.org is usually a work-around for a "
                     "proxy that breaks TLS; it names no new index, but anyone on the network "
                     "path can then serve packages in PyPI's name. Remove it; a proxy with its "
                     "own certificate authority takes a cert setting instead.")
# the default index's own hosts (scan/sources.py's DEFAULT_INDEXES, pip's part), with a port
_DEFAULT_HOST = re.compile(r"(?i)^(?:pypi\.org|pypi\.python\.org|files\.pythonhosted\.org)"
                           r"(?::\d+)?$")
_LAUNCH_HELP = ("A preloaded library, a module folder in front of the installed ones, a library "
                "folder outside the system ones, or the model's own Python code runs inside the "
                "server without being reviewed. Remove it, or ship the code through the reviewed "
                "dependency lock.")

# the environment variables that name where pip and uv take packages from (one alternation, longest
# names first where one is a prefix of another; scan/sources.py reads the same list)
INDEX_ENV_VARS = (r"(?:PIP_INDEX_URL|PIP_EXTRA_INDEX_URL|PIP_FIND_LINKS|UV_INDEX_URL|"
                  r"UV_EXTRA_INDEX_URL|UV_DEFAULT_INDEX|UV_INDEX|UV_FIND_LINKS)")
_INDEX_ENV = re.compile(
    r"^\s*(?:export\s+|Environment=[\"']?(?:\S+\s+)*?)?[\"']?(" + INDEX_ENV_VARS + r")"
    r"=[\"']?(?=\S)(?![\"']?\s*$)")
_TLS_ENV = re.compile(r"^\s*(?:export\s+|Environment=[\"']?(?:\S+\s+)*?)?[\"']?"
                      r"(PIP_TRUSTED_HOST|UV_INSECURE_HOST)=[\"']?(?=\S)(?![\"']?\s*$)")
_REQ_OPTION = re.compile(r"^\s*(--index-url|--extra-index-url|--find-links|-i|-f)(?:=|\s+)\S")
_REQ_TLS = re.compile(r"^\s*--trusted-host(?:=|\s+)(?=\S)")
_INI_KEY = re.compile(r"^\s*(index-url|extra-index-url|find-links|trusted-host)\s*[=:]\s*(.*)$",
                      re.IGNORECASE)
_TOML_HEADER = re.compile(r"^\s*\[\[?\s*([\w.\-\"']+)\s*\]\]?\s*(?:#.*)?$")
_TOML_KEY = re.compile(r"^\s*[\"']?([\w-]+)[\"']?\s*=\s*(.*)$")
_YAML_KEY = re.compile(r"^(\s*)([\w-]+)\s*:\s*(.*)$")
_YAML_ITEM = re.compile(r"^\s*-\s+[\"']?([^\s\"'#]+)")
_FALSE = re.compile(r"^[\"']?(false|no|off|0)[\"']?\s*(?:#.*)?$", re.IGNORECASE)
_URLISH = re.compile(r"[a-z][a-z0-9+.-]*://|^[\"']?[/~.]|\$", re.IGNORECASE)

_SYSTEM_LIB = ("/usr/lib", "/usr/local/lib", "/lib", "/usr/lib64", "/usr/local/cuda",
               "/usr/local/nvidia", "/opt/rocm", "/opt/nvidia")
_PRELOAD = re.compile(r"(?:^|[\s\"'=])(LD_PRELOAD|PYTHONPATH|LD_LIBRARY_PATH)=[\"']?([^\s\"']+)")
_TRUST = re.compile(r"(?<![\w-])--trust-remote-code(?![\w-])")


def kind_of(path: str) -> str | None:
    """Which configuration format a path holds, or None when it is not one this module reads."""
    name = posixpath.basename(path).lower()
    parent = posixpath.basename(posixpath.dirname(path)).lower()
    if name in ("pip.conf", "pip.ini") or (name == "config" and parent == "pip"):
        return "ini"
    if name in ("uv.toml", "pyproject.toml", "pdm.toml", "poetry.toml"):
        return "toml"
    if name in (".condarc", "condarc", ".mambarc") or name in ("environment.yml",
                                                               "environment.yaml"):
        return "conda"
    if name.endswith((".txt", ".in")) and ("requirement" in name or "constraint" in name
                                           or parent == "requirements"):
        return "requirements"
    if name.endswith(".service") or (name.endswith((".env", ".conf"))
                                     and parent.endswith(("systemd", ".service.d"))):
        return "unit"
    if name == ".env" or name.startswith(".env.") or name.endswith(".env") \
            or name == "environment":
        return "env"
    return None


def config_findings(kind: str, lines: Sequence[str]) -> Iterator[RawFinding]:
    """Findings for one configuration file of ``kind`` (see :func:`kind_of`)."""
    reader = {"ini": _ini, "toml": _toml, "conda": _conda, "requirements": _requirements,
              "unit": _env_lines, "env": _env_lines}[kind]
    yield from reader(lines)
    if kind in ("unit", "env"):
        yield from _launch(lines)


def _source(n: int, what: str) -> RawFinding:
    return RawFinding(rule=SOURCE_RULE, category=Category.DEPENDENCY, severity=Severity.HIGH,
                      line=n, end_line=n, message=f"a package source is configured ({what})",
                      help=_SOURCE_HELP)


def _tls(n: int, what: str, value: str | None = None) -> RawFinding:
    """TLS off for an index; ``value``: the host list the line gives, when it gives one. Only
    the default index's own hosts there: the review rule, not a new insecure index."""
    if value is not None and _only_default_hosts(value):
        return RawFinding(rule=DEFAULT_TLS_RULE, category=Category.DEPENDENCY,
                          severity=Severity.MEDIUM, line=n, end_line=n,
                          message=f"TLS certificate checks are off for the default index's own "
                                  f"hosts ({what}): no new index, but PyPI can be impersonated",
                          help=_DEFAULT_TLS_HELP)
    return RawFinding(rule=TLS_RULE, category=Category.DEPENDENCY, severity=Severity.HIGH,
                      line=n, end_line=n,
                      message=f"TLS certificate checks are off for a package index ({what})",
                      help=_TLS_HELP)


def _only_default_hosts(value: str) -> bool:
    """Whether a host list (blanks or commas between, quotes and brackets around, a trailing
    comment) names hosts, and only the default index's own."""
    hosts = [h for h in re.split(r"[\s,]+", value.split("#", 1)[0].strip().strip("[]"))
             if h.strip("\"'")]
    return bool(hosts) and all(_DEFAULT_HOST.match(h.strip("\"'")) for h in hosts)


def _comment(line: str) -> bool:
    return line.lstrip().startswith(("#", ";"))


def _ini(lines: Sequence[str]) -> Iterator[RawFinding]:
    current: str | None = None  # the key whose indented continuation lines follow
    for n, line in enumerate(lines, start=1):
        if not line.strip() or _comment(line):
            continue
        if line[:1].isspace() and current is not None:
            yield _tls(n, current, line) if current == "trusted-host" else _source(n, current)
            continue
        current = None
        m = _INI_KEY.match(line)
        if m:
            key = m.group(1).lower()
            current = key
            if m.group(2).strip():
                yield _tls(n, key, m.group(2)) if key == "trusted-host" else _source(n, key)


def _toml(lines: Sequence[str]) -> Iterator[RawFinding]:
    section = ""
    array_key: str | None = None  # inside a multi-line array of this key
    for n, line in enumerate(lines, start=1):
        if _comment(line) or not line.strip():
            continue
        if array_key is not None:
            if array_key == "allow-insecure-host":
                # its items are host names, not URLs: every item is one
                if line.split("#", 1)[0].strip(" \t,]"):
                    yield _tls(n, array_key, line.split("]", 1)[0])
            elif _URLISH.search(line):
                yield _source(n, array_key)
            if "]" in line.split("#", 1)[0]:
                array_key = None
            continue
        h = _TOML_HEADER.match(line)
        if h:
            section = h.group(1).replace('"', "").replace("'", "").lower()
            continue
        m = _TOML_KEY.match(line)
        if not m:
            continue
        key, value = m.group(1).lower(), m.group(2).strip()
        found, array_key = _toml_key(n, section, key, value)
        yield from found


def _toml_key(n: int, section: str, key: str, value: str
              ) -> tuple[list[RawFinding], str | None]:
    """The findings of one ``key = value`` line in ``[section]``, and the key whose multi-line
    array it opens (its items are then reported line by line), if it opens one."""
    uv = section in ("", "pip", "tool.uv", "tool.uv.pip") or section.startswith(
        ("index", "tool.uv.index"))
    source_table = section in ("index", "tool.uv.index", "tool.poetry.source",
                               "tool.pdm.source", "source")
    opens_array = value.startswith("[") and "]" not in value
    if uv and key in ("index-url", "extra-index-url", "find-links") or (
            source_table and key == "url"):
        what = f"{section + '.' if section else ''}{key}"
        if opens_array:
            return ([_source(n, what)] if _URLISH.search(value) else []), what
        return [_source(n, what)], None
    if uv and key == "allow-insecure-host":
        if opens_array:
            return ([_tls(n, key, value)] if value.strip("[ ") else []), "allow-insecure-host"
        return [_tls(n, key, value)], None
    if source_table and key == "verify_ssl" and _FALSE.match(value):
        return [_tls(n, f"{section}.verify_ssl = false")], None
    return [], None


def _conda(lines: Sequence[str]) -> Iterator[RawFinding]:
    in_list: tuple[int, str] | None = None  # (indent, key) of the channel list being read
    for n, line in enumerate(lines, start=1):
        if _comment(line) or not line.strip():
            continue
        if in_list is not None:
            item = _YAML_ITEM.match(line)
            indent = len(line) - len(line.lstrip())
            if item and indent >= in_list[0]:
                if item.group(1) != "defaults":
                    yield _source(n, in_list[1])
                continue
            in_list = None
        m = _YAML_KEY.match(line)
        if not m:
            continue
        indent, key, value = len(m.group(1)), m.group(2).lower(), m.group(3).strip()
        if key in ("channels", "default_channels", "custom_channels"):
            if not value:
                in_list = (indent, key)
            elif value not in ("[]", "{}"):
                yield _source(n, key)
        elif key in ("channel_alias", "custom_multichannels") and value:
            yield _source(n, key)
        elif key == "ssl_verify" and _FALSE.match(value):
            yield _tls(n, "ssl_verify: false")


def _requirements(lines: Sequence[str]) -> Iterator[RawFinding]:
    for n, line in enumerate(lines, start=1):
        m = _REQ_OPTION.match(line)
        if m:
            value = line.split(None, 1)[-1] if "=" not in m.group(0) else line.split("=", 1)[1]
            if not re.search(r"https://(?:pypi\.org|pypi\.python\.org)/simple/?\s*$", value):
                yield _source(n, m.group(1))
        elif t := _REQ_TLS.match(line):
            yield _tls(n, "--trusted-host", line[t.end():])


def _env_lines(lines: Sequence[str]) -> Iterator[RawFinding]:
    for n, line in enumerate(lines, start=1):
        if _comment(line):
            continue
        m = _INDEX_ENV.search(line)
        if m:
            yield _source(n, m.group(1))
            continue
        t = _TLS_ENV.search(line)
        if t:
            yield _tls(n, t.group(1), _env_value(line[t.end():]))


def _env_value(rest: str) -> str:
    """The value of an environment line after ``NAME=``: up to its closing quote when quoted,
    else the line's rest (a unit's ``Environment=`` holds more assignments: they are hosts to
    nothing and make the list not the default index's alone, which errs towards blocking)."""
    rest = rest.rstrip()
    for q in "\"'":
        if q in rest:
            return rest.split(q, 1)[0]
    return rest


def _outside(name: str, value: str) -> list[str]:
    """The path elements of an LD_PRELOAD/PYTHONPATH/LD_LIBRARY_PATH value that point outside
    the system folders (variables and bare library names are left alone)."""
    out = []
    for part in re.split(r"[:\s]", value):
        if not part or part.startswith("$") or not part.startswith(("/", "~", ".")):
            continue
        if name == "PYTHONPATH" and part.startswith(("/usr/lib/python", "/usr/local/lib/python")):
            continue
        if name != "PYTHONPATH" and (part.startswith(_SYSTEM_LIB)
                                     or "/site-packages/" in part or "/dist-packages/" in part):
            continue
        if name == "PYTHONPATH" and part.startswith("."):
            continue
        out.append(part)
    return out


def _launch(lines: Sequence[str]) -> Iterator[RawFinding]:
    for n, line in enumerate(lines, start=1):
        if _comment(line):
            continue
        what = [f"{m.group(1)}={', '.join(bad)}" for m in _PRELOAD.finditer(line)
                if (bad := _outside(m.group(1), m.group(2)))]
        if _TRUST.search(line):
            what.append("--trust-remote-code")
        if what:
            yield RawFinding(rule=LAUNCH_RULE, category=Category.PROCESS_EXEC,
                             severity=Severity.HIGH, line=n, end_line=n,
                             message="the server's launch runs code nobody reviewed ("
                                     + "; ".join(what) + ")",
                             help=_LAUNCH_HELP)
