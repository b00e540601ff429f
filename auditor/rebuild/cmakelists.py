"""Reading an engine's CMake code: its extension targets, and what a change to it affects.

:func:`parse` splits CMake text into command invocations (name, arguments, line), following the
CMake language's rules for quoted, bracket and unquoted arguments and for comments. Nothing is
evaluated.

:func:`extension_targets` lists the ``define_gpu_extension_target(<name> ...)`` calls (vLLM's way
of declaring a Python extension module; ``define_extension_target`` in later releases, 0.30.0).
:func:`change_effect` compares two versions of one CMake file and names the targets a change can
reach, following variables: a target depends on the variables its definition reads, a variable on
what its writer reads and on the conditions around the writer. A change whose effect cannot be
traced (a control command, a function body, a change that reaches no target) affects every target
(fail closed); only a ``message()`` is inert. Branches a Linux build never takes (``if(WIN32)``
…, :mod:`auditor.rebuild.hostbranches`) are left out first, while :func:`host_writes` finds
nothing in the build's CMake code or configure arguments that could set what they test.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from auditor.rebuild.hostbranches import HOST_INPUTS, dead_indices, linux_view

#: vLLM's functions that declare a Python extension module (the first name up to 0.1x, the second
#: after the rename; cmake/utils.cmake defines one of them)
DEFINE_TARGETS = frozenset({"define_gpu_extension_target", "define_extension_target"})
_VAR_REF = re.compile(r"\$\{([A-Za-z0-9_.+-]+)\}")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_BRACKET_OPEN = re.compile(r"\[(=*)\[")
# the if() keywords: never variable names
_IF_WORDS = frozenset({
    "NOT", "AND", "OR", "COMMAND", "POLICY", "TARGET", "TEST", "DEFINED", "EXISTS", "IS_NEWER_THAN",
    "IS_DIRECTORY", "IS_SYMLINK", "IS_ABSOLUTE", "MATCHES", "LESS", "GREATER", "EQUAL",
    "LESS_EQUAL", "GREATER_EQUAL", "STRLESS", "STRGREATER", "STREQUAL", "STRLESS_EQUAL",
    "STRGREATER_EQUAL", "VERSION_LESS", "VERSION_GREATER", "VERSION_EQUAL", "VERSION_LESS_EQUAL",
    "VERSION_GREATER_EQUAL", "IN_LIST", "ON", "OFF", "TRUE", "FALSE", "YES", "NO", "Y", "N",
    "IGNORE", "NOTFOUND", "PATH_EQUAL", "IN", "LISTS", "ITEMS", "RANGE", "ZIP_LISTS"})
_OPEN_BLOCK = frozenset({"if", "foreach", "while"})
_CLOSE_BLOCK = frozenset({"endif", "endforeach", "endwhile"})
_INERT = frozenset({"message"})
#: commands that read variables and set none (a foreach sets its loop variable)
_READ_ONLY = frozenset({"if", "elseif", "else", "endif", "while", "endwhile", "endforeach",
                        "break", "continue", "return", "message"})
_TARGET_COMMANDS = frozenset({
    "target_compile_definitions", "target_compile_options", "target_include_directories",
    "target_link_libraries", "target_link_options", "target_sources", "set_target_properties",
    "target_compile_features", "target_precompile_headers"})
_LIST_WRITES = frozenset({"APPEND", "PREPEND", "INSERT", "REMOVE_ITEM", "REMOVE_AT", "FILTER",
                          "TRANSFORM", "SORT", "REVERSE", "REMOVE_DUPLICATES", "POP_BACK",
                          "POP_FRONT"})


class CMakeSyntaxError(ValueError):
    """The text is not CMake (an unclosed parenthesis, quote or bracket)."""


@dataclass(frozen=True)
class Command:
    name: str  # lower case, as CMake compares command names
    args: tuple[str, ...]
    line: int

    def show(self, width: int = 60) -> str:
        text = f"{self.name}({' '.join(self.args)})"
        return text if len(text) <= width else text[:width - 2] + "…)"


def parse(text: str) -> list[Command]:
    """The command invocations of CMake ``text``, in order."""
    out: list[Command] = []
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c in " \t\r":
            i += 1
        elif c == "#":
            i, line = _skip_comment(text, i, line)
        elif c.isalpha() or c == "_":
            m = re.compile(r"[A-Za-z_][A-Za-z0-9_]*").match(text, i)
            assert m is not None
            name, start_line = m.group().lower(), line
            i = m.end()
            while i < n and text[i] in " \t":
                i += 1
            if i >= n or text[i] != "(":
                raise CMakeSyntaxError(f"line {start_line}: expected '(' after {m.group()}")
            args, i, line = _arguments(text, i + 1, line)
            out.append(Command(name, tuple(args), start_line))
        else:
            raise CMakeSyntaxError(f"line {line}: unexpected {c!r}")
    return out


def _skip_comment(text: str, i: int, line: int) -> tuple[int, int]:
    m = _BRACKET_OPEN.match(text, i + 1)
    if m:
        end = text.find(f"]{m.group(1)}]", m.end())
        if end < 0:
            raise CMakeSyntaxError(f"line {line}: unclosed bracket comment")
        stop = end + len(m.group(1)) + 2
        return stop, line + text.count("\n", i, stop)
    end = text.find("\n", i)
    return (len(text) if end < 0 else end), line


def _quoted(text: str, i: int, line: int) -> tuple[str, int]:
    """The quoted argument opening at ``text[i]``; (value, index after the closing quote)."""
    j, n, buf = i + 1, len(text), []
    while j < n and text[j] != '"':
        step = 2 if text[j] == "\\" and j + 1 < n else 1
        buf.append(text[j:j + step])
        j += step
    if j >= n:
        raise CMakeSyntaxError(f"line {line}: unclosed quoted argument")
    return "".join(buf), j + 1


def _bracket(text: str, m: re.Match[str], line: int) -> tuple[str, int]:
    end = text.find(f"]{m.group(1)}]", m.end())
    if end < 0:
        raise CMakeSyntaxError(f"line {line}: unclosed bracket argument")
    return text[m.end():end], end + len(m.group(1)) + 2


_UNQUOTED = re.compile(r'(?:\\.|[^\s()#"\\])+')


def _arguments(text: str, i: int, line: int) -> tuple[list[str], int, int]:
    """Arguments up to the matching ')' (nested parentheses are part of unquoted arguments)."""
    args: list[str] = []
    depth, n, start = 0, len(text), line
    while i < n:
        c = text[i]
        if c in " \t\r\n":
            line += c == "\n"
            i += 1
        elif c == "#":
            i, line = _skip_comment(text, i, line)
        elif c == ")" and depth == 0:
            return args, i + 1, line
        elif c in "()":
            depth += 1 if c == "(" else -1
            args.append(c)
            i += 1
        else:
            m = _BRACKET_OPEN.match(text, i)
            if c == '"' or m is not None:
                value, i = _quoted(text, i, line) if c == '"' else _bracket(text, m, line)  # type: ignore[arg-type]
                line += value.count("\n")
            else:
                um = _UNQUOTED.match(text, i)
                if um is None:
                    raise CMakeSyntaxError(f"line {line}: unexpected {c!r}")
                value, i = um.group(), um.end()
            args.append(value)
    raise CMakeSyntaxError(f"line {start}: unclosed '(' (the command never ends)")


def extension_targets(commands: Iterable[Command]) -> dict[str, int]:
    """``define_[gpu_]extension_target(<name> ...)`` calls with a literal name -> their line."""
    out: dict[str, int] = {}
    for c in commands:
        if c.name in DEFINE_TARGETS and c.args and "${" not in c.args[0]:
            out.setdefault(c.args[0], c.line)
    return out


def refs(args: Iterable[str]) -> set[str]:
    return {m.group(1) for a in args for m in _VAR_REF.finditer(a)}


def _condition_vars(c: Command) -> set[str]:
    names = refs(c.args)
    names |= {a for a in c.args if _IDENT.match(a) and a not in _IF_WORDS}
    return names


def writes(c: Command) -> set[str]:
    """The variables a command sets (empty when it sets none that this reader knows of)."""
    a = c.args
    if c.name in ("set", "unset", "option") and a:
        return {a[0]}
    if c.name == "list" and len(a) >= 2:
        return {a[1]} if a[0].upper() in _LIST_WRITES else {a[-1]}
    if c.name == "string" and len(a) >= 3:
        op = a[0].upper()
        if op == "REGEX" and len(a) >= 5:
            return {a[4]}
        if op == "REPLACE" and len(a) >= 4:
            return {a[3]}
        return {a[-1]} if op in ("APPEND", "PREPEND", "CONCAT", "JOIN") else {a[1]}
    if c.name == "file" and len(a) >= 2 and a[0].upper() in ("GLOB", "GLOB_RECURSE"):
        return {a[1]}
    if c.name == "cuda_archs_loose_intersection" and a:
        return {a[0]}
    if c.name in _TARGET_COMMANDS or c.name in _INERT or c.name in DEFINE_TARGETS:
        return set()
    # another command (vLLM's set_gencode_flags_for_srcs(SRCS "${X}" ...)): it modifies what the
    # first variable it reads holds
    first = next((m.group(1) for arg in a for m in _VAR_REF.finditer(arg)), None)
    return {first} if first else set()


@dataclass
class _Graph:
    #: variable -> the variables (and condition variables) its writers read
    feeds: dict[str, set[str]] = field(default_factory=dict)
    #: target -> the variables its definition reads
    target_reads: dict[str, set[str]] = field(default_factory=dict)
    #: command index -> condition variables around it
    conditions: list[set[str]] = field(default_factory=list)
    in_function: list[bool] = field(default_factory=list)

    def add(self, commands: list[Command]) -> None:
        stack: list[set[str]] = []
        depth_fn = 0
        for c in commands:
            if c.name in ("function", "macro"):
                depth_fn += 1
            self.in_function.append(depth_fn > 0)
            if c.name in ("endfunction", "endmacro"):
                depth_fn = max(0, depth_fn - 1)
            if c.name in _OPEN_BLOCK:
                stack.append(_condition_vars(c))
            elif c.name in ("elseif", "else") and stack:
                stack[-1] = stack[-1] | _condition_vars(c)
            elif c.name in _CLOSE_BLOCK and stack:
                stack.pop()
            around = set().union(*stack) if stack else set()
            self.conditions.append(around)
            if depth_fn:
                continue
            if c.name in DEFINE_TARGETS and c.args:
                self.target_reads.setdefault(c.args[0], set()).update(refs(c.args[1:]) | around)
                continue
            w = writes(c)
            read = (refs(c.args) | around) - w if c.name not in _OPEN_BLOCK else set()
            for v in w:
                self.feeds.setdefault(v, set()).update(read)

    def targets_reading(self, variables: set[str]) -> set[str]:
        out = set()
        for target, direct in self.target_reads.items():
            seen: set[str] = set()
            todo = list(direct)
            while todo:
                v = todo.pop()
                if v in seen:
                    continue
                seen.add(v)
                todo += self.feeds.get(v, ())
            if seen & variables:
                out.add(target)
        return out


@dataclass(frozen=True)
class Reason:
    text: str  # "file:line: command changed: targets"
    targets: frozenset[str] = frozenset()
    everything: bool = False


@dataclass(frozen=True)
class Effect:
    """What a change to one CMake file reaches."""

    targets: frozenset[str]  # the extension targets it affects
    everything: bool  # the effect could not be narrowed: every target
    reasons: tuple[Reason, ...]  # one per changed command
    arch_changes: tuple[str, ...] = ()  # "CUDA_SUPPORTED_ARCHS: added 6.0; removed 7.0"

    def why(self, target: str) -> tuple[str, ...]:
        """The reasons that reach ``target``."""
        return tuple(r.text for r in self.reasons if r.everything or target in r.targets)


def _arch_values(commands: list[Command], var: str) -> set[str] | None:
    vals: set[str] | None = None
    for c in commands:
        if c.name == "set" and c.args and c.args[0] == var and len(c.args) >= 2:
            found = {p for a in c.args[1:] for p in a.split(";") if re.fullmatch(r"\d+\.\d+a?", p)}
            if found:
                vals = (vals or set()) | found
    return vals


def change_effect(path: str, old: str, new: str, *, linux_only: bool = False) -> Effect:
    """Which extension targets a change from ``old`` to ``new`` (texts of ``path``) can affect.

    With ``linux_only`` (the caller found nothing that can set the host variables), the branches
    a Linux build never takes are left out of both versions first (hostbranches.linux_view), and
    a change that only they hold is noted as having no build effect. An unparsable version
    affects everything (nothing about it is known).
    """
    try:
        before, after = parse(old), parse(new)
    except CMakeSyntaxError as exc:
        return Effect(frozenset(), True,
                      (Reason(f"{path}: cannot be read as CMake ({exc})", everything=True),))
    notes: list[Reason] = []
    if linux_only:
        dead_old, dead_new = dead_indices(before), dead_indices(after)
        if dead_old or dead_new:
            hidden = [c for tag, i1, i2, j1, j2 in _opcodes(before, after) if tag != "equal"
                      for k, c in [*((k, before[k]) for k in range(i1, i2) if k in dead_old),
                                   *((k, after[k]) for k in range(j1, j2) if k in dead_new)]]
            if hidden:
                first = min(hidden, key=lambda c: c.line)
                notes.append(Reason(
                    f"{path}: {len(hidden)} changed command(s) in branches a Linux build never "
                    f"takes (if(WIN32), if(MSVC), if(APPLE), … from line {first.line}): no build "
                    "effect"))
            before, after = linux_view(before, dead_old), linux_view(after, dead_new)
    g_old, g_new = _Graph(), _Graph()
    g_old.add(before)
    g_new.add(after)
    reasons: list[Reason] = notes
    arch_vars: set[str] = set()
    for tag, i1, i2, j1, j2 in _opcodes(before, after):
        if tag == "equal":
            continue
        sides = [(before[k], g_old, k, " (before)") for k in range(i1, i2)]
        sides += [(after[k], g_new, k, "") for k in range(j1, j2)]
        for c, graph, index, label in sides:
            reasons.append(_reason(f"{path}:{c.line}{label}", c, graph.in_function[index],
                                   g_old, g_new))
            if c.name not in _INERT:
                arch_vars |= {v for v in writes(c) if v.endswith(("ARCHS", "ARCHES"))}
    hit = frozenset().union(*(r.targets for r in reasons)) if reasons else frozenset()
    return Effect(frozenset(hit), any(r.everything for r in reasons),
                  tuple(dict.fromkeys(reasons)), _arch_changes(before, after, arch_vars))


def _opcodes(before: list[Command], after: list[Command]) -> Sequence[tuple[str, int, int, int, int]]:
    """difflib's edit script from ``before`` to ``after``, commands compared by name and args."""
    return difflib.SequenceMatcher(a=[(c.name, c.args) for c in before],
                                   b=[(c.name, c.args) for c in after],
                                   autojunk=False).get_opcodes()


def _reason(where: str, c: Command, in_function: bool, g_old: _Graph, g_new: _Graph) -> Reason:
    """What one changed command reaches."""
    known = set(g_old.target_reads) | set(g_new.target_reads)
    if c.name in _INERT:
        return Reason(f"{where}: {c.show()} changed: no build effect")
    if in_function or c.name in ("function", "endfunction", "macro", "endmacro"):
        return Reason(f"{where}: {c.show()} changed inside a function definition: every target",
                      everything=True)
    if c.name in DEFINE_TARGETS and c.args:
        return Reason(f"{where}: the definition of {c.args[0]} changed", frozenset(c.args[:1]))
    if c.name in _TARGET_COMMANDS and c.args and c.args[0] in known:
        return Reason(f"{where}: {c.show()} changed: {c.args[0]}", frozenset(c.args[:1]))
    w = writes(c)
    if c.name in _OPEN_BLOCK | _CLOSE_BLOCK | {"elseif", "else"} or not w:
        return Reason(f"{where}: {c.show()} changed; its effect is not traced: every target",
                      everything=True)
    reach = g_old.targets_reading(w) | g_new.targets_reading(w)
    if not reach:
        return Reason(f"{where}: {c.show()} changed; {', '.join(sorted(w))} reaches no extension "
                      "target that this reader can trace: every target", everything=True)
    return Reason(f"{where}: {c.show()} changed: {', '.join(sorted(reach))}", frozenset(reach))


def _arch_changes(before: list[Command], after: list[Command],
                  arch_vars: set[str]) -> tuple[str, ...]:
    out = []
    for var in sorted(arch_vars):
        a, b = _arch_values(before, var), _arch_values(after, var)
        if a is None or b is None or a == b:
            continue
        parts = ([f"added {', '.join(sorted(b - a, key=_arch_key))}"] if b - a else []) + \
            ([f"removed {', '.join(sorted(a - b, key=_arch_key))}"] if a - b else [])
        out.append(f"{var}: {'; '.join(parts)}")
    return tuple(out)


def _arch_key(a: str) -> tuple[int, int, str]:
    major, _, rest = a.partition(".")
    minor = re.match(r"\d+", rest)
    return int(major), int(minor.group()) if minor else 0, rest


def targets_of_files(texts: Mapping[str, str]) -> dict[str, str]:
    """Extension target -> ``file:line`` of its definition, over several CMake files."""
    out: dict[str, str] = {}
    for path in sorted(texts):
        try:
            commands = parse(texts[path])
        except CMakeSyntaxError as exc:
            raise CMakeSyntaxError(f"{path}: {exc}") from None
        for name, line in extension_targets(commands).items():
            out.setdefault(name, f"{path}:{line}")
    return out


#: commands that run CMake code this reader does not see (a string evaluated, a cache loaded, a
#: callback on a variable)
_RUNS_OTHER_CODE = frozenset({"cmake_language", "variable_watch", "load_cache"})


_TREE_DIRS = ("${CMAKE_CURRENT_LIST_DIR}", "${CMAKE_CURRENT_SOURCE_DIR}", "${CMAKE_SOURCE_DIR}",
              "${PROJECT_SOURCE_DIR}")


def _unread_include(arg: str) -> bool:
    """An include() of something but a CMake module by name or a ``.cmake`` file (those are read
    where they are the bundle's): a ``Platform/`` file, a file of another name, a computed one."""
    for here in _TREE_DIRS:  # a file of the tree (read where it is the bundle's)
        if arg.startswith(here):
            arg = arg[len(here):].lstrip("/") or "."
            break
    if arg.startswith(("Platform", "/")) or "$" in arg or ".." in arg.split("/"):
        return True
    return ("/" in arg or "." in arg) and not arg.endswith(".cmake")


def host_writes(files: Iterable[tuple[str, Sequence[Command]]],
                configure_args: Iterable[str] = ()) -> list[str]:
    """Where the build's CMake code or its configure arguments could set a host variable
    (``file:line: set(WIN32 …)``, ``configure argument -DWIN32=ON``): while any is found, no
    branch is taken as dead."""
    out = []
    for path, commands in files:
        for c in commands:
            if c.name in _READ_ONLY:
                continue
            # what it writes, as far as this reader knows, and any host variable named bare as
            # an argument (math(EXPR WIN32 …), find_program(MSVC …): an output variable)
            hit = (writes(c) | set(c.args)) & HOST_INPUTS
            if c.name in _RUNS_OTHER_CODE or (c.name == "include" and c.args
                                              and _unread_include(c.args[0])):
                hit = {c.name}
            if hit:
                out.append(f"{path}:{c.line}: {c.show()}")
    for arg in configure_args:
        name = arg[2:].split("=", 1)[0].split(":", 1)[0] if arg.startswith("-D") else ""
        if name in HOST_INPUTS or arg.startswith(("-C", "--toolchain", "-T", "-G", "-A")):
            out.append(f"configure argument {arg}")
    return out
