"""Splitting by area and balancing changed lines across reviewers (the plan is pure)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from auditor.errors import InputError
from auditor.review.areas import OTHER, area_of, parse_areas, profile_areas
from auditor.review.hunks import Hunk, HunkKind
from auditor.review.plan import make_plan, reviewer_names
from auditor.review.series import ReviewSeries
from auditor.spec import load_profile


def _hunk(path: str, lines: int, n: int = 0) -> Hunk:
    digest = hashlib.sha256(f"{path}{n}{lines}".encode()).hexdigest()
    return Hunk(id=digest[:16], digest=digest, path=path, commit="c" * 40, kind=HunkKind.TEXT,
                start=1, end=lines, added=lines, removed=0, header="@@ -1,0 +1 @@", text="")


def _series(hunks: list[Hunk]) -> ReviewSeries:
    areas = profile_areas(load_profile("vllm").review_areas)
    return ReviewSeries(commits=(), hunks=tuple(hunks), areas=areas,
                        area_by_hunk={h.digest: area_of(h.path, areas) for h in hunks})


def test_vllm_profile_areas_route_real_paths() -> None:
    areas = profile_areas(load_profile("vllm").review_areas)
    assert [a.name for a in areas][-1] == OTHER
    expect = {"csrc/attention/attention_kernels.cu": "kernels", "CMakeLists.txt": "build",
              "cmake/utils.cmake": "build", "setup.py": "build",
              "requirements/cuda.txt": "dependencies", "docker/Dockerfile": "install",
              "vllm/distributed/parallel_state.py": "distributed",
              "vllm/entrypoints/openai/api_server.py": "entrypoints",
              "vllm/usage/usage_lib.py": "telemetry", "vllm/envs.py": "telemetry",
              "vllm/model_executor/models/llama.py": OTHER}
    assert {p: area_of(p, areas) for p in expect} == expect
    assert all(a.checklist for a in areas)
    for name in ("generic", "llama.cpp"):
        assert profile_areas(load_profile(name).review_areas)[-1].name == OTHER


def test_areas_stay_whole_within_a_fair_share() -> None:
    hunks = ([_hunk("csrc/a.cu", 25, i) for i in range(2)] + [_hunk("docker/Dockerfile", 50)]
             + [_hunk("vllm/envs.py", 20)] + [_hunk("vllm/x.py", 10, i) for i in range(3)])
    plan = make_plan(_series(hunks), ["a", "b", "c"])  # 150 lines, share 50
    assert sum(p.lines for p in plan.packets) == 150
    owners: dict[str, set[str]] = {}
    for p in plan.packets:
        for h in p.hunks:
            owners.setdefault(plan.series.area(h), set()).add(p.reviewer)
    assert all(len(v) == 1 for v in owners.values())  # no area was split
    assert max(p.lines for p in plan.packets) == 50
    assert make_plan(_series(hunks), ["a", "b", "c"]).to_json() == plan.to_json()


def test_an_area_above_the_share_is_split_by_file_first() -> None:
    hunks = [_hunk(f"csrc/k{i}.cu", 25) for i in range(8)] + [_hunk("setup.py", 10)]
    plan = make_plan(_series(hunks), ["a", "b", "c", "d"])  # 210 lines, share 53
    loads = sorted(p.lines for p in plan.packets)
    assert loads[-1] <= 60 and loads[0] >= 45
    for p in plan.packets:  # every file is in one packet
        assert len({h.path for h in p.hunks}) == len(p.hunks)
    js = plan.to_json()
    assert js["lines_total"] == 210 and js["hunks_total"] == 9
    assert {"name", "areas", "lines", "hunks"} <= set(js["reviewers"][0])
    assert {"id", "path", "commit", "start", "end", "lines"} <= set(js["reviewers"][0]["hunks"][0])


def test_a_big_file_is_cut_between_hunks() -> None:
    hunks = [_hunk("csrc/big.cu", 10, i) for i in range(10)]
    plan = make_plan(_series(hunks), ["a", "b"])
    assert [p.lines for p in plan.packets] == [50, 50]


def test_reviewer_names() -> None:
    assert reviewer_names(3, []) == ("reviewer-1", "reviewer-2", "reviewer-3")
    assert reviewer_names(None, ["ann", "bo"]) == ("ann", "bo")
    for count, names in ((None, []), (0, []), (3, ["ann"]), (None, ["ann", "ann"]),
                         (None, ["../evil"]), (None, ["a b"])):
        with pytest.raises(InputError):
            reviewer_names(count, names)


def test_malformed_areas_name_file_and_key(tmp_path: Path) -> None:
    from auditor.errors import SpecError

    f = tmp_path / "p.toml"
    for raw, key in (({"k": {"globs": []}}, "review_areas.k.globs"),
                     ({"k": {"globs": ["x"], "colour": 1}}, "review_areas.k.colour"),
                     ({"K!": {"globs": ["x"]}}, "review_areas.K!"),
                     ({"k": {"globs": ["x"], "checklist": [3]}}, "review_areas.k.checklist[0]")):
        with pytest.raises(SpecError) as exc:
            parse_areas(raw, file=f)
        assert exc.value.key == key and str(f) in exc.value.message
