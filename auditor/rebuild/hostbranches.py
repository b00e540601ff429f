"""The branches of CMake code that a Linux build never takes.

Forks for another host wrap their build changes in ``if(WIN32)`` / ``if(MSVC)`` / ``if(APPLE)``
blocks (vLLM's Windows forks do, around most of CMakeLists.txt). On this Linux build host those
blocks never run, so a change inside one reaches no module. :func:`linux_view` drops them: the
body of a branch whose condition is false on Linux, every branch after one that is true, and the
``if``/``elseif``/``else``/``endif`` commands themselves where the whole chain is decided (so a new
``if(WIN32) … else() <old lines> endif()`` around unchanged lines leaves those lines unchanged).

Only conditions that name host variables alone are decided (``WIN32``, ``NOT MSVC``,
``UNIX AND APPLE``); anything else (``OR``, parentheses, a comparison, a dereference) is left to
run. The view holds only while nothing can set those variables (:data:`HOST_INPUTS`: they, and the
system name, toolchain file and compilers CMake derives them from): cmakelists.host_writes names
the commands that write one, and the caller takes the plain commands when it finds any.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from auditor.rebuild.cmakelists import Command

#: false on a Linux host building with gcc/g++ and nvcc
FALSE_ON_LINUX = frozenset({
    "WIN32", "MSVC", "MSVC_IDE", "APPLE", "IOS", "MINGW", "MSYS", "CYGWIN", "BORLAND", "WATCOM",
    "XCODE", "CMAKE_HOST_WIN32", "CMAKE_HOST_APPLE"})
#: true on a Linux host
TRUE_ON_LINUX = frozenset({"UNIX", "CMAKE_HOST_UNIX"})
#: what CMake derives the host variables from: code (or a configure argument) that sets one of
#: these could make a branch above run after all
HOST_INPUTS = FALSE_ON_LINUX | TRUE_ON_LINUX | frozenset({
    "CMAKE_SYSTEM_NAME", "CMAKE_HOST_SYSTEM_NAME", "CMAKE_TOOLCHAIN_FILE", "CMAKE_CROSSCOMPILING",
    "CMAKE_C_COMPILER", "CMAKE_CXX_COMPILER", "CMAKE_CUDA_COMPILER", "CMAKE_C_COMPILER_ID",
    "CMAKE_CXX_COMPILER_ID", "CMAKE_CUDA_HOST_COMPILER", "CMAKE_GENERATOR",
    "CMAKE_GENERATOR_PLATFORM", "CMAKE_GENERATOR_TOOLSET"})


def host_value(args: Sequence[str]) -> bool | None:
    """The value of an ``if()``/``elseif()`` condition on a Linux host, or None when it depends
    on anything but the host variables."""
    if not args or any(a.upper() == "OR" or "(" in a or ")" in a for a in args):
        return None
    operands: list[list[str]] = [[]]
    for a in args:
        if a.upper() == "AND":
            operands.append([])
        else:
            operands[-1].append(a)
    values = [_operand(o) for o in operands]
    if any(v is False for v in values):
        return False
    return True if all(v is True for v in values) else None


def _operand(tokens: list[str]) -> bool | None:
    negate = False
    while tokens and tokens[0].upper() == "NOT":
        negate, tokens = not negate, tokens[1:]
    if len(tokens) != 1:
        return None
    name = tokens[0]
    if name in FALSE_ON_LINUX:
        value = False
    elif name in TRUE_ON_LINUX:
        value = True
    else:
        return None
    return value != negate


def _chains(commands: Sequence[Command]) -> list[list[int]]:
    """Each complete ``if`` chain as the indices of its if, elseif…, else and endif."""
    stack: list[list[int]] = []
    out = []
    for i, c in enumerate(commands):
        if c.name == "if":
            stack.append([i])
        elif c.name in ("elseif", "else") and stack:
            stack[-1].append(i)
        elif c.name == "endif" and stack:
            chain = stack.pop()
            out.append([*chain, i])
    return out


def dead_indices(commands: Sequence[Command]) -> set[int]:
    """The indices of the commands a Linux build never runs (see the module's docstring)."""
    dead: set[int] = set()
    for chain in _chains(commands):
        heads = chain[:-1]
        decided = True  # every branch so far has a known value
        taken = False  # a branch so far is true for certain
        chain_decided = False
        for b, k in enumerate(heads):
            c = commands[k]
            value = True if c.name == "else" else host_value(c.args)
            body = range(k + 1, chain[b + 1])
            if taken or value is False:
                dead.update(body)
                continue
            if value is True:
                taken = True
                chain_decided = decided
            else:
                decided = False
        if not taken and decided:
            chain_decided = True  # every condition false, no else: nothing runs
        if chain_decided:
            dead.update(chain)
    return dead


def linux_view(commands: Sequence[Command], dead: set[int] | None = None) -> list[Command]:
    """``commands`` without those a Linux build never runs (``dead``: their
    :func:`dead_indices`, when the caller has them already)."""
    dead = dead_indices(commands) if dead is None else dead
    return [c for i, c in enumerate(commands) if i not in dead]
