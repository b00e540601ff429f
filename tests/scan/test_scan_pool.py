"""Work spread over processes (``auditor.scan.pool``): the same answers as in this process, from
other processes when there is enough work, and from this one when the processes cannot be used."""

from __future__ import annotations

import os
from pathlib import Path

from test_scan_taintviews import HOSTILE, SETTINGS, target

from auditor.scan import pool
from auditor.scan import rules as rules_mod
from auditor.scan.gating import stage_by_gates
from auditor.scan.pool import map_in_processes


def square_and_pid(n: int) -> tuple[int, int]:
    return n * n, os.getpid()


def test_enough_work_runs_on_other_processes_with_the_same_answers() -> None:
    got = map_in_processes(square_and_pid, list(range(40)), workers=2, min_work=10,
                           given=lambda n: n)
    assert [n for n, _pid in got] == [n * n for n in range(40)]
    assert os.getpid() not in {pid for _n, pid in got}


def test_little_work_or_one_worker_runs_here() -> None:
    for kwargs in ({"workers": 2, "min_work": 1000}, {"workers": 1, "min_work": 1}):
        got = map_in_processes(square_and_pid, list(range(5)), given=lambda n: n, **kwargs)
        assert got == [(n * n, os.getpid()) for n in range(5)]


def test_work_the_processes_cannot_take_runs_here() -> None:
    offset = 3  # a closure cannot be sent to another process
    got = map_in_processes(lambda n: n + offset, list(range(5)), workers=2, min_work=1,
                           given=lambda n: n)
    assert got == [3, 4, 5, 6, 7]


def test_staging_is_the_same_with_the_views_made_on_processes(tmp_path: Path,
                                                              monkeypatch) -> None:
    files = [target(p, t) for p, t in HOSTILE.items()] + [target("vllm/settings.py", SETTINGS)]
    meta = rules_mod.load_rule_meta()
    here = stage_by_gates(files, tmp_path / "here", lambda t: t.text, meta)
    monkeypatch.setattr(pool, "MIN_WORK", 1)
    there = stage_by_gates(files, tmp_path / "there", lambda t: t.text, meta)
    assert here == there and here.views
    for rel in here.files:
        assert (tmp_path / "here" / rel).read_bytes() == (tmp_path / "there" / rel).read_bytes()


def test_the_views_work_can_be_sent_to_another_process() -> None:
    # map_in_processes falls back to this process on any failure; here nothing may fall back
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from auditor.scan.gating import prefiltered
    from auditor.scan.plan import _views
    from auditor.scan.prefilter import Prefilter

    pfs = tuple(Prefilter(m.prefilter, m.sink_group)
                for m in prefiltered(rules_mod.load_rule_meta()) if m.taint)
    jobs = [(text, pfs) for text in [SETTINGS, *HOSTILE.values()]]
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as ex:
        assert list(ex.map(_views, jobs)) == [_views(job) for job in jobs]


def test_slices_made_on_processes_are_the_slices_made_here(monkeypatch) -> None:
    from auditor.scan import diffslice

    files = [target(p, t) for p, t in HOSTILE.items()] + [target("vllm/settings.py", SETTINGS)]
    lines = {t.key: {3} for t in files}  # the third line of each file changed

    def changed(ts: object) -> dict[str, set[int]]:
        return lines

    here = diffslice.slice_targets(files, lambda _t: True, changed)
    monkeypatch.setattr(pool, "MIN_WORK", 1)
    there = diffslice.slice_targets(files, lambda _t: True, changed)
    assert here == there and here[1].files


def test_processes_started_inside_kept_take_later_smaller_work_and_end_with_it() -> None:
    with pool.kept():
        first = map_in_processes(square_and_pid, list(range(40)), workers=2, min_work=10,
                                 given=lambda n: n)
        # too little work to start processes for, but they are running: it goes there
        second = map_in_processes(square_and_pid, list(range(6)), workers=2, given=lambda n: n,
                                  work=lambda _n: pool.MIN_WORK // 10)
        assert [n for n, _ in second] == [n * n for n in range(6)]
        assert {pid for _, pid in second} <= {pid for _, pid in first}
        assert os.getpid() not in {pid for _, pid in first + second}
        # below even the started processes' floor: here
        tiny = map_in_processes(square_and_pid, [1, 2], workers=2, min_work=10 ** 9,
                                given=lambda n: n)
        assert tiny == [(1, os.getpid()), (4, os.getpid())]
    after = map_in_processes(square_and_pid, list(range(6)), workers=2, given=lambda n: n,
                             work=lambda _n: pool.MIN_WORK // 10)
    assert after == [(n * n, os.getpid()) for n in range(6)]
    for _, pid in first:  # the kept processes were shut down on leaving
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        raise AssertionError(f"worker {pid} still runs")


def die_elsewhere(job: tuple[int, int]) -> int:
    n, here = job
    if os.getpid() != here:
        os._exit(1)  # a worker that dies mid-work
    return n + 1


def test_a_kept_pool_whose_worker_died_gives_the_same_answers_here() -> None:
    me = os.getpid()
    with pool.kept():
        map_in_processes(square_and_pid, list(range(40)), workers=2, min_work=10,
                         given=lambda n: n)
        assert map_in_processes(die_elsewhere, [1, 2, 3], workers=2, given=lambda n: (n, me),
                                work=lambda _n: pool.MIN_WORK) == [2, 3, 4]
        # the broken pool is let go: the next work big enough starts new processes
        got = map_in_processes(square_and_pid, list(range(6)), workers=2, given=lambda n: n,
                               work=lambda _n: pool.MIN_WORK)
        assert [n for n, _ in got] == [n * n for n in range(6)] and me not in {p for _, p in got}
