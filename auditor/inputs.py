"""Checked reads of every input file: a regular file (or a folder where one is allowed), under a
size cap, checked before a byte is read.

``stat`` never blocks, so a FIFO, a device (``/dev/zero``), a socket or a file over its cap is
refused before it is opened. The open that follows uses ``O_NONBLOCK`` and checks the opened file
again with ``fstat``, so a path swapped for a FIFO between the two steps is refused too, never
waited on. Every refusal is an :class:`~auditor.errors.InputError` (exit 2) naming the input.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import IO, Any

from auditor.errors import InputError

KIB = 1 << 10
MIB = 1 << 20
#: hand-written TOML and text: the spec, policy, waivers, recipes, commits files, unit files
MAX_TEXT_BYTES = 4 * MIB
#: machine-written lists: lock files, requirement files
MAX_LIST_BYTES = 64 * MIB
#: a saved audit.json (``report``, ``gate --baseline``)
MAX_AUDIT_JSON_BYTES = 512 * MIB
#: JSON or TOML nested deeper than this is refused (what reads it later may recurse)
MAX_NESTING = 200


class InputNotFound(InputError, FileNotFoundError):
    """A missing input: an InputError (exit 2) that callers may also catch as FileNotFoundError
    to say it their own way."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _check_stat(st: os.stat_result, path: Path, what: str, max_bytes: int,
                folder_ok: bool) -> None:
    if stat.S_ISDIR(st.st_mode):
        if folder_ok:
            return
        raise InputError(f"{what} {path}: is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{what} {path}: is {_kind(st.st_mode)}, not a regular file"
                         + (" or a directory" if folder_ok else ""))
    if st.st_size > max_bytes:
        raise InputError(f"{what} {path}: is {st.st_size} bytes, more than the {max_bytes} "
                         f"bytes allowed for it")


def check_input(path: Path, what: str, max_bytes: int, *, folder_ok: bool = False
                ) -> os.stat_result:
    """The input's ``stat``, once it is known to be a regular file under ``max_bytes`` (or a
    folder, when ``folder_ok``); nothing is opened."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputNotFound(f"{what} {path}: file not found") from None
    except OSError as exc:
        raise InputError(f"{what} {path}: cannot be read: {exc.strerror or exc}") from None
    _check_stat(st, path, what, max_bytes, folder_ok)
    return st


def open_input(path: Path, what: str, max_bytes: int) -> IO[bytes]:
    """An open binary file for a checked regular input (the caller closes it)."""
    check_input(path, what, max_bytes)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(f"{what} {path}: cannot be opened: {exc.strerror or exc}") from None
    try:
        _check_stat(os.fstat(fd), path, what, max_bytes, folder_ok=False)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_input_bytes(path: Path, what: str, max_bytes: int) -> bytes:
    """The whole of a checked input; a file that grew past the cap while read is refused."""
    with open_input(path, what, max_bytes) as fh:
        try:
            data = fh.read(max_bytes + 1)
        except OSError as exc:
            raise InputError(f"{what} {path}: cannot be read: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise InputError(f"{what} {path}: more than the {max_bytes} bytes allowed for it")
    return data


def read_input_text(path: Path, what: str, max_bytes: int = MAX_TEXT_BYTES) -> str:
    """A checked input as UTF-8 text."""
    data = read_input_bytes(path, what, max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} {path}: not UTF-8 text (byte {exc.start})") from None


def nesting_depth(value: Any) -> int:
    """How deep lists and tables nest in a parsed value (walked without recursion)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth + 1)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def bounded_depth(value: Any, path: Path, what: str) -> Any:
    """``value`` itself, once its nesting is known to be within :data:`MAX_NESTING`."""
    if nesting_depth(value) > MAX_NESTING:
        raise InputError(f"{what} {path}: nested more than {MAX_NESTING} levels deep")
    return value
