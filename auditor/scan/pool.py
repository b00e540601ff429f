"""Pure per-file work spread over processes, for the steps the scan waits on before semgrep.

Python runs one thread at a time, so the taint views of a large tree (a parse of each file and
word tests per function: ~18 s of CPU over vLLM's 2,687 files) ran on one core while the other
waited. :func:`map_in_processes` runs such work on fresh interpreters (``spawn``: the scan has
threads, which ``fork`` would copy mid-flight) when there is enough of it to pay for starting
them; otherwise, and whenever the processes fail, it runs here. The work must be a module-level
function of picklable arguments whose answer does not depend on where it runs: the results are
the same either way (``tests/scan/test_scan_pool.py``).

Inside :func:`kept` (the scan holds it for its whole run) processes once started stay for the
next step: a diff-scoped scan starts them for its slices, and its taint views, too little work to
pay for a start of their own, then run there rather than on one core here.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from typing import TypeVar

T = TypeVar("T")
A = TypeVar("A")
R = TypeVar("R")

#: below this much work (the caller's measure, bytes of text say) the processes cost more than
#: they save (starting one and importing the scan's modules: ~0.3 s)
MIN_WORK = 4_000_000
#: the same for processes already started (:func:`kept`): sending the work and its answers
MIN_WORK_STARTED = 200_000

_LOCK = threading.Lock()
_kept: list[dict[int, ProcessPoolExecutor]] = []  # the innermost kept() scope's pools, by size


def _start(workers: int) -> ProcessPoolExecutor:
    # Ctrl-C reaches the whole process group: the workers leave it to this process, which stops
    # the run once the work in hand is done (no worker tracebacks, no redone work)
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=signal.signal,
                               initargs=(signal.SIGINT, signal.SIG_IGN))


@contextlib.contextmanager
def kept() -> Iterator[None]:
    """Within this, processes :func:`map_in_processes` starts are kept for its later calls (from
    any thread), and shut down on leaving."""
    scope: dict[int, ProcessPoolExecutor] = {}
    with _LOCK:
        _kept.append(scope)
    try:
        yield
    finally:
        with _LOCK:
            _kept.remove(scope)
        for ex in scope.values():
            ex.shutdown(wait=True)


def _executor(workers: int, work: int, floor: int | None) -> tuple[Executor | None, bool]:
    """The processes to use for this much ``work`` (None: run here), and whether they are this
    call's own (to be shut down after it)."""
    with _LOCK:
        scope = _kept[-1] if _kept else None
        if scope is not None and workers in scope:
            started = scope[workers]
            return (started, False) if work >= (MIN_WORK_STARTED if floor is None else floor) \
                else (None, False)
        if work < (MIN_WORK if floor is None else floor):
            return None, False
        ex = _start(workers)
        if scope is None:
            return ex, True
        scope[workers] = ex
        return ex, False


def map_in_processes(fn: Callable[[A], R], items: Sequence[T], *, workers: int,
                     given: Callable[[T], A],
                     work: Callable[[T], int] = lambda _item: 1,
                     min_work: int | None = None) -> list[R]:
    """``[fn(given(item)) for item in items]``, on ``workers`` processes when there are two
    workers or more and the items' ``work`` adds up to ``min_work`` or more (by default
    :data:`MIN_WORK`, or :data:`MIN_WORK_STARTED` where :func:`kept` holds processes started
    before). ``given`` runs here, in order, each item's as late as the processes can take it (it
    may wait on other work: the processes start on the first items meanwhile)."""
    if workers < 2 or len(items) < 2:
        return [fn(given(item)) for item in items]
    try:
        ex, own = _executor(workers, sum(map(work, items)), min_work)
    except Exception:  # noqa: BLE001 - processes that cannot start: the same work here
        ex, own = None, False
    if ex is None:
        return [fn(given(item)) for item in items]
    try:
        return list(ex.map(fn, (given(item) for item in items),
                           chunksize=max(1, min(8, len(items) // (workers * 8)))))
    except Exception:  # noqa: BLE001 - a pool that dies: the same work here
        own = own or _forget(ex)
        return [fn(given(item)) for item in items]
    finally:
        if own:
            ex.shutdown(wait=True)


def _forget(ex: Executor) -> bool:
    """Take a failed pool out of the scopes that keep it (a later call may start another);
    True when it was kept."""
    with _LOCK:
        for scope in _kept:
            for workers, kept_ex in list(scope.items()):
                if kept_ex is ex:
                    del scope[workers]
                    return True
    return False
