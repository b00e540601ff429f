"""Python code kept in Python strings, read as Python at the string's own lines.

A string is code when the program runs it: it is given to ``exec``, ``eval`` or ``compile``
(also as ``builtins.exec``), passed to an interpreter after ``-c`` in an argument list
(``[sys.executable, "-c", code]``), or written to a file (``f.write(code)``) in a module or
function that also starts a program, runs a file or imports one (subprocess, ``os.system``,
``os.startfile``, runpy, importlib, ``exec``). A string given by name counts when the name is
bound once, to a string literal, in the same function or (when the function does not bind
it) in the module.

Each such string that parses as Python (after dedenting) becomes a piece of one derived
``python`` target; the target's ``line_map`` sends each line back to the string's own line in
the file (a triple-quoted string line for line, a one-line string with ``\\n`` escapes all to its
line). A string only shown (an exception message, a log line, a docstring) is none of these and
is never read.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass

from auditor.scan import pyast

_EXEC = frozenset({"exec", "eval", "compile"})
# calls that run a program, a file or a module: a file written beside one is meant to run
_RUNNERS = frozenset({"system", "popen", "startfile", "Popen", "run", "call", "check_call",
                      "check_output", "getoutput", "getstatusoutput", "run_path", "run_module",
                      "import_module", "exec_module", "spec_from_file_location", "execv",
                      "execve", "execvp", "execl", "execlp", "spawnv", "spawnl",
                      "create_subprocess_exec", "create_subprocess_shell", "exec", "eval",
                      "__import__"})
_CANDIDATES = _EXEC | {"write", "write_text"}
MAX_STRINGS = 200  # pieces per file; a file with more is read for the first ones only


@dataclass(frozen=True)
class StringCode:
    """The code strings of a file as one Python text; ``line_map[i]`` is line i + 1's line in
    the file."""

    text: str
    line_map: tuple[int, ...]


def reading(text: str) -> StringCode | None:
    """The code strings of a Python file, or None when it has none (or does not parse)."""
    try:
        tree = pyast.parse(text)
    except (SyntaxError, ValueError):
        return None
    if not _may_hold_code(tree):  # one walk: most files give no string to run at all
        return None
    pieces: dict[tuple[int, int], tuple[ast.Constant, str]] = {}
    module_bound, _ = _literal_names(tree)
    for scope in _scopes(tree):
        bound, assigned = _literal_names(scope)
        if scope is not tree:  # a module's literal, unless the function binds the name itself
            bound = {**{k: v for k, v in module_bound.items() if k not in assigned}, **bound}
        runs = _has_runner(scope)
        for node in _own_nodes(scope):
            for found in _code_strings(node, bound, runs):
                pieces.setdefault((found.lineno, found.col_offset), (found, _value(found)))
    lines: list[str] = []
    line_map: list[int] = []
    for _key, (node, value) in sorted(pieces.items())[:MAX_STRINGS]:
        code = _as_module(value)
        if code is None:
            continue
        code_lines = code.split("\n")
        span = (node.end_lineno or node.lineno) - node.lineno
        # a triple-quoted string keeps its lines; escapes put several on one line
        same_lines = value.count("\n") == span
        first = node.lineno
        if same_lines and len(code_lines) != value.count("\n") + 1:
            same_lines = False
        for k, line in enumerate(code_lines):
            lines.append(line)
            line_map.append(first + k if same_lines else first)
    if not lines:
        return None
    return StringCode("\n".join(lines) + "\n", tuple(line_map))


def _value(node: ast.Constant) -> str:
    v = node.value
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return str(v)


def _as_module(value: str) -> str | None:
    """The string as a Python module text (dedented, line count kept), if it parses as one."""
    code = textwrap.dedent(value)
    try:
        ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    if not code.strip():
        return None
    return code


def _scopes(tree: ast.Module) -> list[ast.AST]:
    out: list[ast.AST] = [tree]
    out.extend(n for n in pyast.walk(tree)
               if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return out


def _own_nodes(scope: ast.AST) -> list[ast.AST]:
    """The nodes of a scope, not those of the functions nested in it (their own scope)."""
    out: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        out.append(n)
        stack.extend(ast.iter_child_nodes(n))
    return out


def _literal_names(scope: ast.AST) -> tuple[dict[str, ast.Constant], set[str]]:
    """Names bound exactly once in the scope, to a string or bytes literal; every name the
    scope assigns."""
    seen: dict[str, int] = {}
    literal: dict[str, ast.Constant] = {}
    for n in _own_nodes(scope):
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(n, ast.Assign):
            targets, value = list(n.targets), n.value
        elif isinstance(n, ast.AnnAssign):
            targets, value = [n.target], n.value
        elif isinstance(n, ast.AugAssign):
            targets = [n.target]
        for t in targets:
            if isinstance(t, ast.Name):
                seen[t.id] = seen.get(t.id, 0) + 1
                if isinstance(value, ast.Constant) and isinstance(value.value, (str, bytes)):
                    literal[t.id] = value
    return {k: v for k, v in literal.items() if seen.get(k) == 1}, set(seen)


def _may_hold_code(tree: ast.Module) -> bool:
    """Whether :func:`_code_strings` can find anything in the file: a call named exec, eval,
    compile, write or write_text, or a "-c" constant in a list or tuple (what each of its cases
    needs before it looks further)."""
    for n in pyast.walk(tree):
        if isinstance(n, ast.Call) and n.args and _callee(n.func) in _CANDIDATES:
            return True
        if isinstance(n, (ast.List, ast.Tuple)) and any(
                isinstance(e, ast.Constant) and e.value == "-c" for e in n.elts):
            return True
    return False


def _callee(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _has_runner(scope: ast.AST) -> bool:
    # a module's nodes are listed already (pyast.walk); a function's are looked at until one runs
    nodes = pyast.walk(scope) if isinstance(scope, ast.Module) else ast.walk(scope)
    return any(isinstance(n, ast.Call) and _callee(n.func) in _RUNNERS for n in nodes)


def _literal(node: ast.expr, bound: dict[str, ast.Constant]) -> ast.Constant | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
        return node
    if isinstance(node, ast.Name):
        return bound.get(node.id)
    return None


def _is_python(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return "python" in node.value.rsplit("/", 1)[-1].lower()
    return isinstance(node, ast.Attribute) and node.attr == "executable"


def _code_strings(node: ast.AST, bound: dict[str, ast.Constant],
                  runs: bool) -> list[ast.Constant]:
    out: list[ast.Constant] = []
    if isinstance(node, ast.Call) and node.args:
        name = _callee(node.func)
        if name in _EXEC and (isinstance(node.func, ast.Name)
                              or (isinstance(node.func, ast.Attribute)
                                  and isinstance(node.func.value, ast.Name)
                                  and node.func.value.id in ("builtins", "__builtins__"))):
            found = _literal(node.args[0], bound)
            if found is not None:
                out.append(found)
        elif name in ("write", "write_text") and runs:
            found = _literal(node.args[0], bound)
            if found is not None and _runs_something(_value(found)):
                out.append(found)
    elif isinstance(node, (ast.List, ast.Tuple)):
        elts = node.elts
        for i in range(len(elts) - 2):
            flag = elts[i + 1]
            if (_is_python(elts[i]) and isinstance(flag, ast.Constant) and flag.value == "-c"):
                found = _literal(elts[i + 2], bound)
                if found is not None:
                    out.append(found)
    return out


def _runs_something(value: str) -> bool:
    """Text written to a file is code only when it does something: it imports or calls."""
    code = _as_module(value)
    if code is None:
        return False
    tree = ast.parse(code)
    return any(isinstance(n, (ast.Import, ast.ImportFrom, ast.Call)) for n in ast.walk(tree))
