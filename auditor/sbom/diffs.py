"""Each series commit's diff for the SBOM's pedigree patches: size-capped text, full-diff digest.

The diff is exactly ``git show --format= --patch <sha>`` (bytes); its sha256 covers the whole
output, so anyone with the repository can regenerate and check it. The text put into the SBOM is
the first :data:`DIFF_CAP` bytes, with secrets redacted, behind mbox-style headers: ``From <sha>``,
``X-Diff-SHA256`` (of the full diff) and ``X-Diff-Size`` (its bytes).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from auditor import redaction
from auditor.fsutil import JsonStore
from auditor.gitio import Git
from auditor.redaction import cut_utf8, has_secret

#: bytes of each diff kept in the SBOM (the digest always covers the full diff)
DIFF_CAP = 64 * 1024
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class CommitDiff:
    sha: str
    sha256: str  # of the full `git show --format= --patch` output
    size: int  # bytes of the full diff
    text: str  # what the SBOM carries: header + capped (redacted) diff + a trailer if cut
    truncated: bool
    redacted: bool


def commit_diff(git: Git, sha: str, cap: int = DIFF_CAP) -> CommitDiff:
    raw = git.run("show", "--format=", "--patch", "--no-color", "--no-ext-diff", sha,
                  text=False).stdout
    data = raw if isinstance(raw, bytes) else raw.encode()
    digest = hashlib.sha256(data).hexdigest()
    whole = data.decode("utf-8", errors="replace")
    safe = cut_utf8(whole, cap)  # redacted whole, then cut: no secret is cut in half at the cap
    # mbox-style headers (what `git format-patch` starts with; `git apply` skips them)
    text = (f"From {sha} Mon Sep 17 00:00:00 2001\n"
            f"X-Diff-SHA256: {digest}\nX-Diff-Size: {len(data)}\n\n{safe}")
    truncated = len(data) > cap
    if truncated:
        text += (f"\n[auditor: diff truncated to {cap} of {len(data)} bytes; "
                 f"sha256 of the full diff {digest}]\n")
    return CommitDiff(sha=sha, sha256=digest, size=len(data), text=text, truncated=truncated,
                      redacted=has_secret(whole))


DIFF_CACHE_SCHEMA = "auditor/diff-cache/v1"
_CODE = hashlib.sha256(Path(__file__).read_bytes()
                       + Path(redaction.__file__).read_bytes()).hexdigest()[:16]


class DiffCache:
    """Each commit's :class:`CommitDiff` under ``<cache>/diffs/``, keyed by the commit, the cap,
    git's settings (:func:`~auditor.provenance.gitstate.git_settings`: what git shows of the same
    commit depends on them, replace refs and configuration included) and this code: a warm run
    shows no diff again. An entry that cannot be read is a miss; one that cannot be written only
    costs speed. Entries hold the redacted text only."""

    def __init__(self, root: Path, settings: str, cap: int = DIFF_CAP) -> None:
        self.store = JsonStore(root / "diffs")
        self.settings = settings
        self.cap = cap

    def _key(self, sha: str) -> str:
        raw = json.dumps([DIFF_CACHE_SCHEMA, _CODE, self.settings, self.cap, sha])
        return hashlib.sha256(raw.encode()).hexdigest()

    def get(self, sha: str) -> CommitDiff | None:
        data = self.store.get(self._key(sha))
        if data is None:
            return None
        try:
            d = CommitDiff(sha=sha, sha256=str(data["sha256"]), size=int(data["size"]),
                           text=str(data["text"]), truncated=bool(data["truncated"]),
                           redacted=bool(data["redacted"]))
        except (ValueError, KeyError, TypeError):
            return None
        return d if _SHA256.fullmatch(d.sha256) else None

    def put(self, d: CommitDiff) -> None:
        self.store.put(self._key(d.sha), {"sha256": d.sha256, "size": d.size, "text": d.text,
                                          "truncated": d.truncated, "redacted": d.redacted})

    def diff(self, git: Git, sha: str) -> CommitDiff:
        """The cached diff of ``sha``, else :func:`commit_diff` (then cached)."""
        found = self.get(sha)
        if found is not None:
            return found
        d = commit_diff(git, sha, self.cap)
        self.put(d)
        return d
