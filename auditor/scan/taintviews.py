"""Views of a Python file for the taint rules: the function bodies a rule cannot match left out.

Semgrep Community Edition's taint analysis is intraprocedural. Measured with semgrep 1.185 (and
kept true by ``tests/scan/test_scan_taintviews.py``): taint set in module-level code reaches the
functions that read it, but it is not followed from one function to another through ``self``
fields, call arguments or return values, a ``global`` assigned in another function, a class
attribute, a class body (a bare name, or a ``global`` assigned there) or a closure. So a finding of
a taint rule inside a function follows from that function's own lines and the file's *module
code*: the file with every outermost function left out as :mod:`auditor.scan.diffslice` leaves it
out and every class body blanked (every import kept). The *context* (the same with class bodies
kept) is what every view keeps: a finding there needs no function.

A taint rule's prefilter (:mod:`auditor.scan.prefilter`) names words every match needs. Applied to
the module code together with one function's lines, it tells whether the rule can report
anything in that function at all. A finding is reported at its sink, so when the rule names the
group of its sinks' words (``metadata.prefilter-sink-group``), the function itself must have one
(a ``word(`` item: the word called), or use a name that an import spelling one binds (semgrep
resolves ``from logging import info as say``: ``say(x)`` is ``logging.info(x)``), or that an
assignment of such a callable binds (``say = logger.info``). A rule's *view*
of a file keeps the bodies of the functions that pass and leaves out the others, lines and
columns in place; the rule reads its view, every other rule reads the file, and the findings are
the same. This matters because semgrep's taint rules cost most of a scan, and in a large module
only a few functions hold both a rule's source and its sink words.

Nor does taint leave a lambda's body (measured: not by a side effect, a name bound in it, what
it returns when called, nor when the lambda is a sink's argument), and a finding in one is
reported at a sink in it. So for a rule that names its sinks, the body of a lambda outside every
function that calls none of them is left out of the rule's view and of the module code and
context its prefilter reads: ``...`` in its place, lines and columns around it kept (vLLM's
``envs.py`` is a dict of ~300 ``lambda: os.getenv(...)`` that every view otherwise kept).

A statement outside functions and classes that stores a literal in names the file never reads
and binds nowhere else (``X: bool = False``; ~300 of them under ``if TYPE_CHECKING:`` in vLLM's
``envs.py``) is left out of every view too: no rule matches in it, nothing reads what it stores,
and constant propagation has nothing to take from it (a name that is read, say ``KEY = "HF_TOKEN"``
then ``os.environ[KEY]``, is kept).

A rule that can match in none of the functions nor in the context is not given the file at all.
A rule reads the file whole (no view) when it names no sink group and the module code alone
passes its prefilter (every function could then match), when no body would be left out, or when
the file is not sliced at all (:func:`~auditor.scan.pyast.parse_sliceable`). Checking one
prefilter item never joins text across the module code and a function (an identifier or a
``::`` cannot run from one to the other), and a ``word+word`` item may find its words in either.
"""

from __future__ import annotations

import ast
import hashlib
import io
import tokenize
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from auditor.scan import prefilter, pyast
from auditor.scan.prefilter import Prefilter

_DIGEST = hashlib.sha256(Path(__file__).read_bytes() + Path(pyast.__file__).read_bytes()
                         + Path(prefilter.__file__).read_bytes()).hexdigest()[:16]


def digest() -> str:
    """A digest of the code that makes the views (part of the scan cache's key)."""
    return _DIGEST


@dataclass(frozen=True)
class View:
    """One rule's view of a file: its text (None: the rule can match nowhere in the file, so it
    is not given the file) and how many function bodies it left out."""

    text: str | None
    functions: int
    lines: int


def taint_views(text: str, prefilters: Sequence[Prefilter]) -> list[View | None]:
    """For each prefilter (a taint rule's, admitting ``text``): the rule's view of ``text``, or
    None when the rule reads the file whole (see the module docstring)."""
    out: list[View | None] = [None] * len(prefilters)
    if not prefilters:
        return out
    tree = pyast.parse_sliceable(text)
    if tree is None:
        return out
    lines = text.split("\n")
    functions = list(pyast.outer_functions(tree.body))
    lambdas = _outside_lambdas(tree, lines) if "lambda" in text else []
    dead = _dead_stores(tree, lines)
    if not functions and not lambdas and not dead:
        return out
    lines = _blanked(lines, dead)
    own = {id(f): "\n".join(lines[a - 1:b]) for f in functions for a, b in [pyast.span(f)]}
    layout = _Layout.of(tree, lines, functions)
    whole = layout.texts(lines)
    for i, pf in enumerate(prefilters):
        # lambda bodies that call none of the rule's sinks: nothing is reported in them and no
        # taint leaves a lambda, so they are left out of the view and of the module code
        quiet = [lam for lam in lambdas if pf.sink is not None
                 and not pf.admits_at_sink(lam.body, _imported(lam.body, layout.imports))]
        mine = _without_bodies(lines, quiet) if quiet else lines
        context, module = layout.texts(mine) if quiet else whole
        everywhere = pf.admits(module)
        if everywhere and pf.sink is None:
            continue
        # the module code's words alone, code only: then a function needs only a sink
        module_code = everywhere and pf.admits_words([code_words(module)], (module,))
        keep = {id(f) for f in functions
                if _can_hold_finding(pf, own[id(f)], module, layout.imports,
                                     everywhere=everywhere, module_code=module_code)}
        if not keep and not _can_hold_finding(pf, context, "", layout.imports,
                                              everywhere=False, module_code=False):
            out[i] = View(None, len(functions), 0)
            continue
        if len(keep) == len(functions) and not quiet and not dead:
            continue
        left_out = sum(lam.lines for lam in quiet) + sum(b - a + 1 for a, b, _ in dead)
        out[i] = _view("\n".join(mine), tree, keep, left_out)
    return out


def _can_hold_finding(pf: Prefilter, own: str, module: str,
                      imports: Sequence[tuple[frozenset[str], str]], *, everywhere: bool,
                      module_code: bool) -> bool:
    """Whether a function (its lines ``own``) can hold a finding of ``pf``'s rule: the words of
    every group in it or the module code (``everywhere``: the module code has them all), in
    their code (``module_code``: the module code's code has them all), and a sink of its own."""
    if not (everywhere or pf.admits_parts((module, own))):
        return False
    if not pf.admits_at_sink(own, _imported(own, imports)):
        return False
    return module_code or pf.admits_words([code_words(module), code_words(own)], (module, own))


@lru_cache(maxsize=4096)
def code_words(text: str) -> frozenset[str]:
    """The identifiers of ``text``'s code: not those only in a comment or a string literal (an
    f-string's are kept: its fields are code). No pattern of a taint rule's sources matches
    there (a ``pattern-regex`` source taints an expression the match covers, and a literal's
    range holds its quotes), so these are the source words a function can use. Text that does
    not tokenize gives all its identifiers."""
    words: set[str] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.NAME:
                words.add(tok.string)
            elif tok.type == tokenize.STRING and "f" in _prefix(tok.string):
                words |= prefilter.identifiers(tok.string)
    except (tokenize.TokenError, SyntaxError):
        return prefilter.identifiers(text)
    return frozenset(words)


def _prefix(literal: str) -> str:
    """A string literal's prefix letters, lower-cased (``rb``, ``f``)."""
    return literal[:len(literal) - len(literal.lstrip("rRbBuUfF"))].lower()


@dataclass(frozen=True)
class _Layout:
    """Where a file's outermost functions and class bodies are, and its import statements: what
    the *context* and the *module code* are made of, whatever is left out of the lines."""

    functions: tuple[tuple[int, int], ...]  # first and last line of each outermost function
    class_bodies: tuple[tuple[int, int], ...]
    inside: tuple[str, ...]  # the import statements in functions, one line of code each
    imports: tuple[tuple[frozenset[str], str], ...]  # every import statement, the names it binds

    @staticmethod
    def of(tree: ast.Module, lines: Sequence[str],
           functions: Sequence[pyast.Function]) -> _Layout:
        inside = [n for f in functions for n in pyast.import_statements(f, lines)]
        inside_code = [ast.unparse(n) for n in inside]
        bodies = [pyast.class_body(c, lines) for c in pyast.outer_classes(tree.body)]
        imports = [(_binds(n), ast.unparse(n)) for n in pyast.outside_imports(tree)]
        imports += zip(map(_binds, inside), inside_code, strict=True)
        imports += _aliases(tree)
        return _Layout(tuple(pyast.span(f) for f in functions),
                       # a class body on its header's line is kept
                       tuple(b for b in bodies if b is not None),
                       tuple(inside_code), tuple(imports))

    def texts(self, lines: Sequence[str]) -> tuple[str, str]:
        """The file (as ``lines``) without its outermost functions (decorators and headers too),
        every import statement kept (the *context*: the code outside every function, where a
        finding needs no function); and the context without the class bodies (the *module*
        code: what a finding in a function can depend on besides the function)."""
        out = list(lines)
        for first, last in self.functions:
            out[first - 1:last] = [""] * (last - first + 1)
        module = list(out)
        for first, last in self.class_bodies:
            module[first - 1:last] = [""] * (last - first + 1)
        return "\n".join([*out, *self.inside]), "\n".join([*module, *self.inside])


@dataclass(frozen=True)
class _Lambda:
    """A lambda outside every function: where its body is, and the body's text."""

    start: tuple[int, int]  # line (1-based) and column (characters) where the body begins
    end: tuple[int, int]  # line and column just after the body
    body: str

    @property
    def lines(self) -> int:
        return self.end[0] - self.start[0] + 1


def _outside_lambdas(tree: ast.Module, lines: Sequence[str]) -> list[_Lambda]:
    """The outermost lambdas of the module code and the class bodies whose body could be left
    out (one that spans lines, or has room for ``...`` on its line)."""
    out: list[_Lambda] = []
    for s in pyast.statements(tree.body, not_into=lambda s: isinstance(s, pyast.FUNCTIONS)):
        if isinstance(s, pyast.FUNCTIONS):
            continue  # its decorators and defaults are the function's
        for lam in _lambdas_in(s):
            b = lam.body
            if b.end_lineno is None or b.end_col_offset is None:
                continue
            first, last = lines[b.lineno - 1], lines[b.end_lineno - 1]
            start = (b.lineno, len(pyast.before(first, b.col_offset)))
            end = (b.end_lineno, len(pyast.before(last, b.end_col_offset)))
            if start[0] == end[0] and end[1] - start[1] < 3:
                continue  # ``lambda: x``: no room for ``...``, and nothing to gain
            if start[0] == end[0]:
                body = first[start[1]:end[1]]
            else:
                body = "\n".join([first[start[1]:], *lines[start[0]:end[0] - 1], last[:end[1]]])
            out.append(_Lambda(start, end, body))
    return out


# a file needs this many literal stores outside functions and classes before the names it reads
# are looked up (a walk over the whole tree): vLLM's envs.py declares ~300 under TYPE_CHECKING
_DEAD_STORES_MIN = 20


def _dead_stores(tree: ast.Module, lines: Sequence[str]) -> list[tuple[int, int, bool]]:
    """The first and last lines of the statements outside functions and classes that store a
    literal (``X: bool = False``, ``Y = ()``) in names the file never reads and binds nowhere
    else, each on lines of its own, and whether it is the first of a run of them in its block
    (``...`` stands for the run there). No taint rule can match in one, none can read what it
    stores, and semgrep's constant propagation has no use to put it to, so a view leaves it
    out."""
    blocks = list(_blocks(tree.body))
    if sum(_literal_store(s) for block in blocks for s in block) < _DEAD_STORES_MIN:
        return []
    read, bound = _names(tree)
    out: list[tuple[int, int, bool]] = []
    for block in blocks:
        after_dead = False
        for s in block:
            dead = (_literal_store(s) and s.end_lineno is not None
                    and not any(n in read or bound[n] > 1 for n in _stored_names(s))
                    and _own_lines(s, lines))
            if dead:
                out.append((s.lineno, s.end_lineno or s.lineno, not after_dead))
            after_dead = dead
    return out


def _blocks(stmts: list[ast.stmt]) -> Iterator[list[ast.stmt]]:
    """``stmts`` and every block of statements in them, not in functions or classes."""
    yield stmts
    for s in stmts:
        if isinstance(s, (*pyast.FUNCTIONS, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            block = getattr(s, field, None)
            if block and isinstance(block[0], ast.stmt):
                yield from _blocks(block)
        for h in getattr(s, "handlers", None) or getattr(s, "cases", None) or ():
            yield from _blocks(h.body)


def _own_lines(s: ast.stmt, lines: Sequence[str]) -> bool:
    """Whether no other statement shares ``s``'s lines (nothing before it, a comment at most
    after it)."""
    first, last = lines[s.lineno - 1], lines[(s.end_lineno or s.lineno) - 1]
    after = last[len(pyast.before(last, s.end_col_offset or 0)):].strip()
    return not pyast.before(first, s.col_offset).strip() and (
        not after or after.startswith("#"))


def _literal_store(s: ast.stmt) -> bool:
    """``NAME[: annotation] [= literal]`` (annotations without calls), ``NAME = ... = literal``."""
    if isinstance(s, ast.AnnAssign):
        return (isinstance(s.target, ast.Name) and not _calls(s.annotation)
                and (s.value is None or _literal(s.value)))
    return (isinstance(s, ast.Assign) and _literal(s.value)
            and all(isinstance(t, ast.Name) for t in s.targets))


def _literal(e: ast.expr) -> bool:
    if isinstance(e, ast.Constant):
        return True
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
        return _literal(e.operand)
    if isinstance(e, (ast.Tuple, ast.List, ast.Set)):
        return all(_literal(x) for x in e.elts)
    return False


def _calls(e: ast.expr) -> bool:
    return any(isinstance(n, ast.Call) for n in ast.walk(e))


def _stored_names(s: ast.stmt) -> list[str]:
    targets = [s.target] if isinstance(s, ast.AnnAssign) else getattr(s, "targets", [])
    return [t.id for t in targets if isinstance(t, ast.Name)]


def _names(tree: ast.Module) -> tuple[set[str], Counter[str]]:
    """The names the file reads anywhere, and how often each name is bound anywhere (assigned,
    deleted, defined, imported, caught, matched or declared ``global``/``nonlocal``)."""
    read: set[str] = set()
    bound: Counter[str] = Counter()
    for n in pyast.walk(tree):
        if isinstance(n, ast.Name):
            if isinstance(n.ctx, ast.Load):
                read.add(n.id)
            else:
                bound[n.id] += 1
        elif isinstance(n, (*pyast.FUNCTIONS, ast.ClassDef)):
            bound[n.name] += 1
        elif isinstance(n, ast.alias):
            bound[n.asname or n.name.split(".")[0]] += 1
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            bound.update(n.names)
        elif isinstance(n, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and n.name:
            bound[n.name] += 1
        elif isinstance(n, ast.MatchMapping) and n.rest:
            bound[n.rest] += 1
    return read, bound


def _blanked(lines: list[str], spans: Sequence[tuple[int, int, bool]]) -> list[str]:
    """``lines`` with each span's lines blank, ``...`` at its indentation on the first line of
    a span that asks for it; line ends kept."""
    if not spans:
        return lines
    out = list(lines)
    for first, last, placeholder in spans:
        for n in range(first, last + 1):
            line = out[n - 1]
            cr = "\r" if line.endswith("\r") else ""
            indent = line[:len(line) - len(line.lstrip(" \t"))]
            out[n - 1] = (indent + "..." if n == first and placeholder else "") + cr
    return out


def _lambdas_in(node: ast.AST) -> Iterator[ast.Lambda]:
    """The outermost lambdas in ``node``'s expressions (not in the statements it holds)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Lambda):
            yield child
        elif not isinstance(child, ast.stmt):
            yield from _lambdas_in(child)


def _without_bodies(lines: Sequence[str], lambdas: Sequence[_Lambda]) -> list[str]:
    """``lines`` with each lambda's body made ``...``, every other line and column in place:
    ``(...`` on its first line and ``)`` where it ended when it spans lines (the lines between
    blank), else ``...`` and blanks."""
    out = list(lines)
    for lam in lambdas:
        (a, ca), (b, cb) = lam.start, lam.end
        if a == b:
            line = out[a - 1]
            out[a - 1] = line[:ca] + "..." + " " * (cb - ca - 3) + line[cb:]
            continue
        cr = "\r" if out[a - 1].endswith("\r") else ""
        out[a - 1] = out[a - 1][:ca] + "(..." + cr
        for n in range(a + 1, b):
            out[n - 1] = "\r" if out[n - 1].endswith("\r") else ""
        out[b - 1] = " " * (cb - 1) + ")" + out[b - 1][cb:]
    return out


def _binds(n: ast.Import | ast.ImportFrom) -> frozenset[str]:
    """The names an import statement binds (``import a.b`` binds ``a``)."""
    if isinstance(n, ast.Import):
        return frozenset(a.asname or a.name.split(".")[0] for a in n.names)
    return frozenset(a.asname or a.name for a in n.names if a.name != "*")


def _aliases(tree: ast.Module) -> list[tuple[frozenset[str], str]]:
    """Names bound to a callable another name reaches (``say = logger.info``, ``show = print``,
    ``warn = functools.partial(logger.warning, ...)``, ``emit = getattr(log, "debug")``), in
    module code or a function, each with its value's code: a sink rule matches ``say(x)`` as the
    method it names, so a function that calls the alias can hold a sink, as with a name an import
    binds (one bound in another function only keeps a function more)."""
    out: list[tuple[frozenset[str], str]] = []
    for n in pyast.statements(tree.body):
        if not isinstance(n, ast.Assign) or not isinstance(
                n.value, (ast.Attribute, ast.Name, ast.Call)):
            continue
        if isinstance(n.value, ast.Call) and not (
                isinstance(n.value.func, (ast.Name, ast.Attribute))
                and (getattr(n.value.func, "id", None) or getattr(n.value.func, "attr", None))
                in ("partial", "getattr")):
            continue
        names = frozenset(t.id for t in n.targets if isinstance(t, ast.Name))
        if names:
            out.append((names, ast.unparse(n.value)))
    return out


def _imported(own: str, imports: Sequence[tuple[frozenset[str], str]]) -> str:
    """The import statements that bind a name ``own`` uses, one a line: semgrep matches a sink
    pattern's dotted name at a use of the name an import binds to it (``from logging import
    info as i``; ``i(x)`` is ``logging.info(x)``)."""
    used = prefilter.identifiers(own)
    return "\n".join(code for names, code in imports if not names.isdisjoint(used))


def _view(text: str, tree: ast.Module, keep: set[int], lambda_lines: int) -> View:
    # not parsed again: leaving bodies out of a file that parses gives one that parses (every
    # body of each of the 2,687 files of vLLM 0.32.0 left out at once: all parse); a view that
    # did not would be a parse error in semgrep, the file then reported not checked
    s = pyast.elide_functions(text, tree, lambda f: id(f) in keep, verify=False)
    if s is None:  # no function left out: lambda bodies were
        return View(text, 0, lambda_lines)
    return View(s.text, s.functions, s.lines + lambda_lines)
