"""The layers of auditor's imports (issue 32, item 4): the typed results, the model and the spec
import no stage package (the shared values live below the stages that use them), and no import
cycle passes through the modules that carry a declaration, a review value or a diff slice.
Read from the sources: every import, also those inside functions and under TYPE_CHECKING."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

import auditor

PKG = Path(auditor.__file__).resolve().parent

#: the packages and modules that run a stage or present its result (the upper layers)
STAGE_LAYERS = ("auditor.review", "auditor.deps", "auditor.scan", "auditor.sbom",
                "auditor.rebuild", "auditor.provenance", "auditor.gate", "auditor.report",
                "auditor.service", "auditor.attest", "auditor.pipeline", "auditor.cli",
                "auditor.stage", "auditor.demo", "auditor.waive")


def _modules() -> dict[str, Path]:
    out = {}
    for p in PKG.rglob("*.py"):
        parts = ("auditor", *p.relative_to(PKG).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


def _graph() -> dict[str, set[str]]:
    mods = _modules()

    def owner(name: str) -> str:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name

    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps.update(owner(a.name) for a in node.names if a.name.startswith("auditor"))
            elif (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                  and node.module.startswith("auditor")):
                deps.update(owner(f"{node.module}.{a.name}") for a in node.names)
        graph[name] = deps - {name, ""}
    return graph


def _reach(graph: Mapping[str, set[str]], root: str) -> set[str]:
    """Every module reachable from root by imports (root itself only through a cycle)."""
    seen: set[str] = set()
    todo = [w for w in graph[root] if w in graph]
    while todo:
        v = todo.pop()
        if v not in seen:
            seen.add(v)
            todo.extend(w for w in graph[v] if w in graph)
    return seen


def _cycles(graph: Mapping[str, set[str]]) -> list[set[str]]:
    """The groups of more than one module that import each other, directly or not."""
    reach = {v: _reach(graph, v) for v in graph}
    out: list[set[str]] = []
    for v in graph:
        comp = {v} | {w for w in reach[v] if v in reach[w]}
        if len(comp) > 1 and comp not in out:
            out.append(comp)
    return out


def test_the_finder_sees_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


def test_results_model_and_spec_import_no_stage() -> None:
    graph = _graph()
    low = [m for m in graph if m.startswith("auditor.results")] + [
        "auditor.model", "auditor.spec", "auditor.errors", "auditor.policy"]
    upward = {m: sorted(d for d in graph[m] if d.startswith(STAGE_LAYERS)) for m in low}
    assert not {m: d for m, d in upward.items() if d}


def test_the_shared_values_live_in_the_lower_layer() -> None:
    from auditor.deps import declaration
    from auditor.results import deps, review
    from auditor.review import areas, coverage, signoffs

    assert declaration.Kind is deps.Kind
    assert areas.ReviewArea is review.ReviewArea and coverage.HunkRef is review.HunkRef
    assert signoffs.SignOff is review.SignOff


#: the modules this layering is about: none of them may sit on an import cycle
LAYERED = ("auditor.results", "auditor.model", "auditor.spec", "auditor.deps", "auditor.sbom",
           "auditor.review", "auditor.provenance", "auditor.scan.pyast", "auditor.scan.diffslice",
           "auditor.scan.slicecache", "auditor.scan.taintviews", "auditor.scan.banditviews",
           "auditor.report.view", "auditor.report.markdown", "auditor.report.html")


def test_no_cycle_passes_through_the_layered_modules() -> None:
    on_cycles = [sorted(c) for c in _cycles(_graph()) if any(m.startswith(LAYERED) for m in c)]
    assert not on_cycles


def test_the_diff_slice_is_three_modules_and_the_ast_toolkit_imports_no_scan_module() -> None:
    graph = _graph()
    assert "auditor.scan.slicing" not in graph
    # its one import of auditor is the parser (a leaf: newer-Python f-strings read as opaque)
    assert not any(d.startswith("auditor.") for d in graph["auditor.scan.pyast"]
                   if d != "auditor.pysource")
    assert not any(d.startswith("auditor.") for d in graph["auditor.pysource"])
    assert "auditor.scan.pyast" in graph["auditor.scan.taintviews"]
    assert "auditor.scan.pyast" in graph["auditor.scan.banditviews"]
