"""``[sources_not_built]``: another backend's changed source is left out and reported, unless a
file a module compiles includes it (then that module is rebuilt); the include reader itself."""

from __future__ import annotations

from pathlib import Path

from buildcase import needs_nvcc

from auditor.rebuild.includes import IncludeGraph, included_names


def test_include_names_and_reach_through_headers() -> None:
    assert included_names(b'#include "a.h"\n  #  include <core/b.h>\n// #include "c.h"\n') == (
        "a.h", "core/b.h")
    graph = IncludeGraph({
        "csrc/kern.cu": b'#include "core/mid.h"\n',
        "csrc/core/mid.h": b'#include "../cpu/vsx.hpp"\n',
        "csrc/cpu/vsx.hpp": b"int x;\n",
        "csrc/cpu/types.hpp": b'#include "vsx.hpp"\n',
        "csrc/other.cu": b'#include "unrelated.h"\n'})
    assert graph.reaching("csrc/cpu/vsx.hpp") == {"csrc/core/mid.h", "csrc/kern.cu",
                                                  "csrc/cpu/types.hpp"}
    assert graph.reaching("csrc/other.cu") == frozenset()


def _recipe(upstream) -> str:  # type: ignore[no-untyped-def]
    from buildcase import recipe_text

    return recipe_text(upstream) + ('\n[sources_not_built]\n'
                                    '"csrc/cpu/**" = "the CPU backend: never compiled here"\n')


@needs_nvcc
def test_a_changed_other_backend_source_is_left_out_and_reported(  # type: ignore[no-untyped-def]
        upstream, tmp_path: Path) -> None:
    from buildcase import make_case, make_series, run_build

    branch = make_series(upstream, "cpu", [{"csrc/cpu/vsx.hpp": "int vsx_changed;\n"}])
    result = run_build(make_case(upstream, tmp_path, branch, recipe=_recipe(upstream)))
    data = result.to_json()
    assert not any(f.rule == "build.unclaimed-native-source" for f in result.findings)
    left = {x["path"]: x["reason"] for x in data["left_out"]}
    assert left == {"csrc/cpu/vsx.hpp": "not built for this target: the CPU backend: never "
                                        "compiled here"}
    assert all(m["action"] == "official" for m in data["modules"])


@needs_nvcc
def test_an_included_other_backend_source_rebuilds_the_module(  # type: ignore[no-untyped-def]
        upstream, tmp_path: Path) -> None:
    from buildcase import KERN_CU, make_case, make_series, run_build

    branch = make_series(upstream, "cpu-inc", [
        {"csrc/cpu/vsx.hpp": "#define VSX 1\n"},
        {"csrc/kern.cu": '#include "cpu/vsx.hpp"\n' + KERN_CU}])
    result = run_build(make_case(upstream, tmp_path, branch, recipe=_recipe(upstream)))
    data = result.to_json()
    assert data["left_out"] == []
    kern = {m["name"]: m for m in data["modules"]}["kern"]
    assert kern["action"] == "built"
    assert "csrc/cpu/vsx.hpp" in kern["changed_sources"]
