"""Logical lines (``\\`` continuations) as requirements files and shell/Dockerfiles see them."""

from __future__ import annotations

from auditor.deps.extract import requirements, shell
from auditor.deps.extract.lines import logical_lines

TEXT = "a \\\n  # note\n b\n\nc \\\n"


def test_logical_lines_joins_continuations_and_numbers_them() -> None:
    assert logical_lines("x \\\ny \\\nz\nw\n", lambda raw: raw) == [(1, 3, "x  y  z"), (4, 4, "w")]
    assert logical_lines("", lambda raw: raw) == []
    assert logical_lines("tail \\", lambda raw: raw) == [(1, 1, "tail")]


def test_a_comment_line_ends_a_requirements_continuation() -> None:
    assert requirements._logical_lines(TEXT) == [(1, 2, "a"), (3, 3, "b"), (5, 5, "c")]
    # a backslash inside a comment is part of the comment: no continuation
    assert requirements._logical_lines("x==1 # pin \\\ny==2\n") == [(1, 1, "x==1"),
                                                                    (2, 2, "y==2")]


def test_a_comment_line_inside_a_shell_continuation_is_skipped() -> None:
    assert shell._logical_lines(TEXT) == [(1, 3, "a   b"), (5, 5, "c")]
    assert shell._logical_lines("RUN pip install a \\  \n  b\n") == [(1, 2, "RUN pip install a    b")]
