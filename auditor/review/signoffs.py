"""Sign-offs as data: the reviews file (or folder), read as untrusted input, appended safely.

A reviews file is TOML, one ``[[signoff]]`` table per sign-off::

    [[signoff]]
    reviewer = "alice"
    hunk = "3f2a9c1d0b7e4a12"          # the hunk id (first 16 hex digits of digest)
    digest = "3f2a9c1d0b7e4a12…"        # SHA-256 of the hunk's content: what was read
    verdict = "ok"                      # ok | concern | blocker
    date = "2026-11-30T17:02:11Z"
    path = "csrc/foo.cu"                # for people; the digest already names the path
    note = "free text"

``[review] file`` names such a file, or a folder of them (one ``<reviewer>.toml`` per reviewer, so
that reviewers' sign-offs merge in git without conflicts; every entry of ``alice.toml`` must be
alice's). Anything malformed is a :class:`~auditor.errors.SpecError` naming the file and the key
(exit 2). Appending takes a lock file beside the target (removed again when done), keeps the
existing bytes exactly, checks that the result still parses, and replaces the file atomically.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import os
import re
import tomllib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from auditor.errors import SpecError
from auditor.fsutil import atomic_write_bytes
from auditor.inputs import MAX_TEXT_BYTES, read_input_bytes

# the sign-off values and their checks live in the results layer; the file handling here
from auditor.results.review import NAME_RE, read_signoff
from auditor.results.review import NOTE_MAX as NOTE_MAX
from auditor.results.review import ReviewVerdict as ReviewVerdict
from auditor.results.review import SignOff as SignOff
from auditor.results.review import toml_string as toml_string


def _scalars(text: str) -> str:
    """Lone surrogates (undecodable argv bytes) become U+FFFD: TOML holds Unicode scalars only."""
    return re.sub("[\ud800-\udfff]", "\ufffd", text)


def now_utc() -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = (dt.datetime.fromtimestamp(int(epoch), dt.UTC) if epoch and epoch.isdigit()
            else dt.datetime.now(dt.UTC))
    return when.replace(microsecond=0).isoformat().replace("+00:00", "Z")


# ---------------------------------------------------------------- reading


def is_folder(location: Path, folder: bool = False) -> bool:
    """Folder mode: ``[review] file`` names an existing folder, or ends with ``/``."""
    return folder or location.is_dir()


def files_of(location: Path, folder: bool = False) -> list[Path]:
    if is_folder(location, folder):
        return sorted(location.glob("*.toml")) if location.is_dir() else []
    return [location] if location.exists() else []


def load_signoffs(location: Path, *, folder: bool = False) -> tuple[SignOff, ...]:
    """Every sign-off of the reviews file or folder, in file order (none when it does not exist)."""
    out: list[SignOff] = []
    folder = is_folder(location, folder)
    for file in files_of(location, folder):
        owner = file.stem if folder else None
        if owner is not None and not NAME_RE.fullmatch(owner):
            raise SpecError("a reviews folder holds <reviewer>.toml files; this name is not a "
                            "reviewer name", file=str(file))
        out += parse_reviews(_read(file), file, owner)
    return tuple(out)


def _read(file: Path) -> bytes:
    try:
        return read_input_bytes(file, "reviews file", MAX_TEXT_BYTES)  # checked: regular, capped
    except OSError as exc:
        raise SpecError(f"cannot be read: {exc.strerror or exc}", file=str(file)) from None


def parse_reviews(data: bytes, file: Path, owner: str | None = None) -> list[SignOff]:
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise SpecError("not UTF-8 text", file=str(file)) from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"malformed TOML: {exc}", file=str(file)) from None
    except RecursionError:
        raise SpecError("malformed TOML: nested too deeply", file=str(file)) from None
    unknown = sorted(set(doc) - {"signoff"})
    if unknown:
        raise SpecError("unknown key (a reviews file holds [[signoff]] tables)", file=str(file),
                        key=unknown[0])
    entries = doc.get("signoff", [])
    if not isinstance(entries, list):
        raise SpecError("expected [[signoff]] tables", file=str(file), key="signoff")
    return [read_signoff(e, file, f"signoff[{i}]", owner) for i, e in enumerate(entries)]


# ---------------------------------------------------------------- appending


def target_for(location: Path, reviewer: str, folder: bool = False) -> Path:
    """The file a reviewer's new sign-offs go to: the reviews file, or ``<folder>/<name>.toml``."""
    return location / f"{reviewer}.toml" if is_folder(location, folder) else location


@contextmanager
def _locked(target: Path) -> Iterator[None]:
    """Hold ``.<name>.lock`` beside ``target``; the lock file is removed when done.

    The holder removes the file before it unlocks, so a waiter may wake up holding a file that is
    no longer there: it takes the lock only once the file at the path is the one it locked."""
    lock = target.with_name(f".{target.name}.lock")
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as exc:  # a link or a folder there, or no right to write: exit 2
            raise SpecError(f"cannot take the lock file: {exc.strerror or exc}",
                            file=str(lock)) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            held = os.fstat(fd)
            now = os.stat(lock, follow_symlinks=False)
        except FileNotFoundError:
            os.close(fd)
            continue
        except BaseException:
            os.close(fd)
            raise
        if (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino):
            break
        os.close(fd)
    try:
        yield
    finally:
        try:
            os.unlink(lock)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def append_signoffs(location: Path, reviewer: str, new: Sequence[SignOff], *,
                    folder: bool = False) -> Path:
    """Append ``new`` to the reviewer's reviews file; the old bytes stay exactly as they were."""
    folder = is_folder(location, folder)
    target = target_for(location, reviewer, folder)
    new = [replace(s, note=_scalars(s.note), path=_scalars(s.path)) for s in new]
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SpecError(f"cannot create the reviews folder: {exc.strerror or exc}",
                        file=str(target.parent)) from None
    with _locked(target):
        old = _read(target) if target.exists() else b""
        owner = reviewer if folder else None
        before = parse_reviews(old, target, owner)  # a bad file is reported, never rewritten
        block = "".join("\n" + s.to_toml() for s in new).encode("utf-8")
        if old and not old.endswith(b"\n"):
            block = b"\n" + block
        data = old + block
        after = parse_reviews(data, target, owner)
        if [s.to_json() for s in after[len(before):]] != [s.to_json() for s in new]:
            raise SpecError("the appended sign-offs do not read back as written", file=str(target))
        mode = target.stat().st_mode & 0o777 if target.exists() else 0o644
        atomic_write_bytes(target, data, mode=mode, fsync=True)
    return target
