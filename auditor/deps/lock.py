"""``[deps] lock``: the exact set of packages that is deployed, read from what people have.

Two shapes are read:

* a pinned requirements file, as ``pip freeze``, ``pip-compile``, ``uv pip compile`` and
  ``uv export`` write it: ``name[extras]==version ; markers`` lines, ``\\`` continuations with
  ``--hash=sha256:...`` options, ``# via`` comments, index options (``-i``/``--index-url``,
  ``--extra-index-url``, ``--find-links``, ``--trusted-host``), ``-e``/local paths of the project
  itself, and ``name @ URL`` direct references;
* a PEP 751 ``pylock.toml`` (``lock-version``, ``[[packages]]`` with ``name``, ``version``,
  ``marker`` and the ``hashes`` of its wheels, sdist, archive).

The lock is untrusted input: anything that is not one of these shapes (a range instead of a pin, an
``-r`` include, an unknown option, a bad TOML table) is a :class:`~auditor.errors.SpecError` that
names the file and line (exit 2), never guessed around.

Markers are evaluated for the lock's own environment when it states one (pip-compile's "with
Python 3.11" header, a ``--python-version`` in the command it records, or pylock's
``environments``), else for CPython 3.12 on Linux x86_64.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.markers import InvalidMarker, Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from auditor.deps.declaration import parse_requirement
from auditor.deps.extract.lines import logical_lines
from auditor.errors import SpecError
from auditor.textsafe import excerpt

MAX_LOCK_BYTES = 32 * 1024 * 1024
DEFAULT_PYTHON = "3.12"
_INDEX_OPTIONS = {"-i": "index-url", "--index-url": "index-url",
                  "--extra-index-url": "extra-index-url", "-f": "find-links",
                  "--find-links": "find-links", "--trusted-host": "trusted-host"}
_FLAGS = {"--no-index", "--pre", "--prefer-binary", "--require-hashes", "--no-deps",
          "--only-binary", "--no-binary", "--no-build-isolation"}


def environment(python: str = DEFAULT_PYTHON) -> dict[str, str]:
    """Marker variables of CPython ``python`` on Linux x86_64."""
    full = python if python.count(".") >= 2 else f"{python}.0"
    return {"python_version": ".".join(full.split(".")[:2]), "python_full_version": full,
            "implementation_name": "cpython", "implementation_version": full,
            "platform_python_implementation": "CPython", "sys_platform": "linux",
            "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
            "platform_release": "", "platform_version": "", "extra": ""}


@dataclass(frozen=True)
class LockedPackage:
    name: str  # canonical
    version: str | None  # None only for a direct URL/VCS reference without a version
    line: int
    hashes: tuple[str, ...] = ()  # "sha256:<hex>", as written
    markers: str = ""
    url: str | None = None
    extras: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "line": self.line,
                "hashes": list(self.hashes), "markers": self.markers, "url": self.url}


@dataclass(frozen=True)
class Lock:
    path: Path
    format: str  # "requirements" | "pylock"
    packages: tuple[LockedPackage, ...]
    python: str  # the Python version markers are evaluated for
    python_source: str  # where that came from: "the lock" or "default"
    indexes: tuple[tuple[str, str, int], ...] = ()  # (option, url, line)
    env: Mapping[str, str] = field(default_factory=dict)

    def active(self) -> tuple[LockedPackage, ...]:
        """The packages whose markers hold in the lock's environment."""
        return tuple(p for p in self.packages if marker_holds(p.markers, self.env))

    def by_name(self) -> dict[str, list[LockedPackage]]:
        out: dict[str, list[LockedPackage]] = {}
        for p in self.active():
            out.setdefault(p.name, []).append(p)
        return out

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "format": self.format,
                "environment": f"CPython {self.python} on Linux x86_64 ({self.python_source})",
                "packages": [p.to_json() for p in self.packages],
                "indexes": [{"option": o, "url": u, "line": n} for o, u, n in self.indexes]}


def marker_holds(markers: str, env: Mapping[str, str]) -> bool:
    if not markers:
        return True
    try:
        return Marker(markers).evaluate(dict(env))
    except (InvalidMarker, ValueError, TypeError):
        return True  # cannot tell: assume it applies (stricter)


def _reason(exc: Exception) -> str:
    """The first line of a packaging error: what is wrong, without the text it quotes."""
    return str(exc).split("\n", 1)[0].strip()[:120]


def _err(path: Path, line: int, msg: str) -> SpecError:
    return SpecError(f"line {line}: {msg}" if line else msg, file=str(path), key="deps.lock",
                     hint="a lock pins every package: name==version, optionally with --hash "
                          "(pip-compile --generate-hashes, uv export) or a PEP 751 pylock.toml")


def read_lock(path: Path) -> Lock:
    from auditor.errors import InputError
    from auditor.inputs import read_input_text  # checked: a regular file under the cap, no FIFO

    try:
        text = read_input_text(path, "[deps] lock", MAX_LOCK_BYTES)
    except InputError as exc:
        raise _err(path, 0, str(exc.message).removeprefix(f"[deps] lock {path}: ")) from None
    if path.suffix == ".toml":
        return _read_pylock(path, text)
    return _read_requirements(path, text)


_PYTHON_IN_HEADER = (re.compile(r"with Python (\d+\.\d+(?:\.\d+)?)"),
                     re.compile(r"--python(?:-version)?[= ](\d+\.\d+(?:\.\d+)?)"))


def _header_python(text: str) -> str | None:
    for raw in text.splitlines()[:30]:
        if not raw.startswith("#"):
            continue
        for pat in _PYTHON_IN_HEADER:
            m = pat.search(raw)
            if m:
                return m.group(1)
    return None


def _strip_comment(raw: str) -> str:
    return re.sub(r"(^|\s)#.*$", "", raw)


def _read_requirements(path: Path, text: str) -> Lock:
    packages: list[LockedPackage] = []
    indexes: list[tuple[str, str, int]] = []
    for line, _last, logical in logical_lines(text, _strip_comment):
        if logical.startswith("-"):
            _read_option(path, line, logical, indexes, packages)
            continue
        # the requirement, then its options (--hash); markers keep their quotes
        parts = re.split(r"\s+(?=--)", logical)
        hashes = _hashes(path, line, parts[1:])
        req_text = parts[0]
        if _is_local(req_text):
            continue
        packages.append(_locked(path, line, req_text, hashes))
    if not packages:
        raise _err(path, 0, "lists no packages")
    py = _header_python(text)
    return Lock(path, "requirements", tuple(packages), py or DEFAULT_PYTHON,
                "the lock" if py else "default", tuple(indexes), environment(py or DEFAULT_PYTHON))


def _read_option(path: Path, line: int, logical: str, indexes: list[tuple[str, str, int]],
                 packages: list[LockedPackage]) -> None:
    """An option line of a requirements lock: an index (into ``indexes``), an editable VCS
    checkout (into ``packages``), a harmless flag, or an error."""
    try:
        tokens = shlex.split(logical)
    except ValueError as exc:
        raise _err(path, line, f"cannot be parsed ({exc})") from None
    opt, _, value = tokens[0].partition("=")
    rest = tokens[1:]
    if not value and opt in (*_INDEX_OPTIONS, "-e", "--editable") and rest:
        value = rest.pop(0)
    if opt in _INDEX_OPTIONS:
        if not value:
            raise _err(path, line, f"{excerpt(opt)} without a value")
        indexes.append((_INDEX_OPTIONS[opt], value, line))
        return
    if opt in ("-e", "--editable"):
        if value and ("://" in value or value.startswith(("git+", "hg+"))):
            # pip freeze of a VCS checkout: -e git+https://host/x.git@<sha>#egg=x
            decl = parse_requirement(value, str(path), line)
            if decl is None:
                raise _err(path, line, f"cannot read the editable {excerpt(value)}")
            packages.append(LockedPackage(decl.name, None, line, url=decl.url))
        return  # a local path: the project itself (uv export writes "-e .")
    if opt in _FLAGS:
        return
    if opt in ("-r", "--requirement", "-c", "--constraint"):
        raise _err(path, line, f"{opt} includes another file; give one complete lock")
    raise _err(path, line, f"unknown option {excerpt(opt)}")


def _hashes(path: Path, line: int, options: list[str]) -> tuple[str, ...]:
    """The ``--hash`` values after a requirement (the only options allowed there)."""
    hashes: list[str] = []
    for opt in options:
        m = re.fullmatch(r"--hash[=\s]+(\S+)", opt.strip())
        if not m:
            raise _err(path, line, f"unknown option {excerpt(opt.strip().split('=')[0])}")
        value = m.group(1)
        if not re.fullmatch(r"[a-z0-9]+:[0-9a-fA-F]{32,128}", value):
            raise _err(path, line, f"malformed --hash {excerpt(value)}")
        hashes.append(value.lower())
    return tuple(hashes)


def _is_local(text: str) -> bool:
    t = text.split(";", 1)[0].strip()
    return t in (".", "..") or t.startswith(("./", "../", "/"))


def _locked(path: Path, line: int, text: str, hashes: tuple[str, ...]) -> LockedPackage:
    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        raise _err(path, line, f"not a requirement: {excerpt(text)} ({_reason(exc)})") from None
    markers = str(req.marker) if req.marker else ""
    name = canonicalize_name(req.name)
    if req.url:
        m = re.search(r"[-_](\d+(?:\.\d+)+[\w.+!-]*?)(?:-py|-cp|\.tar|\.zip|\.whl|$)",
                      req.url.rsplit("/", 1)[-1])
        return LockedPackage(name, m.group(1) if m else None, line, hashes, markers, req.url,
                             tuple(sorted(req.extras)))
    specs = list(req.specifier)
    if len(specs) != 1 or specs[0].operator not in ("==", "===") or "*" in specs[0].version:
        pinned = excerpt(f"{req.name}{req.specifier or ''}")
        raise _err(path, line, f"{pinned} is not pinned to one version (==X)")
    return LockedPackage(name, specs[0].version, line, hashes, markers, None,
                         tuple(sorted(req.extras)))


def _nth_line(lines: list[str], header: str, n: int) -> int:
    seen = -1
    for i, raw in enumerate(lines, 1):
        if raw.strip().startswith(header):
            seen += 1
            if seen == n:
                return i
    return 0


def _pylock_hashes(pkg: Mapping[str, Any]) -> tuple[str, ...]:
    out: list[str] = []
    files: list[Any] = []
    for key in ("sdist", "archive"):
        if isinstance(pkg.get(key), dict):
            files.append(pkg[key])
    if isinstance(pkg.get("wheels"), list):
        files += [w for w in pkg["wheels"] if isinstance(w, dict)]
    for f in files:
        h = f.get("hashes")
        if isinstance(h, dict):
            out += [f"{k}:{v}" for k, v in sorted(h.items()) if isinstance(v, str)]
    return tuple(out)


def _read_pylock(path: Path, text: str) -> Lock:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise _err(path, int(m.group(1)) if m else 0, f"malformed TOML ({exc})") from None
    lines = text.splitlines()
    if not isinstance(doc.get("lock-version"), str):
        raise _err(path, 1, "no lock-version: not a PEP 751 pylock.toml")
    if not doc["lock-version"].startswith("1."):
        raise _err(path, 1, f"lock-version {excerpt(doc['lock-version'])} is not supported "
                   "(1.x)")
    raw = doc.get("packages")
    if not isinstance(raw, list) or not raw:
        raise _err(path, 0, "no [[packages]]")
    packages = [_pylock_package(path, _nth_line(lines, "[[packages]]", i), pkg)
                for i, pkg in enumerate(raw)]
    py = _pylock_python(doc.get("environments"))
    return Lock(path, "pylock", tuple(packages), py or DEFAULT_PYTHON,
                "the lock" if py else "default", (), environment(py or DEFAULT_PYTHON))


def _pylock_package(path: Path, line: int, pkg: Any) -> LockedPackage:
    """One ``[[packages]]`` entry of a pylock.toml."""
    if not isinstance(pkg, dict) or not isinstance(pkg.get("name"), str):
        raise _err(path, line, "a [[packages]] entry without a name")
    version = pkg.get("version")
    if version is not None and not isinstance(version, str):
        raise _err(path, line, f"{excerpt(pkg['name'])}: version is not a string")
    marker = pkg.get("marker", "")
    if not isinstance(marker, str):
        raise _err(path, line, f"{excerpt(pkg['name'])}: marker is not a string")
    if marker:
        try:
            Marker(marker)
        except InvalidMarker as exc:
            raise _err(path, line, f"{excerpt(pkg['name'])}: bad marker {excerpt(marker)} "
                       f"({_reason(exc)})") from None
    url = None
    for key in ("vcs", "archive", "directory"):
        if isinstance(pkg.get(key), dict):
            url = str(pkg[key].get("url") or pkg[key].get("path") or "") or None
    if version is None and url is None:
        raise _err(path, line, f"{excerpt(pkg['name'])}: neither a version nor a source")
    return LockedPackage(canonicalize_name(pkg["name"]), version, line,
                         _pylock_hashes(pkg), marker, url)


def _pylock_python(envs: Any) -> str | None:
    """The Python version the lock's ``environments`` markers name, if any."""
    if isinstance(envs, list):
        for e in envs:
            m = re.search(r"python_(?:full_)?version\s*==\s*['\"](\d+\.\d+(?:\.\d+)?)", str(e))
            if m:
                return m.group(1)
    return None
