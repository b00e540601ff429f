"""A line- and column-preserving CUDA -> C++ shim, so the C/C++ semgrep rules can read ``.cu`` files.

Semgrep does not recognise ``.cu``/``.cuh``, and parsed as C++ they fail on ``__global__`` and on
``kernel<<<grid, block>>>(...)``. :func:`cuda_to_cpp` rewrites the CUDA-only parts in place: the
execution-space and memory-space qualifiers and ``__launch_bounds__(...)`` and friends are blanked
with spaces; the launch configuration is runtime code (its grid, block, shared-memory and stream
expressions run on the host: ``k<<<n + 0 * system("..."), 128>>>(...)`` compiles), so its
delimiters become parentheses, ``k(  grid, block  )(args)``, and every expression in it stays at
its own columns, read by the rules like any call argument. Every other byte, every newline and
every column stays where it was, so a finding at line L, column C of the shimmed copy is at line L,
column C of the ``.cu`` file. Comments, string and character literals are left untouched.

Nothing is blanked that the shim cannot prove inert: an attribute whose arguments hold a literal,
a block, a lambda or a statement, and a launch configuration holding a block or a statement, are
left as they are; the parser then reads them or reports that it cannot (the file is not checked),
never a silent blank.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

CUDA_SUFFIXES = (".cu", ".cuh")
SHIM_SUFFIX = ".cpp"

# Qualifiers with no C++ meaning; blanking them leaves a valid declaration.
_QUALIFIERS = (
    "__global__", "__device__", "__host__", "__shared__", "__constant__", "__managed__",
    "__forceinline__", "__noinline__", "__restrict__", "__grid_constant__", "__inline__",
    "__device_builtin__", "__cudart_builtin__",
)
# Attributes that take a parenthesised argument list.
_WITH_ARGS = ("__launch_bounds__", "__align__", "__cluster_dims__", "__maxnreg__",
              "__block_size__")

_QUALIFIER_RE = re.compile(r"\b(?:" + "|".join(_QUALIFIERS) + r")\b")
_WITH_ARGS_RE = re.compile(r"\b(?:" + "|".join(_WITH_ARGS) + r")\s*\(")


def is_cuda(path: str | PurePosixPath | Path) -> bool:
    return str(path).lower().endswith(CUDA_SUFFIXES)


def shim_name(path: str) -> str:
    """The name of the shimmed copy of a CUDA file (``a/k.cu`` -> ``a/k.cu.cpp``)."""
    return path + SHIM_SUFFIX


def cuda_to_cpp(text: str) -> str:
    """Blank the CUDA-only syntax of ``text``; same length, same lines, same columns."""
    code = _code_mask(text)
    out = list(text)

    def blank(start: int, end: int) -> None:
        for i in range(start, end):
            if out[i] not in "\r\n":
                out[i] = " "

    for m in _QUALIFIER_RE.finditer(text):
        if code[m.start()]:
            blank(m.start(), m.end())
    for m in _WITH_ARGS_RE.finditer(text):
        if not code[m.start()]:
            continue
        close = _matching_paren(text, code, m.end() - 1)
        if close is not None and _inert(text, code, m.end(), close):
            blank(m.start(), close + 1)
    pos = 0
    while True:
        start = text.find("<<<", pos)
        if start < 0:
            break
        pos = start + 3
        if not code[start]:
            continue
        end = _launch_end(text, code, start + 3)
        if end is not None:
            # `<<<` -> `(  `, `>>>` -> `  )`: the configuration becomes the arguments of a call
            out[start:start + 3] = ["(", " ", " "]
            out[end - 3:end] = [" ", " ", ")"]
            pos = end
    return "".join(out)


def _inert(text: str, code: list[bool], start: int, end: int) -> bool:
    """Whether ``text[start:end]`` (an attribute's arguments) is a constant expression the shim
    may blank: no literal (a string or character), no block, lambda or statement."""
    return all(code[i] for i in range(start, end) if not text[i].isspace()) and not any(
        code[i] and text[i] in "{};[]\"'" for i in range(start, end))


def _matching_paren(text: str, code: list[bool], open_at: int) -> int | None:
    depth = 0
    for i in range(open_at, len(text)):
        if not code[i]:
            continue
        ch = text[i]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
    return None


def _launch_end(text: str, code: list[bool], i: int) -> int | None:
    """The index just past the ``>>>`` closing a launch configuration that starts at ``i``."""
    depth = 0  # parentheses inside the configuration, e.g. dim3(a, b)
    while i < len(text):
        if code[i]:
            if text.startswith(">>>", i) and depth == 0:
                return i + 3
            ch = text[i]
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth < 0:
                    return None
            elif ch in ";{}":
                return None
        i += 1
    return None


_RAW_STRING_RE = re.compile(r'(?:u8|u|U|L)?R"([^()\\\s]{0,16})\(')


def _code_mask(text: str) -> list[bool]:
    """For each character: True when it is code, False inside comments and literals."""
    n = len(text)
    mask = [True] * n
    i = 0
    while i < n:
        ch = text[i]
        if ch == "/" and text.startswith("//", i):
            end = i
            while end < n and text[end] != "\n":
                # a backslash-newline continues a line comment
                end += 2 if text.startswith("\\\n", end) else 1
            _clear(mask, i, end)
            i = end
        elif ch == "/" and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            _clear(mask, i, end)
            i = end
        elif ch == "R" or (ch in "uUL8" and "R" in text[i:i + 3]):
            m = _RAW_STRING_RE.match(text, i)
            if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
                close = text.find(")" + m.group(1) + '"', m.end())
                end = n if close < 0 else close + len(m.group(1)) + 2
                _clear(mask, i, end)
                i = end
            else:
                i += 1
        elif ch in "\"'":
            # a ' between digits is a C++14 digit separator, not a character literal
            if ch == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                i += 1
                continue
            end = i + 1
            while end < n and text[end] != ch and text[end] != "\n":
                end += 2 if text[end] == "\\" else 1
            end = min(end + 1, n)
            _clear(mask, i, end)
            i = end
        else:
            i += 1
    return mask


def _clear(mask: list[bool], start: int, end: int) -> None:
    for j in range(start, min(end, len(mask))):
        mask[j] = False
