"""Work started while the run waits on a program (``auditor.background``): one
:class:`~auditor.background.Background` per run, passed through the stage context, no module
global."""

from __future__ import annotations

import threading

from auditor.background import Background


def test_work_starts_only_when_waiting_and_once() -> None:
    background = Background()
    started: list[str] = []
    done = threading.Event()

    def work() -> None:
        started.append(threading.current_thread().name)
        done.set()

    background.when_waiting(work)
    assert not done.wait(0.2)  # registered, not started
    background.waiting()
    assert done.wait(10)
    assert started == ["auditor-while-waiting"]  # on a thread of its own
    done.clear()
    background.waiting()  # nothing left to start
    assert not done.wait(0.2)
    assert started == ["auditor-while-waiting"]


def test_settle_waits_for_work_that_started_and_drops_work_that_did_not() -> None:
    background = Background()
    release = threading.Event()
    ran: list[str] = []

    def slow() -> None:
        release.wait(10)
        ran.append("slow")

    started = background.when_waiting(slow)
    dropped = background.when_waiting(lambda: ran.append("dropped"))
    dropped.settle()  # not started yet: it never will be
    background.waiting()
    threading.Timer(0.2, release.set).start()
    started.settle()  # returns once the work is done
    assert ran == ["slow"]
    background.waiting()
    dropped.start()
    assert ran == ["slow"]


def test_runs_do_not_share_their_work() -> None:
    one, other = Background(), Background()
    ran: list[str] = []
    done = threading.Event()
    one.when_waiting(lambda: (ran.append("one"), done.set()))
    other.waiting()  # another run waiting starts nothing of this one's
    assert not done.wait(0.2)
    one.waiting()
    assert done.wait(10) and ran == ["one"]


def test_the_stage_context_carries_the_runs_background(tmp_path) -> None:
    from auditor.stage import Context, Options

    a = Context(spec=None, options=Options(), workdir=tmp_path, out_dir=tmp_path)  # type: ignore[arg-type]
    b = Context(spec=None, options=Options(), workdir=tmp_path, out_dir=tmp_path)  # type: ignore[arg-type]
    assert isinstance(a.background, Background) and a.background is not b.background


def test_sbom_stage_defers_the_jsonschema_import(tmp_path, monkeypatch) -> None:
    """The sbom stage does not import jsonschema at check time (that held the interpreter lock
    during verify and slicing); it leaves it for the wait on semgrep, on the run's background."""
    from auditor.sbom import stage as sbom_stage
    from auditor.stage import Context, Options

    monkeypatch.setattr(sbom_stage, "_memo_exists", lambda _spec: False)
    warmed: list[str] = []
    monkeypatch.setattr(sbom_stage, "warm_jsonschema", lambda: warmed.append("warm"))
    sbom_stage.SbomStage().check_inputs(None)  # type: ignore[arg-type]
    ctx = Context(spec=None, options=Options(), workdir=tmp_path, out_dir=tmp_path)  # type: ignore[arg-type]
    sbom_stage.SbomStage().prepare(ctx)  # no workspace: only the import is registered
    assert warmed == []
    ctx.background.waiting()
    for _ in range(100):
        if warmed:
            break
        threading.Event().wait(0.05)
    assert warmed == ["warm"]


def test_semgrep_calls_the_runs_hook_before_it_waits(tmp_path) -> None:
    """The scan stage hands semgrep the run's ``waiting`` (no global queue to drain)."""
    import pytest

    from auditor.errors import ToolMissing
    from auditor.scan.interface import Origin, ScanTarget
    from auditor.scan.semgrep import SemgrepScanner
    from auditor.scan.tools import find_tool

    try:
        find_tool("semgrep")
    except ToolMissing:
        pytest.skip("semgrep is not installed")
    called: list[str] = []
    scanner = SemgrepScanner(waiting=lambda: called.append("waiting"))
    text = "import os\nprint(os.getcwd())\n"
    t = ScanTarget(key="b:a.py", path="a.py", origin=Origin.BUNDLE, sha256="0" * 64,
                   family="python", text=text)
    run = scanner.scan([t], tmp_path)
    assert called == ["waiting"]
    assert "b:a.py" in run.findings
