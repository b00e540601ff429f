"""Wheels: safe unpacking with a RECORD check, and a deterministic writer.

:func:`write_wheel` is the public writer (the demo builds its "official wheel" with it): sorted
entries with the ``.dist-info`` folder last and ``RECORD`` at the very end, fixed timestamps
(``SOURCE_DATE_EPOCH`` or 1980-01-01), fixed modes (0644, or 0755 for executables), DEFLATE.
:func:`unpack_wheel` extracts a wheel into a private folder, refusing unsafe or oversized members
(:class:`~auditor.errors.InputError`), and :func:`record_problems` lists every way its RECORD lies.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import re
import stat
import time
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from auditor.errors import InputError
from auditor.zipsafety import (
    MemberKind,
    UnsafeZip,
    ZipLimits,
    check_members,
    read_checked,
    unsafe_name,
)

ZIP_EPOCH = 315532800  # 1980-01-01T00:00:00Z, the earliest time a zip entry can hold
Content = bytes | Path
FileSpec = Content | tuple[Content, int]

_WHEEL_RE = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(?:-(?P<build>\d[^-]*))?"
                       r"-(?P<py>[^-]+)-(?P<abi>[^-]+)-(?P<plat>[^-]+)\.whl$")


def normalize_name(name: str) -> str:
    """The distribution name as wheel file names and dist-info folders spell it."""
    return re.sub(r"[-_.]+", "_", name).lower()


def record_hash(data: bytes) -> str:
    return _record_hash_of_digest(hashlib.sha256(data).digest())


def _record_hash_of_digest(digest: bytes) -> str:
    """A RECORD hash field: ``sha256=`` and the urlsafe base64 digest without padding."""
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


@dataclass(frozen=True)
class WheelName:
    name: str  # as spelled in the file name
    version: str
    build: str | None
    tag: str  # py-abi-platform

    @classmethod
    def parse(cls, filename: str) -> WheelName:
        m = _WHEEL_RE.match(filename)
        if not m:
            raise InputError(f"{filename!r} is not a wheel file name (name-version-py-abi-plat.whl)")
        return cls(m["name"], m["version"], m["build"], f"{m['py']}-{m['abi']}-{m['plat']}")

    @property
    def filename(self) -> str:
        build = f"-{self.build}" if self.build else ""
        return f"{self.name}-{self.version.replace('-', '_')}{build}-{self.tag}.whl"

    @property
    def dist_info(self) -> str:
        return f"{self.name}-{self.version.replace('-', '_')}.dist-info"

    @property
    def data_dir(self) -> str:
        return f"{self.name}-{self.version.replace('-', '_')}.data"


def with_local_label(version: str, label: str) -> str:
    """``1.2.3`` -> ``1.2.3+label``; ``1.2.3+cu126`` -> ``1.2.3+cu126.label`` (PEP 440)."""
    return f"{version}.{label}" if "+" in version else f"{version}+{label}"


# ---------------------------------------------------------------- writing


def _zip_time(epoch: int | None) -> tuple[int, int, int, int, int, int]:
    t = ZIP_EPOCH if epoch is None else max(int(epoch), ZIP_EPOCH)
    return time.gmtime(t)[:6]


def _mode_of(spec: FileSpec) -> tuple[Content, int]:
    if isinstance(spec, tuple):
        content, mode = spec
        return content, (0o755 if mode & 0o111 else 0o644)
    return spec, 0o644


def _entry_order(path: str, dist_info: str) -> tuple[int, str]:
    if path == f"{dist_info}/RECORD":
        return (2, path)
    if path.startswith(f"{dist_info}/"):
        return (1, path)
    return (0, path)


def check_member_path(path: str) -> None:
    """A file's path as the writer gets it: relative, ``/``-separated, no empty/./.. part."""
    if path.endswith("/") or unsafe_name(path) is not None:
        raise InputError(f"unsafe path in wheel: {path!r}")


def write_entries(dest: Path, files: Mapping[str, FileSpec], dist_info: str, *,
                  epoch: int | None = None) -> Path:
    """Write ``files`` (which must not hold RECORD) plus a generated RECORD as a deterministic zip."""
    record_path = f"{dist_info}/RECORD"
    if record_path in files:
        raise ValueError("RECORD is generated; do not pass it")
    for p in files:
        check_member_path(p)
    date_time = _zip_time(epoch)
    rows: list[tuple[str, str, str]] = []
    tmp = dest.with_name(dest.name + ".part")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(files, key=lambda p: _entry_order(p, dist_info)):
            content, mode = _mode_of(files[path])
            info = zipfile.ZipInfo(path, date_time=date_time)
            info.create_system = 3
            info.external_attr = (stat.S_IFREG | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            h = hashlib.sha256()
            if isinstance(content, bytes):
                zf.writestr(info, content)
                h.update(content)
                size = len(content)
            else:
                size = content.stat().st_size
                info.file_size = size
                with content.open("rb") as src, zf.open(info, "w", force_zip64=size > 2**31) as dst:
                    for chunk in iter(lambda: src.read(1 << 20), b""):
                        h.update(chunk)
                        dst.write(chunk)
            rows.append((path, _record_hash_of_digest(h.digest()), str(size)))
        rows.append((record_path, "", ""))
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(rows)
        info = zipfile.ZipInfo(record_path, date_time=date_time)
        info.create_system = 3
        info.external_attr = (stat.S_IFREG | 0o644) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        zf.writestr(info, buf.getvalue().encode())
    os.replace(tmp, dest)
    return dest


def write_wheel(out_dir: Path, name: str, version: str, files: Mapping[str, FileSpec],
                tag: str = "py3-none-linux_x86_64", *, epoch: int | None = None,
                summary: str = "", requires: tuple[str, ...] = ()) -> Path:
    """Write ``{name}-{version}-{tag}.whl`` into ``out_dir``; return its path.

    ``files`` maps wheel paths to bytes, a local file (Path), or ``(content, mode)``. METADATA and
    WHEEL are generated unless ``files`` holds them already; RECORD is always generated.
    """
    wn = WheelName(normalize_name(name), version, None, tag)
    di = wn.dist_info
    entries: dict[str, FileSpec] = dict(files)
    if f"{di}/METADATA" not in entries:
        meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
        if summary:
            meta.append(f"Summary: {summary}")
        meta += [f"Requires-Dist: {r}" for r in requires]
        entries[f"{di}/METADATA"] = ("\n".join(meta) + "\n").encode()
    if f"{di}/WHEEL" not in entries:
        purelib = "true" if tag.endswith("-any") else "false"
        entries[f"{di}/WHEEL"] = (f"Wheel-Version: 1.0\nGenerator: auditor\n"
                                  f"Root-Is-Purelib: {purelib}\nTag: {tag}\n").encode()
    out_dir.mkdir(parents=True, exist_ok=True)
    return write_entries(out_dir / wn.filename, entries, di, epoch=epoch)


# ---------------------------------------------------------------- reading


@dataclass(frozen=True)
class WheelMember:
    path: str
    size: int
    sha256: str
    mode: int  # 0o644 or 0o755


@dataclass(frozen=True)
class UnpackedWheel:
    file: Path
    name: WheelName
    root: Path  # where the members were extracted
    members: Mapping[str, WheelMember]
    dist_info: str  # the dist-info folder actually present

    def local(self, path: str) -> Path:
        return self.root / path


def unpack_wheel(file: Path, dest: Path, *, max_files: int = 200_000,
                 max_member_bytes: int = 2 * 1024**3, max_bytes: int = 8 * 1024**3) -> UnpackedWheel:
    """Extract ``file`` into ``dest`` (which must not exist); InputError for anything unsafe."""
    name = WheelName.parse(file.name)
    try:
        zf = zipfile.ZipFile(file)
    except (zipfile.BadZipFile, OSError) as exc:
        raise InputError(f"{file}: not a readable zip/wheel: {exc}") from None
    members: dict[str, WheelMember] = {}
    dest.mkdir(parents=True)
    limits = ZipLimits(members=max_files, member_bytes=max_member_bytes, total_bytes=max_bytes)
    with zf:
        try:
            for info, kind in check_members(zf, limits):
                if kind is MemberKind.FOLDER:
                    continue
                members[info.filename] = _extract(zf, info, dest / info.filename, file)
        except UnsafeZip as exc:
            raise InputError(f"{file}: {exc}") from None
    dist_infos = sorted({p.split("/", 1)[0] for p in members
                         if p.split("/", 1)[0].endswith(".dist-info")})
    if len(dist_infos) != 1:
        raise InputError(f"{file}: expected one .dist-info folder, found {len(dist_infos)}")
    return UnpackedWheel(file=file, name=name, root=dest, members=members, dist_info=dist_infos[0])


def _extract(zf: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path, file: Path) -> WheelMember:
    """Write one checked member to ``target``, hashing it on the way."""
    path = info.filename
    mode = (info.external_attr >> 16) & 0o177777
    target.parent.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    size = 0
    try:
        with target.open("wb") as out:
            for chunk in read_checked(zf, info):
                size += len(chunk)
                h.update(chunk)
                out.write(chunk)
    except (zipfile.BadZipFile, zlib_error(), EOFError, OSError) as exc:
        raise InputError(f"{file}: member {path!r} is corrupt: {exc}") from None
    return WheelMember(path, size, h.hexdigest(), 0o755 if mode & 0o111 else 0o644)


def zlib_error() -> type[Exception]:
    import zlib

    return zlib.error


def record_problems(wheel: UnpackedWheel) -> list[str]:
    """Every file the RECORD misstates: missing, unlisted, wrong sha256 or size."""
    record_path = f"{wheel.dist_info}/RECORD"
    if record_path not in wheel.members:
        return [f"{record_path}: missing"]
    text = wheel.local(record_path).read_text(encoding="utf-8", errors="replace")
    problems: list[str] = []
    listed: dict[str, tuple[str, str]] = {}
    for i, row in enumerate(csv.reader(io.StringIO(text))):
        if not row:
            continue
        if len(row) != 3:
            problems.append(f"{record_path} line {i + 1}: expected 3 fields, got {len(row)}")
            continue
        listed[row[0]] = (row[1], row[2])
    unsigned = {record_path, f"{wheel.dist_info}/RECORD.jws", f"{wheel.dist_info}/RECORD.p7s"}
    for path, member in sorted(wheel.members.items()):
        if path in unsigned:
            continue
        if path not in listed:
            problems.append(f"{path}: not listed in RECORD")
            continue
        digest, size = listed[path]
        algo = digest.partition("=")[0]
        if algo != "sha256":
            problems.append(f"{path}: RECORD hash is {algo or 'missing'}, expected sha256")
        elif digest != _record_hash_of_digest(bytes.fromhex(member.sha256)):
            problems.append(f"{path}: sha256 differs from RECORD")
        if size != str(member.size):
            problems.append(f"{path}: size {member.size} differs from RECORD ({size or 'none'})")
    for path in sorted(set(listed) - set(wheel.members) - unsigned):
        problems.append(f"{path}: listed in RECORD but not in the wheel")
    return problems


def set_metadata_version(text: str, version: str) -> str:
    """METADATA with its ``Version:`` header replaced (headers end at the first blank line)."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.strip() == "":
            break
        if line.startswith("Version:"):
            lines[i] = f"Version: {version}"
            return "\n".join(lines)
    raise InputError("the official wheel's METADATA has no Version header")
