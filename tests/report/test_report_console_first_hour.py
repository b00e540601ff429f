"""Issue 33 item 12: the console summary is one screen (at most 40 lines on an 80-column terminal):
the verdict, counts by action, the blocking findings (the first ten, then how many more), the
not-checked list, a row per stage that says "ran" with its counts, and where the reports are.

The end-to-end test runs the real ``auditor audit`` on a terminal of 80 columns (a pseudo-terminal,
so rich wraps as it would for a person) on a small case with more blocking findings than fit.
"""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import select
import struct
import subprocess
import sys
import tarfile
import termios
from dataclasses import replace
from pathlib import Path

from reportcases import finding, rich_audit
from rich.console import Console
from support import simple_case, write_spec

from auditor.model import StageStatus
from auditor.report.console import SUMMARY_BLOCKING, print_summary, stage_done

ELF = b"\x7fELF\x02\x01\x01" + bytes(57)
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


def _on_a_terminal(args: list[str], cwd: Path, columns: int = 80) -> str:
    """Run ``python -m auditor ARGS`` with stdout and stderr on a pseudo-terminal of ``columns``."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env.update(TERM="xterm", NO_COLOR="1")
    proc = subprocess.Popen([sys.executable, "-m", "auditor", *args], cwd=cwd, env=env,
                            stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
    os.close(slave)
    chunks: list[bytes] = []
    while True:
        ready, _, _ = select.select([master], [], [], 600)
        if not ready:
            proc.kill()
            raise AssertionError("auditor did not finish")
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the other side is closed
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(master)
    return ANSI.sub("", b"".join(chunks).decode("utf-8", "replace"))


def test_the_real_audit_summary_fits_one_screen_of_80_columns(tmp_path: Path) -> None:
    case = simple_case(tmp_path)
    repo = case["repo"]
    # a commit with more prebuilt binaries than the summary lists: a blocking finding each
    extra = repo.commit("prebuilt kernels", author="Fork Author <fork@community.example>",
                        files={f"engine/prebuilt/kernel_sm{80 + i}.so": ELF + bytes([i])
                               for i in range(SUMMARY_BLOCKING + 4)})
    raw = case["spec"]
    raw["patches"]["commits"] = [*case["commits"], extra]
    folder = tmp_path / "bundle-dir"
    from support import export_tree

    export_tree(repo, "series", folder)
    tarball = tmp_path / "engine.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(folder, arcname="engine-1.0.0")
    raw["bundle"] = {"path": str(tarball), "strip_components": 1}
    spec = write_spec(tmp_path / "audit.toml", raw)

    text = _on_a_terminal(["audit", str(spec), "--out", "out"], cwd=tmp_path)
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "verdict: FAIL" in line)
    summary = lines[start:]
    while summary and not summary[-1].strip():
        summary.pop()
    assert len(summary) <= 40, "\n".join(summary)
    assert all(len(line) <= 80 for line in summary), "\n".join(summary)
    joined = "\n".join(summary)
    assert "reports in out" in joined
    assert f"blocking findings ({SUMMARY_BLOCKING + 4})" in joined
    assert "… and 4 more blocking finding(s) — see report.md" in joined
    assert re.search(r"^\s+verify\s+ran\s+14 block", joined, re.M), joined
    # the progress lines say what ran and what it found, not "ok" beside blocking findings
    progress = "\n".join(lines[:start])
    assert "verify ran (14 block)" in progress, progress
    assert "verify ok" not in progress


def test_summary_of_many_findings_and_gaps_fits_80_columns() -> None:
    audit = rich_audit()
    many = tuple(finding(path=f"engine/mod{i:02}.py", line=i + 1, fingerprint=f"{i:032x}",
                         message="outbound HTTP request to a server nobody named " * 3)
                 for i in range(25))
    scan = audit.stages["scan"]
    gaps = tuple(f"file engine/gap{i}.py did not parse: " + "x " * 60 for i in range(9))
    stages = dict(audit.stages)
    stages["scan"] = replace(scan, status=StageStatus.INCOMPLETE, findings=many, not_checked=gaps)
    audit = replace(audit, stages=stages)
    buf = io.StringIO()
    print_summary(Console(file=buf, width=80, soft_wrap=False, highlight=False), audit,
                  Path("audit-out"))
    text = buf.getvalue()
    assert len(text.splitlines()) <= 40, text
    assert "verdict: " in text.splitlines()[0]
    assert f"… and {25 - SUMMARY_BLOCKING} more blocking finding(s) — see report.md" in text
    shown = text.count("  ! scan: file engine/gap")
    assert shown >= 2
    assert f"… and {9 - shown} more not checked — see report.md" in text
    assert "reports in audit-out" in text


def test_a_ci_log_keeps_each_line_whole() -> None:
    """Without a terminal (soft wrap) nothing is cut: a finding line stays whole and searchable."""
    audit = rich_audit()
    long = finding(message="outbound HTTP request " + "to a very far server " * 10)
    stages = {name: replace(st, findings=(long,) if name == "scan" else ())
              for name, st in audit.stages.items()}
    audit = replace(audit, stages=stages)
    buf = io.StringIO()
    print_summary(Console(file=buf, width=80, soft_wrap=True, highlight=False), audit,
                  Path("audit-out"))
    assert "to a very far server " * 10 in buf.getvalue()
    assert "…" not in buf.getvalue().split("blocking findings")[1].split("\n")[1]


def test_stage_done_says_ran_with_counts() -> None:
    scan = rich_audit().stages["scan"]
    assert stage_done(scan).startswith("[green]ran[/green] (")
    assert "block" in stage_done(scan) and "ok" not in stage_done(scan)
