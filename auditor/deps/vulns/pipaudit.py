"""``deps.vulns = "pip-audit"``: pip-audit against the OSV service, only with ``--online``.

pip-audit runs on a generated requirements file of the exactly pinned packages with ``--no-deps
--disable-pip`` (nothing is resolved, downloaded or installed: exactly the pinned set is asked
about), ``--strict`` and ``-s osv`` (its default ``pypi`` service checks nothing on this kind of
machine: where PyPI's per-version JSON API is not served, it calls every package "not found on
PyPI", reports no known vulnerabilities and exits 0), ``--osv-url`` when ``[deps] osv_url`` is
set. A package it skipped, or a run that failed, is not checked — never clean.

With ``[deps] lock`` given as a hash-pinned requirements file (every entry hashed, each name once),
pip-audit reads that file itself (``-r LOCK --require-hashes --disable-pip``): what it audits is
the lock as written, not a copy auditor made of it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from auditor.deps.vulns.interface import (
    Package,
    SourceInfo,
    SourceKind,
    Vulnerability,
    VulnerabilitySource,
    VulnReport,
)
from auditor.errors import ToolError
from auditor.gitio import run

DEFAULT_OSV_URL = "https://api.osv.dev/v1/query"


def pip_audit_path() -> Path:
    """pip-audit installed next to the running interpreter (the project's venv)."""
    return Path(sys.executable).parent / "pip-audit"


class PipAuditSource(VulnerabilitySource):
    kind = SourceKind.PIP_AUDIT

    def __init__(self, workdir: Path, *, online: bool, osv_url: str | None = None,
                 executable: Path | None = None, timeout: int = 600,
                 hashed_lock: Path | None = None) -> None:
        self.workdir = workdir
        self.hashed_lock = hashed_lock
        self.online = online
        self.osv_url = osv_url
        self.executable = executable or pip_audit_path()
        self.timeout = timeout

    def check(self, packages: Sequence[Package]) -> VulnReport:
        info = SourceInfo(SourceKind.PIP_AUDIT, location=self.osv_url or DEFAULT_OSV_URL)
        if not self.online:
            return VulnReport(info, not_checked=(
                "vulnerabilities: not checked: deps.vulns = pip-audit needs --online "
                "(use an osv:<dir|zip> snapshot offline)",))
        if not packages:
            return VulnReport(info)
        found: list[Vulnerability] = []
        not_checked: list[str] = []
        checked: list[Package] = []
        if self.hashed_lock is not None:
            self._one_run(list(packages), None, found, not_checked, checked)
            return VulnReport(info, tuple(found), tuple(not_checked), tuple(checked))
        # pip-audit refuses one name pinned twice: one run per layer of distinct names
        layers: list[list[Package]] = []
        for p in sorted(set(packages), key=lambda p: (p.name, p.version)):
            for layer in layers:
                if all(q.name != p.name for q in layer):
                    layer.append(p)
                    break
            else:
                layers.append([p])
        for n, layer in enumerate(layers):
            self._one_run(layer, n, found, not_checked, checked)
        return VulnReport(info, tuple(found), tuple(not_checked), tuple(checked))

    def _one_run(self, layer: Sequence[Package], n: int | None, found: list[Vulnerability],
                 not_checked: list[str], checked: list[Package]) -> None:
        """Audit ``layer`` (run ``n``, or the hashed lock when ``n`` is None); collect results."""
        try:
            data = self._run(layer, n)
        except ToolError as exc:
            names = ", ".join(f"{p.name}=={p.version}" for p in layer)
            not_checked.append(f"vulnerabilities: pip-audit failed, not checked ({names}): "
                               + " ".join(exc.diagnostics().split())[:400])
            return
        pinned = {p.name: p for p in layer}
        reported: set[str] = set()
        for dep in data.get("dependencies", []):
            name = str(dep.get("name", ""))
            if "skip_reason" in dep or name not in pinned:
                not_checked.append(f"vulnerabilities: {name}: skipped by pip-audit: "
                                   f"{dep.get('skip_reason', 'not asked for')}")
                continue
            reported.add(name)
            checked.append(pinned[name])
            for v in dep.get("vulns", []):
                found.append(Vulnerability(
                    id=str(v.get("id")), aliases=tuple(map(str, v.get("aliases", []))),
                    package=name, version=str(dep.get("version")),
                    fixed=tuple(map(str, v.get("fix_versions", []))), severity=None,
                    severity_source=None, summary=str(v.get("description") or "")[:300],
                    modified=None))
        for name in sorted(set(pinned) - reported):
            not_checked.append(f"vulnerabilities: {name}: pip-audit did not report on it, "
                               "not checked")

    def _run(self, layer: Sequence[Package], n: int | None) -> dict[str, Any]:
        self.workdir.mkdir(parents=True, exist_ok=True)
        out = self.workdir / f"pip-audit-{'lock' if n is None else n}.json"
        if n is None:
            assert self.hashed_lock is not None
            reqs, mode = self.hashed_lock, ["--require-hashes"]
        else:
            reqs, mode = self.workdir / f"pip-audit-requirements-{n}.txt", ["--no-deps"]
            reqs.write_text("".join(f"{p.name}=={p.version}\n" for p in layer),
                            encoding="utf-8")
        out.unlink(missing_ok=True)
        args: list[str] = [str(self.executable), "--strict", *mode, "--disable-pip",
                           "-r", str(reqs), "-f", "json", "-o", str(out),
                           "--progress-spinner", "off", "-s", "osv",
                           "--cache-dir", str(self.workdir / "pip-audit-cache"),
                           "--aliases", "on", "--desc", "on"]
        if self.osv_url:
            args += ["--osv-url", self.osv_url]
        res = run(args, check=False, timeout=self.timeout,
                  extra_env={"PIP_NO_INPUT": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
        # exit 1 also means "vulnerabilities found": the report decides, not the exit code
        try:
            data = json.loads(out.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise ToolError(f"pip-audit exited {res.returncode} without a JSON report",
                            cmd=list(res.args), returncode=res.returncode,
                            stderr=res.stderr) from None
        if not isinstance(data, dict):
            raise ToolError("pip-audit wrote an unexpected report", cmd=list(res.args))
        return data
