"""Where a repository of the audit lives, as the SBOM and the provenance name it: the URL the spec
gives (``[upstream] url``, ``[patches] url``, or a ``repo`` written as a URL), else the local
mirror's path relative to the spec's folder. Never an absolute path of the review machine: the same
audit from another folder or machine gives the same documents."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from auditor.spec import Spec

_URL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://|^[\w.-]+@[\w.-]+:")


@dataclass(frozen=True)
class Locator:
    url: str | None  # where it is published, when the spec says
    path: str  # the local repository, relative to the spec's folder ("/"-separated)

    @property
    def shown(self) -> str:
        """The URL when there is one, else the spec-relative path."""
        return self.url or self.path

    def vcs_url(self, commit: str) -> str | None:
        """``git+<url>@<commit>`` (SPDX/purl VCS form), or None without a published URL."""
        return f"git+{self.url}@{commit}" if self.url else None


def locator(spec: Spec, section: str) -> Locator:
    """The ``[upstream]`` or ``[patches]`` repository of ``spec``."""
    if section == "upstream":
        url, resolved = spec.upstream.url, spec.upstream.repo
    else:
        # the fork's repository defaults to upstream's: so does its URL
        own_repo = isinstance(spec.raw.get("patches"), dict) and "repo" in spec.raw["patches"]
        url = spec.patches.url or (None if own_repo else spec.upstream.url)
        resolved = spec.patches.repo
    raw = _raw_repo(spec, section)
    if url is None and raw is not None and _URL_RE.match(raw):
        url = raw
    rel = Path(os.path.relpath(Path(resolved).resolve(), spec.root.resolve())).as_posix()
    return Locator(url=url, path=rel)


def _raw_repo(spec: Spec, section: str) -> str | None:
    raw = spec.raw if isinstance(spec.raw, dict) else {}
    table = raw.get(section)
    value = table.get("repo") if isinstance(table, dict) else None
    if section == "patches" and value is None:
        up = raw.get("upstream")
        value = up.get("repo") if isinstance(up, dict) else None
    return value if isinstance(value, str) else None
