"""setup.py: ``install_requires``, ``extras_require``, ``setup_requires`` and ``tests_require`` read
from the syntax tree. Never executed.

Literal lists (and module-level names bound once to a literal list) are read; anything computed
(a function call, a comprehension, ``**kwargs``) is reported as not checked, never guessed.
"""

from __future__ import annotations

import ast
from pathlib import PurePosixPath

from auditor import pysource
from auditor.deps.declaration import Collector, Extraction, Topic

LIST_KEYWORDS = ("install_requires", "setup_requires", "tests_require")


def is_setup_py(p: PurePosixPath) -> bool:
    return p.name == "setup.py"


def _is_setup_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return (isinstance(f, ast.Name) and f.id == "setup") or (
        isinstance(f, ast.Attribute) and f.attr == "setup")


def _literal_names(tree: ast.Module) -> dict[str, ast.expr]:
    """Module-level ``NAME = <expr>`` bound exactly once (augmented assignments disqualify)."""
    bound: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
            value: ast.expr | None = node.value
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
            value = node.value if isinstance(node, ast.AnnAssign) else None
        else:
            continue
        for t in targets:
            if isinstance(t, ast.Name):
                bound.setdefault(t.id, []).append(value if value is not None else t)
                if isinstance(node, ast.AugAssign):
                    bound[t.id].append(t)  # make it ambiguous
    return {k: v[0] for k, v in bound.items() if len(v) == 1}


def _strings(node: ast.expr, names: dict[str, ast.expr]) -> list[tuple[str, int]] | None:
    if isinstance(node, ast.Name) and node.id in names:
        node = names[node.id]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [(line.strip(), node.lineno) for line in node.value.splitlines()
                if line.strip() and not line.strip().startswith("#")]
    if isinstance(node, (ast.List, ast.Tuple)):
        out: list[tuple[str, int]] = []
        for elt in node.elts:
            if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                out.append((elt.value, elt.lineno))
            else:
                return None
        return out
    return None


def extract(path: str, text: str) -> Extraction:
    col = Collector(path)
    try:
        tree = pysource.parse(text, filename=path).tree
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        col.skip(getattr(exc, "lineno", 0) or 0,
                 f"not valid {pysource.INTERPRETER} (what auditor reads with), not checked: {exc}")
        return col.done()
    names = _literal_names(tree)
    calls = [n for n in ast.walk(tree) if _is_setup_call(n)]
    if not calls:
        col.skip(0, "no setup() call found: its dependencies are not checked")
        return col.done()
    for call in calls:
        assert isinstance(call, ast.Call)
        for kw in call.keywords:
            if kw.arg is None:
                col.skip(kw.value.lineno, "setup(**...) passes computed arguments: not checked")
                continue
            if kw.arg in LIST_KEYWORDS:
                _take(col, text, kw.arg, kw.value, names)
            elif kw.arg == "extras_require":
                value = kw.value
                if isinstance(value, ast.Name) and value.id in names:
                    value = names[value.id]
                if not isinstance(value, ast.Dict) or any(
                        not (isinstance(k, ast.Constant) and isinstance(k.value, str))
                        for k in value.keys):
                    col.skip(kw.value.lineno, "extras_require is computed "
                             f"({_src(text, kw.value)}): not checked", group="extras",
                             topic=Topic.COMPUTED_REQUIRES)
                    continue
                for k, v in zip(value.keys, value.values, strict=True):
                    assert isinstance(k, ast.Constant) and isinstance(k.value, str)
                    _take(col, text, f"extras:{k.value!s}", v, names)
    return col.done()


def _take(col: Collector, text: str, group: str, node: ast.expr,
          names: dict[str, ast.expr]) -> None:
    lines = text.splitlines()
    items = _strings(node, names)
    if items is None:
        col.skip(node.lineno, f"{group} is computed ({_src(text, node)}): not checked",
                 group=group, topic=Topic.COMPUTED_REQUIRES)
        return
    for value, line in items:
        col.requirement(value, line, group=group,
                        raw=lines[line - 1] if 0 < line <= len(lines) else value)


def _src(text: str, node: ast.expr) -> str:
    return " ".join((ast.get_source_segment(text, node) or "?").split())[:60]
