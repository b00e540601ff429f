"""Python source of newer Pythons read by this interpreter (auditor.pysource): the f-strings of
PEP 701 read as opaque expressions in place, everything else parsed as written, and any other
syntax error raised as the parser's own."""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from pathlib import Path

import pytest

import auditor
from auditor import pysource

NEW_FSTRINGS = sys.version_info < (3, 12)  # this interpreter refuses PEP 701 f-strings

# (text, the first line of each opaque run) — each refused by Python 3.11, accepted by 3.12
PEP701 = [
    # a backslash in a replacement field (the real fork's setup.py line, shape kept)
    ("import os\nCUDA_HOME = os.environ['CUDA_HOME']\n"
     "args = [f'-DCMAKE_CUDA_COMPILER={CUDA_HOME.replace(\"\\\\\", \"/\")}/bin/nvcc.exe']\n"
     "after = 1\n", (3,)),
    # the same quote inside a field, in a call, beside other arguments
    ('x = foo(f"{d["k"]}", y)\nafter = 2\n', (1,)),
    # implicit concatenation across a backslash continuation: one run
    ('y = "pre" f"{a["b"]}" \\\n  "post"\nafter = 3\n', (1,)),
    # a comment inside a multi-line field
    ('y = f"{x # why\n}"\nafter = 4\n', (1,)),
    # a raw f-string: the backslash before the brace escapes nothing
    ("s = rf'\\{a['k']}'\nafter = 5\n", (1,)),
    # a named character escape, then a field with nested quotes
    ('s = f"\\N{EM DASH}{a["b"]}"\nafter = 6\n', (1,)),
    # a nested field in the format spec
    ('u = f"{x:{"w"}}" if c else 2\nafter = 7\n', (1,)),
    # two runs on separate lines, a triple-quoted one spanning lines
    ("a = f'{m['x']}'\nb = f'''\n{m['''y''']}\n'''\nafter = 8\n", (1, 2)),
]


@pytest.mark.parametrize("text,opaque", PEP701, ids=[str(i) for i in range(len(PEP701))])
def test_newer_fstrings_are_read_in_place_as_opaque(text, opaque):
    got = pysource.parse(text)
    after = next(n for n in ast.walk(got.tree) if isinstance(n, ast.Name) and n.id == "after")
    # the statement after the f-string keeps its line, whatever this Python does
    assert after.lineno == text.split("\n").index(next(
        ln for ln in text.split("\n") if ln.startswith("after"))) + 1
    if not NEW_FSTRINGS:
        assert got.opaque == ()
        return
    assert got.opaque == opaque
    # an opaque run is no constant: a reader of literal values counts it as computed
    constants = [n.value for n in ast.walk(got.tree) if isinstance(n, ast.Constant)]
    assert all(not (isinstance(v, str) and v.strip() == "") for v in constants)
    names = [n for n in ast.walk(got.tree) if isinstance(n, ast.Name) and n.id in ("_f", "_")]
    assert names, ast.dump(got.tree)
    # lines and columns in place: every line of the masked text is as long as the original's
    masked = pysource._mask(text, [r for r in pysource._string_runs(text) if r.fstring
                                   and not pysource._compiles(text[r.start:r.end])])
    assert [len(ln) for ln in masked.split("\n")] == [len(ln) for ln in text.split("\n")]


@pytest.mark.parametrize("text", [
    "type Flags = list[str]\n",            # PEP 695: no f-string to read around
    "def f[T](x: T) -> T:\n    return x\n",
    'print "hello"\n',                      # Python 2
    'bad = (\nf"{a["b"]}"\n',               # an f-string, and an unclosed bracket as well
    "x = f'unterminated\n",
])
def test_other_syntax_errors_raise_the_parsers_own(text):
    if sys.version_info >= (3, 12) and text.startswith(("type ", "def f[")):
        pytest.skip("this interpreter reads PEP 695")
    with pytest.raises(SyntaxError):
        ast.parse(text)
    with pytest.raises(SyntaxError) as got:
        pysource.parse(text)
    with pytest.raises(SyntaxError) as plain:
        ast.parse(text)
    assert (got.value.msg, got.value.lineno) == (plain.value.msg, plain.value.lineno)


def test_text_that_parses_is_the_plain_tree():
    text = 'q = f"{x!r:>10}" + f"{{}}" + rb"\\x00" + "a" "b"\n'
    assert ast.dump(pysource.parse(text).tree) == ast.dump(ast.parse(text))
    assert pysource.parse(text).opaque == ()


def _files() -> list[Path]:
    stdlib = Path(tokenize.__file__).parent
    return (sorted(stdlib.glob("*.py"))[:120]
            + sorted(Path(auditor.__file__).parent.rglob("*.py")))


def test_the_lexer_finds_the_string_tokens_tokenize_finds():
    """On real code this interpreter reads (the standard library, auditor itself), every run
    the lexer finds starts at a string token and ends at one, and every string token is in a
    run: the lexer reads literals as Python's tokenizer does."""
    checked = 0
    for path in _files():
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
        except (tokenize.TokenError, SyntaxError):
            continue
        offsets = [0]
        for line in text.splitlines(keepends=True):
            offsets.append(offsets[-1] + len(line))
        strings = [(offsets[t.start[0] - 1] + t.start[1], offsets[t.end[0] - 1] + t.end[1])
                   for t in tokens if t.type == tokenize.STRING]
        runs = pysource._string_runs(text)
        starts, ends = {a for a, _ in strings}, {b for _, b in strings}
        assert all(r.start in starts and r.end in ends for r in runs), path
        assert all(any(r.start <= a and b <= r.end for r in runs) for a, b in strings), path
        checked += 1
    assert checked > 100
