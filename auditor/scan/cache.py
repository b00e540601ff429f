"""The scan result cache: raw per-file results in a folder of small JSON files.

An entry is keyed by (path, file content sha256, scanner name, scanner version, scanner options
digest, :func:`code_digest`); the options digest covers the rule-set hash, the code digest every
module of auditor that can change a scanner's answer (all of ``auditor/scan``: the plan and its
reducers, gating, staging, the output parsers ...; the text, line and subprocess helpers they
use) and auditor's own version, so a fixed bug never keeps serving the old answer. Entries hold raw findings only (no snippet,
commit or action), so attribution and policy always run fresh. Writes are atomic (a temporary file
renamed into place); an unreadable or malformed entry is a miss, never an error.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import auditor
from auditor.fsutil import JsonStore
from auditor.scan.interface import FileError, RawFinding

CACHE_SCHEMA = "auditor/scan-cache/v2"  # v2: partial-parse line ranges


@dataclass(frozen=True)
class CacheEntry:
    findings: tuple[RawFinding, ...]
    error: FileError | None = None


_PACKAGE = Path(auditor.__file__).resolve().parent
#: the modules outside auditor/scan whose code a scanner's answer goes through
_HELPERS = ("textsafe.py", "redaction.py", "lines.py", "model.py", "gitio.py", "subproc.py",
            "fsutil.py", "pysource.py")


def covered_files() -> tuple[Path, ...]:
    """The source files :func:`code_digest` covers, in a stable order."""
    scan = sorted(p for p in (_PACKAGE / "scan").rglob("*.py"))
    return (*scan, *(_PACKAGE / name for name in _HELPERS if (_PACKAGE / name).is_file()))


def digest_of(version: str, files: tuple[Path, ...]) -> str:
    """A digest of auditor's ``version`` and the bytes of ``files`` (by their package path)."""
    h = hashlib.sha256(json.dumps(["auditor", version]).encode())
    for path in files:
        rel = path.relative_to(_PACKAGE).as_posix().encode()
        data = path.read_bytes()
        h.update(len(rel).to_bytes(8, "big") + rel + len(data).to_bytes(8, "big") + data)
    return h.hexdigest()


@lru_cache(maxsize=1)
def code_digest() -> str:
    """:func:`digest_of` auditor's version and :func:`covered_files` (read once per process)."""
    return digest_of(auditor.__version__, covered_files())


def cache_key(path: str, sha256: str, scanner: str, version: str, options: str) -> str:
    raw = json.dumps([CACHE_SCHEMA, code_digest(), path, sha256, scanner, version, options])
    return hashlib.sha256(raw.encode()).hexdigest()


class ResultCache:
    """The entries in ``<cache>/scan`` (:class:`~auditor.fsutil.JsonStore`)."""

    def __init__(self, root: Path) -> None:
        self.store = JsonStore(root / "scan")

    def get(self, key: str) -> CacheEntry | None:
        data = self.store.get(key)
        if data is None or data.get("schema") != CACHE_SCHEMA:
            return None
        try:
            err = data.get("error")
            return CacheEntry(
                findings=tuple(RawFinding.from_json(f) for f in data["findings"]),
                error=FileError(str(err), lasting=True,
                                lines=tuple((int(a), int(b)) for a, b in
                                            data.get("error_lines") or ()),
                                alone=data.get("error_alone") is True)
                if err is not None else None,
            )
        except (ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, entry: CacheEntry) -> None:
        """Store an entry; a cache that cannot be written only costs speed, so errors pass."""
        if entry.error is not None and not entry.error.lasting:
            return
        data: dict[str, object] = {
            "schema": CACHE_SCHEMA,
            "findings": [f.to_json() for f in entry.findings],
            "error": entry.error.reason if entry.error is not None else None}
        if entry.error is not None and entry.error.lines:
            data["error_lines"] = [list(r) for r in entry.error.lines]
        if entry.error is not None and entry.error.alone:
            data["error_alone"] = True
        self.store.put(key, data)
