"""Writing spec values into a unit file so that systemd reads back exactly the value, nothing more.

Three contexts, three rules:

- a command-line word (``ExecStart=``): always double-quoted; ``\\`` and ``"`` escaped, control
  characters as ``\\xNN`` (so a newline can never end the directive and start another one), ``%``
  doubled (specifiers) and ``$`` doubled (systemd's own ``${VAR}`` expansion);
- an ``Environment=`` assignment: the same, except ``$`` (systemd does not expand it there);
- a bare value (``User=``, ``EnvironmentFile=``, ``LoadCredential=``, …): no quoting exists there,
  so the value must be plain — no whitespace, quotes, backslashes or control characters, else a
  :class:`~auditor.errors.SpecError` naming the key — and ``%`` is doubled.
"""

from __future__ import annotations

import re

from auditor.errors import SpecError

# C0 and C1 controls and the Unicode line/paragraph separators: written as escapes, so nothing a
# reader could take for a line end ever appears raw in a value
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_PLAIN_BAD = re.compile(r"[\s\"'\\\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _quoted(value: str, *, dollars: bool, specifiers: bool = False) -> str:
    if "\x00" in value:
        raise ValueError("a NUL byte cannot be written into a unit file")
    out = value.replace("\\", "\\\\").replace('"', '\\"')
    if not specifiers:
        out = out.replace("%", "%%")
    if dollars:
        out = out.replace("$", "$$")
    out = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x80
                       else f"\\u{ord(m.group()):04x}", out)
    return f'"{out}"'


def exec_word(value: str) -> str:
    """One argument of a command line, read back by systemd as exactly ``value``."""
    return _quoted(value, dollars=True)


def env_assignment(name: str, value: str, *, specifiers: bool = False) -> str:
    """One ``"NAME=value"`` word of an ``Environment=`` line.

    ``specifiers=True`` keeps ``%`` as written: only for values the renderer builds itself
    from specifiers such as ``%S`` and validated names.
    """
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise ValueError(f"not an environment variable name: {name!r}")
    return _quoted(f"{name}={value}", dollars=False, specifiers=specifiers)


def plain_value(value: str, *, key: str, file: str | None = None) -> str:
    """A value written bare after ``Key=``: must be plain; ``%`` doubled."""
    if not value or _PLAIN_BAD.search(value):
        raise SpecError("must not be empty or contain whitespace, quotes, backslashes or control "
                        f"characters (it is written bare into the unit), got {value!r}",
                        file=file, key=key)
    return value.replace("%", "%%")


def absolute_path(value: str, *, key: str, file: str | None = None) -> str:
    """A plain absolute path (no ``..``), escaped for a bare value."""
    if not value.startswith("/") or "/../" in value + "/" or value.endswith("/.."):
        raise SpecError(f"expected an absolute path without '..', got {value!r}", file=file,
                        key=key)
    return plain_value(value, key=key, file=file)
