"""Each series commit's diff for the SBOM's pedigree patches: size-capped text, full-diff digest.

The diff is exactly ``git show --format= --patch <sha>`` (bytes); its sha256 covers the whole
output, so anyone with the repository can regenerate and check it. The text put into the SBOM is
the first :data:`DIFF_CAP` bytes, with secrets redacted, behind mbox-style headers: ``From <sha>``,
``X-Diff-SHA256`` (of the full diff) and ``X-Diff-Size`` (its bytes).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from auditor.gitio import Git
from auditor.textsafe import redact

#: bytes of each diff kept in the SBOM (the digest always covers the full diff)
DIFF_CAP = 64 * 1024


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
    kept = data[:cap]
    body = kept.decode("utf-8", errors="replace")
    if len(data) > cap and body.endswith("\ufffd"):
        body = body.rstrip("\ufffd")  # a multi-byte character cut at the cap
    safe = redact(body)
    # mbox-style headers (what `git format-patch` starts with; `git apply` skips them)
    text = (f"From {sha} Mon Sep 17 00:00:00 2001\n"
            f"X-Diff-SHA256: {digest}\nX-Diff-Size: {len(data)}\n\n{safe}")
    truncated = len(data) > cap
    if truncated:
        text += (f"\n[auditor: diff truncated to {cap} of {len(data)} bytes; "
                 f"sha256 of the full diff {digest}]\n")
    return CommitDiff(sha=sha, sha256=digest, size=len(data), text=text, truncated=truncated,
                      redacted=safe != body)
