"""Per-stage CPU time of an auditor command (issue 16).

Each stage's user+sys time, of this process and of the programs it waited for (git, semgrep,
bandit), from ``os.times()`` around the pipeline's ``run_stage`` and ``write_reports``; lines start
with ``STAGECPU`` on stderr. A background thread's CPU counts in the stage it overlaps. The whole
command's figure is what ``/usr/bin/time`` says around this script.

Usage: ``python benchmarks/stage_cpu.py audit SPEC --out DIR`` (any auditor command line).
"""

from __future__ import annotations

import atexit
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import auditor.pipeline as pipeline
import auditor.report as report
from auditor.cli import main

ROWS: list[tuple[str, float, float]] = []


def cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def timed(name_of: Callable[..., str], fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        c0, w0 = cpu(), time.monotonic()
        try:
            return fn(*args, **kwargs)
        finally:
            ROWS.append((name_of(*args), cpu() - c0, time.monotonic() - w0))
    return wrapper


def show(start: float) -> None:
    for name, c, w in ROWS:
        print(f"STAGECPU {name:14s} cpu {c:6.2f} wall {w:6.2f}", file=sys.stderr)
    print(f"STAGECPU total (after start-up) cpu {cpu() - start:6.2f}", file=sys.stderr)


if __name__ == "__main__":
    pipeline.run_stage = timed(lambda stage, _ctx: stage.name, pipeline.run_stage)
    report.write_reports = timed(lambda *_a: "write_reports", report.write_reports)
    atexit.register(show, cpu())
    sys.argv = ["auditor", *sys.argv[1:]]
    main()
