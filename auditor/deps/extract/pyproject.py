"""pyproject.toml: PEP 621 ``[project] dependencies`` and ``optional-dependencies``, PEP 735
``[dependency-groups]``, and ``[build-system] requires``.

A ``dynamic`` dependencies field (computed by the build backend) is reported as not checked.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any

from auditor.deps.declaration import Collector, Extraction, Topic
from auditor.deps.extract.locate import section_line, value_line


def is_pyproject(p: PurePosixPath) -> bool:
    return p.name == "pyproject.toml"


def extract(path: str, text: str) -> Extraction:
    col = Collector(path)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        col.skip(0, f"malformed TOML, dependencies not checked: {exc}")
        return col.done()
    lines = text.splitlines()
    used: set[tuple[int, str]] = set()

    def take(values: Any, group: str, header: str) -> None:
        start = section_line(lines, header)
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            col.skip(start, f"{group} is not a list of strings: not checked")
            return
        for v in values:
            line = value_line(lines, v, start, used)
            col.requirement(v, line, group=group, raw=lines[line - 1] if line else v)

    project = doc.get("project")
    if isinstance(project, dict):
        _project(project, doc, take, col, lines)
    groups = doc.get("dependency-groups")
    if isinstance(groups, dict):
        for name, values in groups.items():
            if isinstance(values, list):
                take([v for v in values if isinstance(v, str)], f"group:{name}",
                     "dependency-groups")
    build = doc.get("build-system")
    if isinstance(build, dict) and "requires" in build:
        take(build["requires"], "build-system", "build-system")
    return col.done()


def _project(project: dict[str, Any], doc: dict[str, Any],
             take: Callable[[Any, str, str], None], col: Collector, lines: list[str]) -> None:
    """``[project]``: its dependencies and extras, or why they are not checked."""
    if "dependencies" in project:
        take(project["dependencies"], "dependencies", "project")
    optional = project.get("optional-dependencies", {})
    if isinstance(optional, dict):
        for extra, values in optional.items():
            take(values, f"optional:{extra}", "project.optional-dependencies")
    else:
        col.skip(section_line(lines, "project"), "optional-dependencies is not a table")
    dynamic = project.get("dynamic", [])
    if isinstance(dynamic, list):
        for field in ("dependencies", "optional-dependencies"):
            if field in dynamic and not _setuptools_files(doc, field, col, lines):
                col.skip(section_line(lines, "project"),
                         f"[project] {field} is dynamic (computed by the build backend): "
                         "not checked",
                         group="dependencies" if field == "dependencies" else "optional",
                         topic=Topic.COMPUTED_REQUIRES)


def _setuptools_files(doc: dict[str, Any], field: str, col: Collector, lines: list[str]) -> bool:
    """``[tool.setuptools.dynamic] dependencies = {file = [...]}``: read those files instead.
    True when every dynamic value of ``field`` is such a file list."""
    dyn: Any = doc
    for key in ("tool", "setuptools", "dynamic"):
        dyn = dyn.get(key) if isinstance(dyn, dict) else None
    if not isinstance(dyn, dict) or field not in dyn:
        return False
    line = section_line(lines, "tool.setuptools.dynamic")
    values = dyn[field]
    entries = [values] if field == "dependencies" else (
        list(values.values()) if isinstance(values, dict) else [None])
    targets: list[str] = []
    for entry in entries:
        files = entry.get("file") if isinstance(entry, dict) else None
        if isinstance(files, str):
            files = [files]
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            return False
        targets += files
    for target in targets:
        col.refer(target, line)
    return True
