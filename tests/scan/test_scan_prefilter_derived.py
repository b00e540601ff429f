"""Every rule's ``metadata.prefilter`` follows from the rule's own patterns: a test that fails
when a pattern changes so that a match no longer needs a word its prefilter asks for.

A prefilter is sound when every match of the rule needs, for each group, one of the group's
items written in the file. Read from the rule's YAML (no semgrep needed): a pattern *requires* a
word when the word is an identifier of the pattern's code (metavariables, ``...`` and string
literals left out: semgrep's constant folding can assemble a literal), or a literal run of a
regex outside every optional part (case-sensitive only). ``pattern-either`` and ``BRANCH``
require what every alternative requires; ``patterns`` what any positive part requires
(``pattern``, ``pattern-inside``, ``pattern-regex``, ``metavariable-regex``,
``metavariable-pattern``; never a ``pattern-not*``). A taint rule's group must be required by
every source or by every sink; its ``prefilter-sink-group`` by every sink."""

from __future__ import annotations

import re
import sre_constants
import sre_parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from auditor.scan import rules as rules_mod

_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'')
_METAVAR = re.compile(r"\$(?:\.\.\.)?[A-Z_][A-Z0-9_]*")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_POSITIVE = ("pattern", "pattern-inside", "pattern-regex", "pattern-either", "patterns",
             "metavariable-regex", "metavariable-pattern")


def _code_words(pattern: str) -> set[str]:
    return set(_IDENT.findall(_METAVAR.sub(" ", _STRING.sub(" ", pattern))))


Leaf = tuple[frozenset[str], str]  # the words a match spells, and its literal text
Conj = tuple[Leaf, ...]  # what one way of matching spells, all of it
_LIMIT = 20000
_NOTHING: list[Conj] = [()]  # a part nothing is known of: it requires nothing
_EDGE = "\x01"  # a regex part that may be identifier characters: no word runs across it
_WORD_IN_RUN = re.compile(r"(?<![\x01A-Za-z0-9_])[A-Za-z_][A-Za-z0-9_]*(?![\x01A-Za-z0-9_])")


def _item_in(item: str, conj: Conj) -> bool:
    if item.endswith("(") and _IDENT.fullmatch(item[:-1]):
        item = item[:-1]
    if not _IDENT.match(item) and "+" not in item:  # punctuation, e.g. "::"
        return any(item in text for _, text in conj)
    words = frozenset().union(*(w for w, _ in conj))
    return all(w in words for w in item.split("+"))


def _product(a: list[Conj], b: list[Conj]) -> list[Conj]:
    out = [x + y for x in a for y in b]
    return out if len(out) <= _LIMIT else _NOTHING


def _regex(regex: str) -> list[Conj]:
    """A regex's ways of matching (:func:`_readings`), each its words (case-sensitive regexes
    only; a word is whole only where the regex bounds it)."""
    try:
        parsed = sre_parse.parse(regex)
    except re.error:
        return _NOTHING
    if parsed.state.flags & re.IGNORECASE:
        return _NOTHING
    readings = _readings(list(parsed))
    if readings is None:
        return _NOTHING
    out: list[Conj] = []
    for r in readings:
        text = r if r.startswith("^") else _EDGE + r
        text = text if text.endswith("$") else text + _EDGE
        out.append(((frozenset(_WORD_IN_RUN.findall(text)), text),))
    return out


def _readings(seq: list[Any]) -> list[str] | None:
    """The literal text of each way through ``seq``: what may be identifier characters is
    :data:`_EDGE`, blanks and word boundaries a space, an optional part there or not, a branch
    each of its alternatives (None: too many ways)."""
    out = [""]
    for op, av in seq:
        parts = _part(op, av)
        if parts is None:
            return None
        out = [a + b for a in out for b in parts]
        if len(out) > 512:
            return None
    return out


def _part(op: Any, av: Any) -> list[str] | None:
    """The readings of one element of a parsed regex (:func:`_readings`)."""
    if op is sre_constants.LITERAL:
        return [chr(av)]
    if op is sre_constants.SUBPATTERN:
        return _readings(list(av[-1]))
    if op is sre_constants.BRANCH:
        parts: list[str] = []
        for b in av[1]:
            got = _readings(list(b))
            if got is None:
                return None
            parts += got
        return parts
    if op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):
        inner = _readings(list(av[2]))
        if inner is None:
            return None
        sep = " " if all(set(x) <= {" "} for x in inner) else _EDGE
        once = inner if (av[0], av[1]) == (1, 1) else [sep + x + sep for x in inner]
        return (once if av[0] >= 1 else []) + ([sep] if av[0] == 0 else [])
    if op is sre_constants.AT:
        return {sre_constants.AT_BEGINNING: ["^"], sre_constants.AT_BEGINNING_STRING: ["^"],
                sre_constants.AT_END: ["$"], sre_constants.AT_END_STRING: ["$"],
                sre_constants.AT_BOUNDARY: [" "]}.get(av, [_EDGE])
    if op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
        # zero-width; a negative look at a word character is a word boundary
        inner_seq = list(av[1])
        word = (op is sre_constants.ASSERT_NOT and len(inner_seq) == 1
                and inner_seq[0][0] is sre_constants.IN
                and (sre_constants.CATEGORY, sre_constants.CATEGORY_WORD) in inner_seq[0][1])
        return [" "] if word else [""]
    if op is sre_constants.IN and list(av) == [(sre_constants.CATEGORY,
                                                sre_constants.CATEGORY_SPACE)]:
        return [" "]
    return [_EDGE]  # a class, any character ...: may be part of a word


def _dnf(node: Any) -> list[Conj]:
    """The ways a match of ``node`` (a pattern operator's value, or a mapping of them) can
    happen, each with what it spells (see the module docstring)."""
    if isinstance(node, str):  # a `pattern`
        return [((frozenset(_code_words(node)), _STRING.sub(" ", node)),)]
    out: list[Conj] = [()]
    if isinstance(node, list):  # the parts of `patterns`: each positive one
        for part in node:
            if isinstance(part, dict):
                out = _product(out, _dnf(part))
        return out
    if not isinstance(node, dict):
        return _NOTHING
    for key in _POSITIVE:
        if key in node:
            out = _product(out, _operator(key, node[key]))
    return out


def _operator(key: str, value: Any) -> list[Conj]:
    """The ways one positive operator's ``value`` can match (:func:`_dnf`)."""
    if key == "pattern-either":
        alts: list[Conj] = []
        for alt in value:
            alts += _dnf(alt)
        return alts if len(alts) <= _LIMIT else _NOTHING
    if key == "pattern-regex":
        return _regex(value)
    if key == "metavariable-regex":
        return _regex(value["regex"])
    if key == "metavariable-pattern":
        return _dnf({k: v for k, v in value.items() if k in _POSITIVE})
    return _dnf(value)  # pattern, pattern-inside, patterns


def _requires(node: Any, group: tuple[str, ...]) -> bool:
    """Whether every match of ``node`` spells an item of ``group``."""
    return all(any(_item_in(item, conj) for item in group) for conj in _dnf(node))


def _every(specs: list[Any], group: tuple[str, ...]) -> bool:
    return bool(specs) and all(_requires(s, group) for s in specs)


def _raw_rules() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for path in rules_mod.rule_files():
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        for raw in doc["rules"]:
            out[raw["id"]] = raw
    return out


RAW = _raw_rules()
PREFILTERED = sorted(m.id for m in rules_mod.load_rule_meta().values() if m.prefilter)


def unsound_groups(raw: dict[str, Any], groups: tuple[tuple[str, ...], ...],
                   sink_group: int | None) -> list[tuple[str, ...]]:
    """The groups of a prefilter that some match of the rule ``raw`` need not spell."""
    bad: list[tuple[str, ...]] = []
    for n, group in enumerate(groups):
        if raw.get("mode") == "taint":
            sources, sinks = raw.get("pattern-sources") or [], raw.get("pattern-sinks") or []
            ok = _every(sinks, group) if n == sink_group else (
                _every(sources, group) or _every(sinks, group))
        else:
            ok = _requires({k: v for k, v in raw.items() if k in _POSITIVE}, group)
        if not ok:
            bad.append(group)
    return bad


def test_there_are_prefiltered_rules() -> None:
    assert len(PREFILTERED) >= 20


@pytest.mark.parametrize("rule_id", PREFILTERED)
def test_each_prefilter_group_follows_from_the_rules_patterns(rule_id: str) -> None:
    m = rules_mod.load_rule_meta()[rule_id]
    assert unsound_groups(RAW[rule_id], m.prefilter, m.sink_group) == [], (
        f"{rule_id}: a match need not spell one of these groups; change metadata.prefilter "
        f"to follow the rule's patterns ({m.file})")


_Check = Callable[[dict[str, Any], tuple[tuple[str, ...], ...], int | None], list[Any]]


@pytest.mark.parametrize("changed, groups, sink", [
    # an alternative added that spells none of the group's words: the check must fail
    ({"pattern-either": [{"pattern": "requests.get(...)"}, {"pattern": "aiohttp.get(...)"}]},
     (("requests",),), None),
    # a regex whose word is optional, or may be part of a longer identifier
    ({"pattern-regex": r"(?:logger\.)?info\("}, (("logger",),), None),
    ({"pattern-regex": r"log\.info\(.*prompt"}, (("prompt",),), None),
    # a word only inside a longer identifier (``read_clipboard`` is not ``clipboard``)
    ({"pattern": "pandas.read_clipboard(...)"}, (("clipboard", "pyperclip"),), None),
    # a word only in a string literal (constant folding can build it)
    ({"pattern": 'os.environ["HF_TOKEN"]'}, (("HF_TOKEN",),), None),
    # a taint rule: a source that lacks the group's words, and a sink that lacks the sink group's
    ({"mode": "taint", "pattern-sources": [{"pattern": "$S.recv(...)"}, {"pattern": "input()"}],
      "pattern-sinks": [{"pattern": "pickle.loads(...)"}]}, (("recv",),), None),
    ({"mode": "taint", "pattern-sources": [{"pattern": "$S.recv(...)"}],
      "pattern-sinks": [{"pattern": "pickle.loads(...)"}, {"pattern": "eval(...)"}]},
     (("recv",), ("pickle",)), 1),
])
def test_the_check_fails_when_a_pattern_stops_spelling_a_group(
        changed: dict[str, Any], groups: tuple[tuple[str, ...], ...], sink: int | None) -> None:
    check: _Check = unsound_groups
    assert check(changed, groups, sink) != []


def test_the_check_passes_sound_shapes() -> None:
    assert unsound_groups({"patterns": [
        {"pattern-either": [{"pattern": "requests.$F(...)"}, {"pattern": "httpx.$F(...)"}]},
        {"pattern-not": "x"}]}, (("requests", "httpx"),), None) == []
    assert unsound_groups({"pattern-regex": r"\b(logger|logging)\.(info|debug)\(.*\bprompt\b"},
                          (("prompt",), ("logger", "logging")), None) == []
    assert unsound_groups({"pattern": "torch.load($X)"}, (("torch+load",),), None) == []
    assert unsound_groups({"pattern": "$X[::-1]"}, (("::",),), None) == []


def test_rule_files_are_where_the_check_reads_them() -> None:
    assert all(Path(rules_mod.RULES_DIR, m.file).is_file()
               for m in rules_mod.load_rule_meta().values())
