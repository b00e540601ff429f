"""systemd's own opinion of a unit: ``systemd-analyze verify`` and ``security --offline=yes``.

Both run on a private copy of the unit whose ``Exec*=`` executables are replaced by a stub that
exists on this machine (``verify`` fails on a missing binary, and the binary is for the target host,
not this one); every other byte and every line number stay as written. ``verify`` exits 0 on bad
directives, so its stderr is read: every line about our copy is a warning. ``security`` prints the
overall score only in its text output ("Overall exposure level for NAME: 1.4 OK").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from auditor.errors import ToolError
from auditor.gitio import run
from auditor.service.unitfile import UnitFile, commands

TOOL = "systemd-analyze"
EXPOSURE_THRESHOLD = 2.0
_ENV = {"SYSTEMD_COLORS": "0", "SYSTEMD_PAGER": "cat", "SYSTEMD_LOG_LEVEL": "warning",
        "LC_ALL": "C.UTF-8"}
_SCORE_RE = re.compile(r"Overall exposure level for (.+?): ([0-9]+(?:\.[0-9]+)?) ([A-Z]+)")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_UNIT_NAME = re.compile(r"[A-Za-z0-9:_.\\-]+(@[A-Za-z0-9:_.\\-]*)?\.service")


@dataclass(frozen=True)
class Exposure:
    score: float
    label: str

    def to_json(self) -> dict[str, object]:
        return {"score": self.score, "label": self.label}


@dataclass(frozen=True)
class VerifyWarning:
    line: int | None
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}" if self.line else self.message


@dataclass(frozen=True)
class VerifyResult:
    ok: bool
    warnings: tuple[VerifyWarning, ...]

    def to_json(self) -> dict[str, object]:
        return {"ok": self.ok, "warnings": [str(w) for w in self.warnings]}


def checkable_copy(unit: UnitFile, workdir: Path) -> Path:
    """Write the unit into ``workdir`` with each command's executable replaced by a stub."""
    workdir.mkdir(parents=True, exist_ok=True)
    stub = workdir / "stub-exec"
    stub.write_text("#!/bin/sh\nexit 0\n")
    stub.chmod(0o755)
    lines = list(unit.lines)
    by_directive: dict[int, list[tuple[int, int]]] = {}
    directives = {}
    for cmd in commands(unit):
        by_directive.setdefault(cmd.directive.line, []).append((cmd.head.start, cmd.head.end))
        directives[cmd.directive.line] = cmd.directive
    for line, spans in by_directive.items():
        d = directives[line]
        value = d.value
        for start, end in sorted(spans, reverse=True):
            value = value[:start] + str(stub) + value[end:]
        lines[d.line - 1] = f"{d.key}={value}"
        for extra in range(d.line, d.end_line):
            lines[extra] = ""  # keep every later line number where it was
    base = Path(unit.path).name
    name = base if _UNIT_NAME.fullmatch(base) else "checked-unit.service"
    copy = workdir / name
    copy.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return copy


def verify(copy: Path, shown: str) -> VerifyResult:
    """``systemd-analyze verify``: ToolMissing/ToolError when it cannot run."""
    res = run([TOOL, "verify", "--no-pager", str(copy)], extra_env=_ENV, check=False,
              timeout=120)
    warnings: list[VerifyWarning] = []
    prefix = f"{copy}:"
    for raw in _ANSI.sub("", res.stderr).splitlines():
        text = raw.strip()
        if text.startswith(prefix):
            rest = text[len(prefix):]
            m = re.match(r"(\d+): (.*)", rest)
            if m:
                warnings.append(VerifyWarning(int(m.group(1)), m.group(2)))
            else:
                warnings.append(VerifyWarning(None, rest.strip()))
        elif text.startswith(f"{copy.name}:"):
            message = text[len(copy.name) + 1:].strip().replace(str(copy), shown)
            if "stub-exec" in message:
                continue  # about our stand-in executable, not the unit
            warnings.append(VerifyWarning(None, message))
    if res.returncode != 0 and not warnings:
        tail = " ".join(res.stderr.strip().splitlines()[-2:]) or "no message"
        raise ToolError(f"{TOOL} verify failed with exit code {res.returncode}: {tail}",
                        cmd=list(res.args), returncode=res.returncode, stderr=res.stderr)
    return VerifyResult(ok=not warnings, warnings=tuple(warnings))


def security(copy: Path) -> Exposure:
    """The overall exposure score of ``systemd-analyze security --offline=yes``."""
    res = run([TOOL, "security", "--offline=yes", "--no-pager", str(copy)], extra_env=_ENV,
              check=False, timeout=120)
    m = _SCORE_RE.search(_ANSI.sub("", res.stdout))
    if res.returncode != 0 or m is None:
        tail = " ".join((res.stderr or res.stdout).strip().splitlines()[-2:]) or "no output"
        raise ToolError(f"{TOOL} security gave no exposure score (exit code {res.returncode}): "
                        f"{tail}", cmd=list(res.args), returncode=res.returncode,
                        stderr=res.stderr)
    return Exposure(score=float(m.group(2)), label=m.group(3))
