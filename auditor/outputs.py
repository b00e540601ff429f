"""Where auditor may write, checked before any work starts.

An audit directory (``--out``) is replaced as a whole when an audit commits, so it may only be a new
path, an empty folder, or a folder an earlier run of this tool wrote: one holding the marker file
:data:`MARKER_NAME` (``{"tool": "auditor", "schema": ...}``). Anything else is refused with exit 2
and nothing deleted: an existing file, a foreign non-empty folder, ``/``, the spec's folder or one
above it, and any folder that holds an input (bundle, repositories, policy, lock, ...) or lies inside
an input folder. Output files (``-o``, ``--sarif``, ``--summary``) are ``-`` (stdout) or regular
files, new or replaced; a symbolic link, a directory, a device, a FIFO or a socket is refused with
exit 2 before any work, and so is a file written beside one (an SBOM's provenance, a unit's example
environment file).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from auditor.errors import InputError
from auditor.model import AUDIT_SCHEMA
from auditor.redaction import Redacted, require_redacted

MARKER_NAME = ".auditor-out"
DEMO_SCHEMA = "auditor/demo/v1"
_MARKER_SCHEMA = re.compile(r"auditor/[a-z][a-z-]{0,30}/v[0-9]{1,3}")


def marker(schema: str = AUDIT_SCHEMA) -> dict[str, str]:
    return {"tool": "auditor", "schema": schema}


def write_marker(folder: Path, schema: str = AUDIT_SCHEMA) -> None:
    (folder / MARKER_NAME).write_text(json.dumps(marker(schema)) + "\n", encoding="utf-8")


def has_marker(folder: Path, schema: str = AUDIT_SCHEMA) -> bool:
    """True when ``folder`` holds this tool's marker for ``schema`` (a small regular file)."""
    path = folder / MARKER_NAME
    try:
        st = os.lstat(path)
        if not os.path.isfile(path) or st.st_size > 4096 or os.path.islink(path):
            return False
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("tool") == "auditor" and \
        data.get("schema") == schema


def marker_schema(folder: Path) -> str | None:
    """The schema of this tool's marker in ``folder`` whatever its kind (``auditor/<kind>/v<n>``),
    or None when there is none."""
    path = folder / MARKER_NAME
    try:
        if os.path.islink(path) or not os.path.isfile(path) or os.lstat(path).st_size > 4096:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    schema = data.get("schema") if isinstance(data, dict) and data.get("tool") == "auditor" \
        else None
    return schema if isinstance(schema, str) and _MARKER_SCHEMA.fullmatch(schema) else None


def spec_inputs(spec: Any) -> Iterator[Path]:
    """Every path a spec names (files and folders it reads), found by walking its dataclasses."""
    stack: list[Any] = [spec]
    while stack:
        item = stack.pop()
        if isinstance(item, Path):
            yield item
        elif isinstance(item, (tuple, list)):
            stack.extend(item)
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            for f in dataclasses.fields(item):
                if f.name in ("cache", "raw", "root"):  # the scan cache is ours; root: see below
                    continue
                value = getattr(item, f.name)
                if f.name == "commits_source" and isinstance(value, str) and value != "commits":
                    value = Path(value)
                stack.append(value)


def _real(p: Path) -> Path:
    return Path(os.path.realpath(p))


def _is_within(inner: Path, outer: Path) -> bool:
    return inner == outer or outer in inner.parents


def check_out_dir(out: Path, *, spec: Any = None, inputs: Iterable[Path] = (),
                  schema: str = AUDIT_SCHEMA, flag: str = "--out") -> Path:
    """The resolved audit directory, once it is safe to replace; otherwise an InputError.

    What the folder holds (the spec, an input) is checked before its marker, so the refusal names
    the real reason: a demo folder has a marker, but of the demo, and holds the spec."""
    target = _real(out)
    if target.parent == target:
        raise InputError(f"{flag} {out}: the root folder can never be an output folder")
    if os.path.lexists(target) and not target.is_dir():
        raise InputError(f"{flag} {out}: exists and is not a folder; nothing was changed")
    _check_inputs(out, target, spec, inputs, flag)
    if os.path.lexists(target):
        try:
            empty = not any(os.scandir(target))
        except OSError as exc:
            raise InputError(f"{flag} {out}: cannot be listed: {exc.strerror}") from None
        if not empty and not has_marker(target, schema):
            other = marker_schema(target)
            what = (f"was written by auditor as another kind of folder (its {MARKER_NAME} marker "
                    f"is of {other}, not {schema})" if other else
                    f"was not written by auditor (it has no {MARKER_NAME} marker)")
            raise InputError(
                f"{flag} {out}: exists, is not empty and {what}; it would be replaced, so nothing "
                "was changed", hint=f"choose a new folder for {flag}")
    return target


def _check_inputs(out: Path, target: Path, spec: Any, inputs: Iterable[Path], flag: str) -> None:
    """Refuse an output folder that is, holds or lies inside the spec's folder or an input."""
    named: list[tuple[str, Path]] = [(f"the input {p}", p) for p in inputs]
    if spec is not None:
        named += [(f"the input {p}", p) for p in spec_inputs(spec)]
        named.append((f"the spec {spec.path}", spec.path))
        root = _real(spec.root)
        if target in root.parents or target == root:
            raise InputError(f"{flag} {out}: is the spec's folder {spec.root} or holds it; it "
                             f"would be replaced, so nothing was changed",
                             hint="write the audit into a new folder, e.g. --out audit-out")
    for what, p in named:
        real = _real(p)
        if _is_within(real, target):
            raise InputError(f"{flag} {out}: holds {what}; it would be replaced, so nothing was "
                             f"changed")
        if real.is_dir() and _is_within(target, real):
            raise InputError(f"{flag} {out}: lies inside {what}; write the audit elsewhere")


_KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"))


def _not_regular(mode: int) -> str | None:
    """What a file of ``mode`` is when it is not a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def check_output_file(path: Path, what: str = "--output", *,
                      sidecars: Iterable[Path] = ()) -> None:
    """An output file is ``-`` (stdout) or a regular file: a new one in an existing folder, or an
    existing regular file, which is replaced. A symbolic link (to anything), a directory, a device,
    a FIFO or a socket is refused, and so are files written beside it (``sidecars``) that are."""
    if str(path) == "-":
        return
    for target in (path, *sidecars):
        _check_one(target, what, path)


def _check_one(target: Path, what: str, named: Path) -> None:
    beside = "" if target == named else f" (written beside {named})"
    try:
        st = os.lstat(target)
    except (FileNotFoundError, NotADirectoryError):
        parent = target.parent if str(target.parent) else Path(".")
        if not parent.is_dir():
            raise InputError(f"{what} {named}: its folder {parent} does not exist or is not a "
                             "folder") from None
        return
    except OSError as exc:
        raise InputError(f"{what} {target}{beside}: cannot be checked: "
                         f"{exc.strerror or exc}") from None
    kind = _not_regular(st.st_mode)
    if kind is not None:
        raise InputError(f"{what} {target}{beside}: is {kind}, not a regular file; only a "
                         "regular file (or - for standard output) is written, so nothing was "
                         "changed", hint="name a new file, or - for standard output")


def write_output_file(path: Path, text: Redacted, what: str = "--output", *,
                      mode: int | None = None) -> None:
    """Write an output file (checked again first, then replaced atomically: never written through
    a link or into a special file). ``mode``: its permissions; by default those of the file it
    replaces, or 0666 less the umask. A failure is an InputError (exit 2). ``text`` must be
    :class:`~auditor.redaction.Redacted` (else UnredactedError, before anything is touched)."""
    require_redacted(text, f"{what} {path}")
    check_output_file(path, what)
    try:
        old = os.lstat(path)
    except OSError:
        old = None
    if mode is None:
        umask = os.umask(0)
        os.umask(umask)
        mode = stat.S_IMODE(old.st_mode) if old is not None else 0o666 & ~umask
    parent = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=parent)
    except OSError as exc:
        raise InputError(f"{what} {path}: cannot be written: {exc.strerror or exc}") from None
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        check_output_file(path, what)  # nothing special appeared there in the meantime
        os.replace(tmp, path)
    except OSError as exc:
        raise InputError(f"{what} {path}: cannot be written: {exc.strerror or exc}") from None
    finally:
        Path(tmp).unlink(missing_ok=True)


def write_audit_file(path: Path, text: Redacted) -> None:
    """Write a file of an audit folder the tool made (report.md, gate.md, a review packet, the
    SBOM): replaced atomically, and only :class:`~auditor.redaction.Redacted` text (else
    UnredactedError, before anything is touched), like every other writer."""
    from auditor.fsutil import atomic_write_text

    atomic_write_text(path, require_redacted(text, str(path)))


def write_stdout(text: Redacted, what: str = "standard output") -> None:
    """Write requested output to standard output (``-``): only
    :class:`~auditor.redaction.Redacted` text, like the file writers."""
    import sys

    sys.stdout.write(require_redacted(text, what))
    sys.stdout.flush()


def write_output_text(path: Path, text: Redacted, what: str = "--output") -> None:
    """:func:`write_output_file` with the permissions of the file it replaces."""
    write_output_file(path, text, what)


def append_output_text(path: Path, text: Redacted, what: str) -> None:
    """Append to an output file (``--summary``): only to a regular file or a new one, never
    through a link (O_NOFOLLOW) nor into a FIFO or device (checked on the opened file).
    ``text`` must be :class:`~auditor.redaction.Redacted`."""
    require_redacted(text, f"{what} {path}")
    check_output_file(path, what)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        raise InputError(f"{what} {path}: cannot be written: {exc.strerror or exc}") from None
    with os.fdopen(fd, "a", encoding="utf-8") as fh:
        kind = _not_regular(os.fstat(fd).st_mode)
        if kind is not None:
            raise InputError(f"{what} {path}: is {kind}, not a regular file; nothing was written")
        fh.write(text)
