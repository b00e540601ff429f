"""setup.cfg: ``[options] install_requires / setup_requires / tests_require`` and
``[options.extras_require]``, read line by line so every requirement keeps its line number."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from auditor.deps.declaration import Collector, Extraction, Topic

LIST_KEYS = ("install_requires", "setup_requires", "tests_require")
_SECTION = re.compile(r"^\[\s*([^\]]+?)\s*\]\s*$")
_KEY = re.compile(r"^([A-Za-z0-9_.\-]+)\s*[=:]\s*(.*)$")


def is_setup_cfg(p: PurePosixPath) -> bool:
    return p.name == "setup.cfg"


def _entries(text: str) -> list[tuple[str, str, list[tuple[int, str]]]]:
    """(section, key, [(line, value piece)]) with continuation lines folded in."""
    out: list[tuple[str, str, list[tuple[int, str]]]] = []
    section = ""
    current: tuple[str, str, list[tuple[int, str]]] | None = None
    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.strip() or raw.lstrip().startswith(("#", ";")):
            continue
        if raw[0] in " \t" and current is not None:
            current[2].append((n, raw.strip()))
            continue
        m = _SECTION.match(raw)
        if m:
            section = m.group(1).strip()
            current = None
            continue
        m = _KEY.match(raw)
        if m:
            current = (section, m.group(1).strip(), [(n, m.group(2).strip())] if m.group(2).strip()
                       else [])
            out.append(current)
    return out


def extract(path: str, text: str) -> Extraction:
    col = Collector(path)
    for section, key, values in _entries(text):
        if section == "options" and key in LIST_KEYS:
            group = key
        elif section == "options.extras_require":
            group = f"extras:{key}"
        else:
            continue
        for line, value in values:
            value = re.sub(r"\s+#.*$", "", value).strip()
            if not value:
                continue
            if value.startswith("file:"):
                for target in value[5:].split(","):
                    if target.strip():
                        col.refer(target.strip(), line)
                continue
            if value.startswith("attr:"):
                col.skip(line, f"{key} = {value[:60]}: computed, not checked", group=group,
                         topic=Topic.COMPUTED_REQUIRES)
                continue
            col.requirement(value, line, group=group, raw=value)
    return col.done()
