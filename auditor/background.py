"""Work to start when the process has the interpreter to spare: while it waits on a program.

Python runs one thread at a time, so a slow import done "in the background" while the pipeline
is busy in Python only delays that work (measured on a cold audit of real vLLM code: warming
jsonschema at start-up held the lock ~1.6 s of verify and slicing, and semgrep started ~3 s later).
A stage registers such work with :func:`when_waiting`; whoever is about to wait a long time on a
program (the semgrep scanner) calls :func:`waiting`, which starts it. Work that is never started
this way is done by its owner when it needs the result (the import lock makes that safe).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

_pending: list[Callable[[], None]] = []
_lock = threading.Lock()


def when_waiting(work: Callable[[], None]) -> None:
    """Start ``work`` (which must not raise) the next time the process waits on a program."""
    with _lock:
        _pending.append(work)


def waiting() -> None:
    """The process is about to wait on a program: start the registered work, each in a daemon
    thread of its own."""
    with _lock:
        work, _pending[:] = list(_pending), []
    for fn in work:
        threading.Thread(target=fn, name="auditor-while-waiting", daemon=True).start()
