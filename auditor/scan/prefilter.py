"""Which files a costly rule can match at all: a cheap, sound pre-pass before semgrep.

A taint rule reports a finding only where one of its sources and one of its sinks both match in
the file, and each source or sink pattern names an identifier (``pickle``, ``recv``, ``exec``)
that must then be written somewhere in the file: semgrep resolves ``import x as y`` and
``from x import f`` aliases, but the import itself still spells the name. Semgrep's own literal
prefilter does not help these rules (a pattern like ``$LOG.$LVL(...)`` has no literal, and it
looks for substrings: ``read`` is in ``thread``), so a rule may list in ``metadata.prefilter``
what a file must contain, and :meth:`Prefilter.admits` keeps the files that do. Files it leaves
out could not have matched; they are still scanned by every other rule (in the scan plan,
:mod:`auditor.scan.plan`, the rule's reading of them is "skipped: prefilter words absent").

``metadata.prefilter`` is a list of groups; a file passes when it has, for every group, at least
one of the group's items:

- ``word``: the identifier as a whole word (in code, strings or comments: a superset);
- ``a+b``: each of the words (``torch+load`` for ``torch.load(...)`` via ``from torch import load``);
- ``::`` (any other punctuation): those characters in order, with only blanks, line
  continuations or comments between them (``x[: :-1]``);
- ``word(``: the word, in a file; in a taint rule's sink group (``metadata.prefilter-sink-group``,
  :mod:`auditor.scan.taintviews`), checked against one function, the word *called*: followed
  by ``(`` with only blanks, continuations, comments or ``)`` between (``(logger.info)(x)``),
  or the name of an import that the function uses (``from logging import info as i``).

The text checked is the file semgrep is given. Only identifiers spelled in the rule are listed:
never a literal string's content, which semgrep's constant folding can assemble at run time.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache

_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PUNCT = re.compile(r"^[^\sA-Za-z0-9_]+$")
# blanks, line continuations or whole comments (a comment runs to the end of its line, so a line
# of many '#' has one reading only: no exponential backtracking)
_BETWEEN = r"(?:[ \t\r\n\f\v\\]|#[^\n]*(?:\n|\Z))*"


def valid_item(item: str) -> bool:
    """An item of a prefilter group: words joined by ``+``, punctuation, or a word and ``(``."""
    return _is_call(item) or bool(_PUNCT.match(item)) or all(_WORD.match(w) for w in item.split("+"))


def _is_call(item: str) -> bool:
    return item.endswith("(") and bool(_WORD.match(item[:-1]))


def _plain(item: str) -> str:
    """The item as a file reads it: ``word(`` is the word."""
    return item[:-1] if _is_call(item) else item


@lru_cache(maxsize=256)
def _word_re(word: str) -> re.Pattern[str]:
    return re.compile(re.escape(word) + r"(?![A-Za-z0-9_])")


@lru_cache(maxsize=256)
def _call_re(word: str) -> re.Pattern[str]:
    return re.compile(r"(?<![A-Za-z0-9_])" + re.escape(word) + r"(?:" + _BETWEEN + r"\))*"
                      + _BETWEEN + r"\(")


@lru_cache(maxsize=256)
def _called_re(word: str) -> re.Pattern[str]:
    """:func:`_call_re` without its look-behind (which keeps ``re`` from scanning for the
    word's letters first: ~3x slower); :func:`called` checks the character before."""
    return re.compile(re.escape(word) + r"(?:" + _BETWEEN + r"\))*" + _BETWEEN + r"\(")


_IDENTIFIER_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def called(text: str, word: str) -> bool:
    """``_call_re(word).search(text) is not None``: the word, not inside a longer ASCII
    identifier, followed by ``(`` (blanks, continuations, comments or ``)`` between)."""
    if word not in text:
        return False
    pattern = _called_re(word)
    pos = 0
    while (m := pattern.search(text, pos)) is not None:
        i = m.start()
        if i == 0 or text[i - 1] not in _IDENTIFIER_CHARS:
            return True
        pos = i + 1  # a match from here on may start inside this one (in a comment)
    return False


@lru_cache(maxsize=64)
def _punct_re(chars: str) -> re.Pattern[str]:
    return re.compile(_BETWEEN.join(re.escape(c) for c in chars))


def has_word(text: str, word: str) -> bool:
    """``word`` as an identifier of its own (not inside a longer one)."""
    if word not in text:  # a fast substring test first: most files fail here
        return False
    for m in _word_re(word).finditer(text):
        i = m.start()
        if i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_"):
            return True
    return False


def _has_item(text: str, item: str) -> bool:
    item = _plain(item)
    if _PUNCT.match(item):
        return item[0] in text and _punct_re(item).search(text) is not None
    return all(has_word(text, w) for w in item.split("+"))


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _identifiers(text: str) -> frozenset[str]:
    """Every run of identifier characters in ``text`` that starts with a letter or ``_``: a
    superset of the words :func:`has_word` finds (it also takes ``abc`` from ``1abc``)."""
    return frozenset(_IDENTIFIER.findall(text))


# a file's context is asked about once per function (auditor.scan.taintviews): remembered
identifiers = lru_cache(maxsize=4096)(_identifiers)


@dataclass(frozen=True)
class Prefilter:
    """Groups of items; a text passes when every group has an item in it."""

    groups: tuple[tuple[str, ...], ...]
    # a taint rule's group of the words its sinks spell (``metadata.prefilter-sink-group``), if
    # it names one: a finding is reported at a sink, so that group must have an item in the
    # lines of the function holding it (or in an import: :mod:`auditor.scan.taintviews`)
    sink: int | None = None

    def admits(self, text: str) -> bool:
        return _admits(self.groups, text)

    def admits_parts(self, parts: Sequence[str]) -> bool:
        """Whether the text made of ``parts`` passes, no item being looked for across two parts
        (a ``word+word`` item may find each word in any part). Words are looked up in the set
        of each part's identifiers, a superset of :meth:`admits`'s whole-word test."""
        return self.admits_words([identifiers(text) for text in parts], parts)

    def admits_words(self, words: Sequence[frozenset[str]], parts: Sequence[str]) -> bool:
        """:meth:`admits_parts` with each part's words given (the identifiers of its code
        alone, say); punctuation items are looked for in ``parts``."""
        for singles, combos, puncts in self._split:
            if any(not singles.isdisjoint(w) for w in words):
                continue
            if any(all(any(x in w for w in words) for x in combo) for combo in combos):
                continue
            if any(_has_item(text, item) for item in puncts for text in parts):
                continue
            return False
        return True

    def admits_at_sink(self, own: str, imported: str) -> bool:
        """Whether a function whose lines are ``own`` can hold a sink: an item of the sink group
        in ``own`` (a ``word(`` called there), or in ``imported``, the import statements that
        bind a name ``own`` uses (a ``word(`` as a word). True when the rule names no group."""
        if self.sink is None:
            return True
        calls, rest = self._sink_split
        if any(called(own, w) or has_word(imported, w) for w in calls):
            return True
        return rest is not None and rest.admits_parts((own, imported))

    @cached_property
    def _sink_split(self) -> tuple[tuple[str, ...], Prefilter | None]:
        """The sink group's called words, and its other items as a prefilter of their own."""
        group = self.groups[self.sink] if self.sink is not None else ()
        rest = tuple(i for i in group if not _is_call(i))
        return tuple(i[:-1] for i in group if _is_call(i)), Prefilter((rest,)) if rest else None

    @cached_property
    def _split(self) -> tuple[tuple[frozenset[str], tuple[tuple[str, ...], ...],
                                    tuple[str, ...]], ...]:
        """Each group as its single words, its ``a+b`` items and its punctuation items."""
        plain = [[_plain(i) for i in g] for g in self.groups]
        return tuple((frozenset(i for i in g if "+" not in i and not _PUNCT.match(i)),
                      tuple(tuple(i.split("+")) for i in g if "+" in i),
                      tuple(i for i in g if _PUNCT.match(i))) for g in plain)


# the scan asks twice per file and rule (to stage, then to write the rules): remembered, keyed by
# the text itself (a str caches its hash; a hit on the same object compares by identity)
@lru_cache(maxsize=65536)
def _admits(groups: tuple[tuple[str, ...], ...], text: str) -> bool:
    return all(any(_has_item(text, item) for item in group) for group in groups)


def parse_groups(raw: object) -> tuple[tuple[str, ...], ...] | None:
    """``metadata.prefilter`` as groups, or None when it is malformed."""
    if not isinstance(raw, list) or not raw:
        return None
    groups: list[tuple[str, ...]] = []
    for group in raw:
        if (not isinstance(group, list) or not group
                or not all(isinstance(i, str) and valid_item(i) for i in group)):
            return None
        groups.append(tuple(group))
    return tuple(groups)


def signature(text: str, prefilters: Sequence[Prefilter]) -> int:
    """A bit mask: bit i set when ``prefilters[i]`` admits ``text``. The text's identifiers
    are found once and each word looked up in them (a superset of :func:`has_word`, which
    would search the text again for every word of every prefilter)."""
    words = [_identifiers(text)]  # not remembered: each file is asked once
    return sum(1 << i for i, pf in enumerate(prefilters) if pf.admits_words(words, (text,)))


def include_cover(keep: Iterable[str], candidates: Iterable[str]) -> list[str]:
    """The fewest anchored path patterns that name exactly the files of ``keep`` among
    ``candidates`` (posix paths relative to the scan root; ``keep`` is a subset).

    A folder becomes one pattern (``/dir/``) when every candidate below it is kept, else its
    kept files and sub-folders are listed one by one. Semgrep's front end matches every pattern
    against every target in Python (~40 ms of CPU per pattern over 2,700 targets), so staging
    files by what the prefilters admit (see :func:`signature`) and naming folders instead of
    files keeps that cost negligible.
    """
    kept = set(keep)
    # every folder of a candidate (and its ancestors), and whether all candidates below it are kept
    whole: dict[str, bool] = {}
    for path in candidates:
        parts = path.split("/")[:-1]
        for n in range(1, len(parts) + 1):
            folder = "/".join(parts[:n])
            whole[folder] = whole.get(folder, True) and path in kept
    out: set[str] = set()
    for path in kept:
        parts = path.split("/")[:-1]
        # the shortest ancestor folder that is wholly kept covers the file
        top = next(("/".join(parts[:n]) for n in range(1, len(parts) + 1)
                    if whole.get("/".join(parts[:n]))), None)
        out.add(f"/{top}/" if top is not None else f"/{path}")
    return sorted(out)
