"""``auditor osv fetch``: download the OSV archive of one ecosystem for offline review.

OSV publishes every advisory of an ecosystem as one zip (``<bucket>/<Ecosystem>/all.zip``, one
JSON record per file). This module is the only part of auditor that downloads it, and only when
asked: it streams the archive to a temporary file next to ``--out`` (with a size limit), checks it
as untrusted input (a real zip; no absolute, ``..``, link or oversized members; every record parses
as OSV; at least one record of the ecosystem), then moves it into place and writes a sidecar
``<out>.meta.json`` with the file's sha256, the snapshot digest and date as ``osv:<zip>`` computes
them, the record count, the source address and the time of the download.

A failed download is exit 3 (nothing could be checked); an archive that fails the checks, or an
unusable ``--out``, is exit 2. Nothing is left at ``--out`` unless every check passed.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditor.deps.vulns.osv import (
    MAX_RECORD_BYTES,
    MAX_TOTAL_BYTES,
    SIDECAR_SUFFIX,  # noqa: F401 - kept importable from here
    load_snapshot,
    sidecar_path,
    sidecar_problem,  # noqa: F401 - kept importable from here
)
from auditor.errors import InputError, ToolError
from auditor.zipsafety import UnsafeZip, ZipLimits, check_members, show

OSV_BUCKET = "https://osv-vulnerabilities.storage.googleapis.com"
MAX_DOWNLOAD_BYTES = 2 * 1024**3
MAX_MEMBERS = 2_000_000
_LIMITS = ZipLimits(members=MAX_MEMBERS, member_bytes=MAX_RECORD_BYTES,
                    total_bytes=MAX_TOTAL_BYTES)


class FetchError(ToolError):
    """The archive could not be downloaded (network, HTTP status): exit 3."""


def archive_url(ecosystem: str) -> str:
    return f"{OSV_BUCKET}/{ecosystem}/all.zip"


@dataclass(frozen=True)
class FetchResult:
    path: Path
    sidecar: Path
    meta: dict[str, Any]


def _download(url: str, dest: Path, timeout: float) -> str:
    """Stream ``url`` into ``dest``; its sha256."""
    digest = hashlib.sha256()
    total = 0
    req = urllib.request.Request(url, headers={"User-Agent": "auditor-osv-fetch"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp, dest.open("wb") as fh:  # noqa: S310
            while True:
                chunk = resp.read(1024 * 1024)
                if not chunk:
                    break
                total += len(chunk)
                if total > MAX_DOWNLOAD_BYTES:
                    raise InputError(f"{url}: larger than {MAX_DOWNLOAD_BYTES} bytes; refused")
                digest.update(chunk)
                fh.write(chunk)
    except urllib.error.HTTPError as exc:
        raise FetchError(f"cannot download {url}: HTTP {exc.code} {exc.reason}",
                         hint="check --ecosystem (OSV's spelling, e.g. PyPI)") from None
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        reason = getattr(exc, "reason", exc)
        raise FetchError(f"cannot download {url}: {reason}",
                         hint="this machine may have no route to the OSV bucket: fetch on a "
                              "connected machine and carry the zip and its .meta.json over "
                              "(see README, 'Offline vulnerability data')") from None
    return digest.hexdigest()


def check_archive(path: Path, ecosystem: str, label: str | None = None
                  ) -> tuple[int, int, str, str | None]:
    """(records, corrupt, snapshot digest, date) of a downloaded archive, or InputError;
    messages name ``label`` (the address it came from) instead of the temporary file."""
    where = label or str(path)
    try:
        with zipfile.ZipFile(path) as zf:
            check_members(zf, _LIMITS)
            bad = zf.testzip()
            if bad is not None:
                raise InputError(f"{where}: member {show(bad)} fails its CRC check")
    except zipfile.BadZipFile as exc:
        raise InputError(f"{where}: not a zip archive ({exc})") from None
    except UnsafeZip as exc:
        raise InputError(f"{where}: {exc}") from None
    snap = load_snapshot(path)
    if not snap.records:
        raise InputError(f"{where}: no usable OSV records"
                         + (f" ({snap.corrupt[0]})" if snap.corrupt else ""))
    eco = [r for _, r in snap.records
           if any(isinstance(a, dict) and (a.get("package") or {}).get("ecosystem") == ecosystem
                  for a in r.get("affected", []))]
    if not eco:
        raise InputError(f"{where}: none of its {len(snap.records)} records is about the "
                         f"{ecosystem} ecosystem")
    return len(snap.records), len(snap.corrupt), snap.digest, snap.date


def fetch_osv(out: Path, *, ecosystem: str = "PyPI", url: str | None = None,
              timeout: float = 120.0, now: dt.datetime | None = None) -> FetchResult:
    """Download, check and place the archive at ``out`` with its sidecar."""
    if out.exists() and out.is_dir():
        raise InputError(f"--out {out}: is a folder; give a file name such as osv-PyPI.zip")
    if not out.parent.is_dir():
        raise InputError(f"--out {out}: the folder {out.parent} does not exist")
    source = url or archive_url(ecosystem)
    if not source.startswith(("https://", "http://")):
        raise InputError(f"--url {source!r}: expected an http(s) address")
    tmp = out.with_name(f".{out.name}.part")
    try:
        sha = _download(source, tmp, timeout)
        records, corrupt, digest, date = check_archive(tmp, ecosystem, source)
        meta = {
            "schema": "auditor/osv-fetch/v1", "source": source, "ecosystem": ecosystem,
            "fetched": (now or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "sha256": sha, "bytes": tmp.stat().st_size, "snapshot_digest": digest,
            "date": date, "records": records, "corrupt_records": corrupt,
        }
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
    side = sidecar_path(out)
    side.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return FetchResult(out, side, meta)
