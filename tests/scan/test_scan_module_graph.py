"""The module graph the issue asked for (issue 32): the engine's meaning imports the scan plan and
never the staged runner's internals; the plan imports no executor; the two import cycles
(deps/vulns fetch <-> osv, model -> provenance/bundlefiles -> model) are gone; the dead code is
gone. Read from the sources (every import, also those inside functions and TYPE_CHECKING)."""

from __future__ import annotations

import ast
from pathlib import Path

import auditor

PKG = Path(auditor.__file__).resolve().parent


def imports_of(rel: str) -> set[str]:
    tree = ast.parse((PKG / rel).read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


EXECUTORS = {"auditor.scan.gating", "auditor.scan.staging", "auditor.scan.semgrep",
             "auditor.scan.bandit", "auditor.scan.banditviews", "auditor.scan.reference"}


def test_the_engine_imports_the_plan_not_the_executors() -> None:
    engine = imports_of("scan/engine.py")
    assert "auditor.scan.plan" in engine
    assert not engine & EXECUTORS, engine & EXECUTORS


def test_the_plan_imports_no_executor() -> None:
    assert not imports_of("scan/plan.py") & EXECUTORS


def test_the_two_cycles_are_gone() -> None:
    assert not any(m.startswith("auditor.deps.vulns.fetch") for m in imports_of("deps/vulns/osv.py"))
    assert not any(m.startswith("auditor.provenance") for m in imports_of("model.py"))


def test_the_dead_code_is_gone() -> None:
    from auditor import inputs
    from auditor.provenance import blame
    from auditor.rebuild import elf
    from auditor.scan import prefilter
    from auditor.service import lint

    for module, name in ((prefilter, "admits"), (blame, "origins_for"),
                         (inputs, "load_json_input"), (inputs, "load_toml_input"),
                         (elf, "is_elf"), (lint, "iter_rules")):
        assert not hasattr(module, name), (module.__name__, name)
