"""The audited bundle as a file a deployer can check: its path relative to the spec's folder, its
sha256 and size (a folder bundle has no file digest; it is named by the git tree the proof
compared). Used by audit.json ``inputs.bundle``, the SBOM's fork component, the provenance
statement's resolved dependencies and the verification summary's subject.

Paths in outputs are always spec-relative (:func:`spec_relative`), never the review machine's
absolute paths, so the same audit run from another folder or machine gives the same bytes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditor.errors import InputError
from auditor.fsutil import relative_path
from auditor.spec import Spec

_CHUNK = 1 << 20
#: (resolved path, device, inode, size, mtime_ns) -> sha256: one read per file per process
_seen: dict[tuple[str, int, int, int, int], str] = {}


@dataclass(frozen=True)
class BundleDigest:
    """What identifies the bundle: ``kind`` "file" (sha256 and size of its bytes) or "directory"
    (no file digest: ``tree`` is the git tree of its files, as the proof computed it)."""

    path: str  # relative to the spec's folder, "/"-separated
    kind: str  # "file" | "directory"
    sha256: str | None
    size: int | None
    tree: str | None = None  # the proven git tree of the bundle's files, when known

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "kind": self.kind}
        if self.kind == "file":
            out |= {"sha256": self.sha256, "size": self.size}
        else:
            out["description"] = ("a folder: no file digest; identified by the git tree of its "
                                  "files, as the proof computed it")
        if self.tree:
            out["tree"] = self.tree
        return out


def spec_relative(path: Path, spec: Spec) -> str:
    """``path`` relative to the spec's folder ("../x" when outside it), "/"-separated: never an
    absolute path of the review machine."""
    return relative_path(path, spec.root)


def file_sha256(path: Path) -> tuple[str, int]:
    """(sha256, size) of a regular file, read once per process for an unchanged file."""
    try:
        st = path.stat()
        key = (str(path.resolve()), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        if key in _seen:
            return _seen[key], st.st_size
        h = hashlib.sha256()
        size = 0
        with path.open("rb") as fh:
            while chunk := fh.read(_CHUNK):
                h.update(chunk)
                size += len(chunk)
    except OSError as exc:
        raise InputError(f"[bundle] path {path}: cannot be read for its digest: "
                         f"{exc.strerror or exc}") from None
    digest = h.hexdigest()
    _seen[key] = digest
    return digest, size


def bundle_digest(spec: Spec, tree: str | None = None) -> BundleDigest:
    """The spec's bundle: spec-relative path, sha256 and size of the file (``tree``: the proven
    tree of its files, when the caller has it). A folder bundle has kind "directory"."""
    path = spec.bundle.path
    rel = spec_relative(path, spec)
    if path.is_dir():
        return BundleDigest(path=rel, kind="directory", sha256=None, size=None, tree=tree or None)
    digest, size = file_sha256(path)
    return BundleDigest(path=rel, kind="file", sha256=digest, size=size, tree=tree or None)
