"""Work to start when the process has the interpreter to spare: while it waits on a program.

Python runs one thread at a time, so a slow import done "in the background" while the pipeline
is busy in Python only delays that work (measured on a cold audit of real vLLM code: warming
jsonschema at start-up held the lock ~1.6 s of verify and slicing, and semgrep started ~3 s later).
Each run has its own :class:`Background` (``Context.background``, :mod:`auditor.stage`): a stage
registers such work with :meth:`Background.when_waiting` (from :meth:`~auditor.stage.Stage.prepare`);
whoever is about to wait a long time on a program (the semgrep scanner, given the run's
:meth:`Background.waiting`) calls it, which starts the work. Work that is never started this way
is done by its owner when it needs the result (the import lock makes that safe);
:meth:`Work.settle` waits for work that started, and makes sure work that did not never does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class Work:
    """Registered work: started by :meth:`Background.waiting` in a daemon thread, at most once."""

    def __init__(self, fn: Callable[[], None]) -> None:
        self._fn = fn
        self._lock = threading.Lock()
        self._state = "pending"  # then "running" or "dropped"
        self._done = threading.Event()

    def start(self) -> None:
        with self._lock:
            if self._state != "pending":
                return
            self._state = "running"
        threading.Thread(target=self._run, name="auditor-while-waiting", daemon=True).start()

    def _run(self) -> None:
        try:
            self._fn()
        finally:
            self._done.set()

    def settle(self) -> None:
        """Wait for the work if it started; if it has not, it never will (its owner does what
        it needs itself)."""
        with self._lock:
            if self._state == "pending":
                self._state = "dropped"
                return
        self._done.wait()


class Background:
    """The work one run's stages registered, not started yet (no state is shared between runs)."""

    def __init__(self) -> None:
        self._pending: list[Work] = []
        self._lock = threading.Lock()

    def when_waiting(self, work: Callable[[], None]) -> Work:
        """Start ``work`` (which must not raise) the next time the run waits on a program."""
        handle = Work(work)
        with self._lock:
            self._pending.append(handle)
        return handle

    def waiting(self) -> None:
        """The run is about to wait on a program: start the registered work, each in a daemon
        thread of its own."""
        with self._lock:
            work, self._pending = self._pending, []
        for handle in work:
            handle.start()
