"""Path globs for recipes and engine profiles, matched against posix paths of the bundle.

A pattern without ``/`` matches the file's base name anywhere (``*.cu``, ``CMakeLists.txt``); a
pattern with ``/`` matches the whole path from the bundle root, where ``*`` and ``?`` stay inside one
segment and a ``**`` segment stands for any number of segments (``csrc/**``, ``csrc/**/x.cu``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

#: extensions that are native sources even when a profile lists none
NATIVE_EXTENSIONS = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hh", ".hxx",
                     ".inl", ".ptx", ".cmake", ".S", ".s", ".rs")
#: Rust too (vLLM 0.30.0's ``_rust_tool_parser`` is built from ``rust/`` by setuptools-rust): no
#: recipe builds it, so a change there is unclaimed (blocking) instead of the official binary
NATIVE_NAMES = ("CMakeLists.txt", "Cargo.toml", "Cargo.lock")


def _segment(part: str) -> str:
    out = []
    i = 0
    while i < len(part):
        ch = part[i]
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = part.find("]", i + 1)
            if end == -1:
                out.append(re.escape(ch))
            else:
                body = part[i + 1:end].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


@functools.lru_cache(maxsize=4096)
def compile_glob(pattern: str) -> tuple[bool, re.Pattern[str]]:
    """(matches the base name only, compiled regex) for one pattern."""
    pattern = pattern.strip().lstrip("/") if "/" in pattern.strip() else pattern.strip()
    if "/" not in pattern:
        return True, re.compile(_segment(pattern) + r"\Z")
    parts = pattern.split("/")
    rx = ""
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            rx += ".*" if last else "(?:[^/]*/)*"
        else:
            rx += _segment(part) + ("" if last else "/")
    return False, re.compile(rx + r"\Z")


def matches(path: str, pattern: str) -> bool:
    base_only, rx = compile_glob(pattern)
    return bool(rx.match(path.rsplit("/", 1)[-1] if base_only else path))


def match_any(path: str, patterns: Iterable[str]) -> bool:
    return any(matches(path, p) for p in patterns)


def is_native(path: str, profile_globs: Iterable[str] = ()) -> bool:
    """A native source: by the engine profile's globs, or by extension or name."""
    name = path.rsplit("/", 1)[-1]
    return (name in NATIVE_NAMES or name.endswith(NATIVE_EXTENSIONS)
            or match_any(path, profile_globs))
