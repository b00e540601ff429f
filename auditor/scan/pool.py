"""Pure per-file work spread over processes, for the steps the scan waits on before semgrep.

Python runs one thread at a time, so the taint views of a large tree (a parse of each file and
word tests per function: ~18 s of CPU over vLLM's 2,687 files) ran on one core while the other
waited. :func:`map_in_processes` runs such work on fresh interpreters (``spawn``: the scan has
threads, which ``fork`` would copy mid-flight) when there is enough of it to pay for starting
them; otherwise, and whenever the processes fail, it runs here. The work must be a module-level
function of picklable arguments whose answer does not depend on where it runs: the results are
the same either way (``tests/scan/test_scan_pool.py``).
"""

from __future__ import annotations

import multiprocessing
import signal
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import TypeVar

T = TypeVar("T")
A = TypeVar("A")
R = TypeVar("R")

#: below this much work (the caller's measure, bytes of text say) the processes cost more than
#: they save (starting one and importing the scan's modules: ~0.3 s)
MIN_WORK = 4_000_000


def map_in_processes(fn: Callable[[A], R], items: Sequence[T], *, workers: int,
                     given: Callable[[T], A],
                     work: Callable[[T], int] = lambda _item: 1,
                     min_work: int | None = None) -> list[R]:
    """``[fn(given(item)) for item in items]``, on ``workers`` processes when the items' ``work``
    adds up to ``min_work`` (:data:`MIN_WORK`) or more and there are two workers or more.
    ``given`` runs here, in order, each item's as late as the processes can take it (it may wait
    on other work: the processes start on the first items meanwhile)."""
    floor = MIN_WORK if min_work is None else min_work
    if workers < 2 or len(items) < 2 or sum(map(work, items)) < floor:
        return [fn(given(item)) for item in items]
    try:
        # Ctrl-C reaches the whole process group: the workers leave it to this process, which
        # stops the run once the work in hand is done (no worker tracebacks, no redone work)
        with ProcessPoolExecutor(max_workers=workers,
                                 mp_context=multiprocessing.get_context("spawn"),
                                 initializer=signal.signal,
                                 initargs=(signal.SIGINT, signal.SIG_IGN)) as pool:
            return list(pool.map(fn, (given(item) for item in items),
                                 chunksize=max(1, min(8, len(items) // (workers * 8)))))
    except Exception:  # noqa: BLE001 - a pool that cannot start or dies: the same work here
        return [fn(given(item)) for item in items]
