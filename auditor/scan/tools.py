"""Finding the external scanners and running them in a sealed environment.

The scanners are looked up beside the running interpreter first (the project's virtualenv), then
on ``PATH``. Their environment has a private ``HOME`` (semgrep writes settings there), no semgrep
login token, and semgrep's version check and metrics switched off.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import ClassVar

from auditor import gitio
from auditor.errors import ToolError, ToolMissing

_VERSIONS: dict[tuple[str, float], str] = {}


def find_tool(name: str) -> str:
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if found is None:
        raise ToolMissing(f"{name} is not installed on this machine",
                          hint=f"install it (pip install {name}) in auditor's environment")
    return found


def sealed_env(home: Path) -> dict[str, str]:
    """The environment for a scanner process: private HOME, no token, no phoning home."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SEMGREP_") and k not in ("PYTHONPATH", "PYTHONHOME")}
    home.mkdir(parents=True, exist_ok=True)
    env.update({
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "SEMGREP_ENABLE_VERSION_CHECK": "0",
        "SEMGREP_SEND_METRICS": "off",
        "SEMGREP_SETTINGS_FILE": str(home / "semgrep-settings.yml"),
        "SEMGREP_LOG_FILE": str(home / "semgrep.log"),
        "LC_ALL": "C.UTF-8",
        "PYTHONIOENCODING": "utf-8",
    })
    return env


def tool_version(exe: str) -> str:
    """``exe --version``'s first version-looking word, memoised per executable and mtime."""
    try:
        stamp = (exe, os.stat(exe).st_mtime)
    except OSError as exc:
        raise ToolMissing(f"{exe} cannot be found: {exc}") from None
    if stamp not in _VERSIONS and Path(exe).parent == Path(sys.executable).parent:
        # our own environment's tool: its distribution metadata says the version, and asking
        # the program costs seconds (semgrep starts a Python and an OCaml process)
        try:
            _VERSIONS[stamp] = importlib.metadata.version(Path(exe).name)
        except importlib.metadata.PackageNotFoundError:
            pass
    if stamp not in _VERSIONS:
        with tempfile.TemporaryDirectory(prefix="auditor-ver-") as home:
            res = gitio.run([exe, "--version"], env=sealed_env(Path(home)), timeout=120)
        words = res.stdout.split()
        version = next((w for w in words if w[:1].isdigit()), None)
        if version is None:
            raise ToolError(f"{exe} --version printed no version", cmd=[exe, "--version"],
                            stderr=res.stderr)
        _VERSIONS[stamp] = version
    return _VERSIONS[stamp]


class ExternalTool:
    """Mixin for a scanner backed by a program of the same name: found on first use, versioned."""

    name: ClassVar[str]
    _exe: str | None = None

    @property
    def exe(self) -> str:
        if self._exe is None:
            self._exe = find_tool(self.name)
        return self._exe

    def version(self) -> str:
        return tool_version(self.exe)
