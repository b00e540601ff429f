"""Work started while the process waits on a program (``auditor.background``)."""

from __future__ import annotations

import threading

from auditor import background


def test_work_starts_only_when_waiting_and_once() -> None:
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


def test_sbom_stage_defers_the_jsonschema_import(tmp_path, monkeypatch) -> None:
    """The sbom stage does not import jsonschema at check time (that held the interpreter lock
    during verify and slicing); it leaves it for the wait on semgrep."""
    from auditor.sbom import stage as sbom_stage

    registered: list[object] = []
    monkeypatch.setattr(sbom_stage, "when_waiting", lambda fn: registered.append(fn))
    monkeypatch.setattr(sbom_stage, "_memo_exists", lambda _spec: False)
    sbom_stage.SbomStage().check_inputs(None)  # type: ignore[arg-type]
    assert registered == [sbom_stage.warm_jsonschema]
