"""A reader for systemd unit files, close enough to systemd's own to lint what it would run.

It follows systemd.syntax(7): ``[Section]`` headers; ``#`` and ``;`` comment lines (also inside a
continued line); a line ending in a backslash continues on the next one (the backslash becomes a
space); ``Key=Value`` with the whitespace around ``=`` dropped; repeated keys kept in order, so callers
decide between "last one wins" and "list, reset by an empty assignment". Each directive keeps the
physical line it starts on and the line it ends on.

:func:`split_words` splits a value the way systemd splits ``ExecStart=`` or ``Environment=``: quotes
may start anywhere in a word, C escapes (``\\n``, ``\\x41``, ``\\s`` …) are decoded inside and outside
quotes, and each word keeps its raw span so a caller can rewrite one word in place.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from auditor.errors import InputError


@dataclass(frozen=True)
class Directive:
    section: str
    key: str
    value: str  # continuation lines joined, specifiers not expanded
    line: int  # 1-based physical line where the directive starts
    end_line: int
    text: str  # the logical line as written (for snippets)


@dataclass(frozen=True)
class UnitFile:
    path: str  # as shown in findings
    lines: tuple[str, ...]  # physical lines
    directives: tuple[Directive, ...]
    sections: tuple[tuple[str, int], ...]  # (name, line of its header), in order

    def all(self, section: str, key: str) -> list[Directive]:
        return [d for d in self.directives if d.section == section and d.key == key]

    def last(self, section: str, key: str) -> Directive | None:
        found = self.all(section, key)
        return found[-1] if found else None

    def effective_list(self, section: str, key: str) -> list[Directive]:
        """Assignments of a list setting that are still in force: an empty one resets the list."""
        out: list[Directive] = []
        for d in self.all(section, key):
            if d.value.strip() == "":
                out = []
            else:
                out.append(d)
        return out

    def section_line(self, section: str) -> int:
        for name, line in self.sections:
            if name == section:
                return line
        return 0

    def has_section(self, section: str) -> bool:
        return any(name == section for name, _ in self.sections)


def parse_unit(text: str, path: str) -> UnitFile:
    """Parse a unit file's text; raises InputError for what systemd itself would reject."""
    lines = re.split(r"\r\n|\r|\n", text.removesuffix("\n"))  # systemd's line ends only
    directives: list[Directive] = []
    sections: list[tuple[str, int]] = []
    section: str | None = None
    i = 0
    while i < len(lines):
        start = i
        raw = lines[i]
        i += 1
        stripped = raw.strip()
        if not stripped or stripped[0] in "#;":
            continue
        if stripped.startswith("[") and not _continues(raw):
            if not stripped.endswith("]") or len(stripped) < 3:
                raise InputError(f"{path}:{start + 1}: malformed section header {stripped!r}")
            section = stripped[1:-1]
            sections.append((section, start + 1))
            continue
        logical = raw
        parts = [raw]
        cont = _continues(raw)
        while cont and i < len(lines):
            nxt = lines[i]
            parts.append(nxt)
            i += 1
            if nxt.strip()[:1] in ("#", ";"):
                continue  # a comment inside a continued line is skipped
            logical = logical.rstrip()[:-1] + " " + nxt
            cont = _continues(nxt)
        if cont:
            logical = logical.rstrip()[:-1]
        if section is None:
            raise InputError(f"{path}:{start + 1}: assignment outside of any [section]")
        key, eq, value = logical.partition("=")
        if not eq:
            raise InputError(f"{path}:{start + 1}: missing '=' in {stripped[:60]!r}")
        directives.append(Directive(section=section, key=key.strip(), value=value.strip(),
                                    line=start + 1, end_line=i, text="\n".join(parts)))
    return UnitFile(path=path, lines=tuple(lines), directives=tuple(directives),
                    sections=tuple(sections))


def _continues(line: str) -> bool:
    """An odd number of trailing backslashes continues the line (``\\\\`` is a literal one)."""
    body = line.rstrip()
    return (len(body) - len(body.rstrip("\\"))) % 2 == 1


# ---------------------------------------------------------------- words

_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
                   "\\": "\\", '"': '"', "'": "'", "s": " "}


@dataclass(frozen=True)
class Word:
    text: str  # quotes removed, C escapes decoded; specifiers and $VARs left as written
    raw: str  # exactly as written
    start: int  # span of ``raw`` in the value
    end: int


def split_words(value: str) -> list[Word]:
    """Split like systemd's extract_first_word(EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE)."""
    words: list[Word] = []
    i, n = 0, len(value)
    while i < n:
        while i < n and value[i] in " \t\n\r":
            i += 1
        if i >= n:
            break
        start = i
        out: list[str] = []
        quote: str | None = None
        while i < n:
            c = value[i]
            if quote is None and c in " \t\n\r":
                break
            if c == "\\":
                decoded, i = _unescape(value, i)
                out.append(decoded)
                continue
            if quote is None and c in "\"'":
                quote = c
            elif quote is not None and c == quote:
                quote = None
            else:
                out.append(c)
            i += 1
        if quote is not None:
            raise ValueError(f"unbalanced quotes in {value!r}")
        words.append(Word(text="".join(out), raw=value[start:i], start=start, end=i))
    return words


def _unescape(value: str, i: int) -> tuple[str, int]:
    """Decode the escape starting at ``value[i] == '\\'``; returns (text, next index)."""
    if i + 1 >= len(value):
        return "", i + 1
    c = value[i + 1]
    if c in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[c], i + 2
    if c == "x" and re.fullmatch(r"[0-9a-fA-F]{2}", value[i + 2:i + 4]):
        return chr(int(value[i + 2:i + 4], 16)), i + 4
    if c == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", value[i + 2:i + 6]):
        return chr(int(value[i + 2:i + 6], 16)), i + 6
    if c == "U" and re.fullmatch(r"[0-9a-fA-F]{8}", value[i + 2:i + 10]):
        return chr(int(value[i + 2:i + 10], 16)), i + 10
    if re.fullmatch(r"[0-7]{3}", value[i + 1:i + 4]):
        return chr(int(value[i + 1:i + 4], 8)), i + 4
    return c, i + 2  # "\;" "\ " and friends: the character itself


def unspecify(text: str) -> str:
    """``%%`` -> ``%``; other specifiers stay as written (their value depends on the host)."""
    return re.sub(r"%(.)", lambda m: "%" if m.group(1) == "%" else m.group(0), text)


# ---------------------------------------------------------------- command lines

EXEC_KEYS = ("ExecCondition", "ExecStartPre", "ExecStart", "ExecStartPost", "ExecReload",
             "ExecStop", "ExecStopPost")
_EXEC_PREFIXES = "@-:+!|"


@dataclass(frozen=True)
class Command:
    directive: Directive
    argv: tuple[str, ...]  # after unquoting and %% -> %; $$ still written as $$
    head: Word  # the executable's word (prefix characters excluded from its span)


def commands(unit: UnitFile, section: str = "Service") -> Iterator[Command]:
    """Every command of every Exec*= line (a lone ``;`` separates commands)."""
    for d in unit.directives:
        if d.section != section or d.key not in EXEC_KEYS or not d.value:
            continue
        try:
            words = split_words(d.value)
        except ValueError:
            continue  # systemd rejects the line; the verify step reports it
        group: list[Word] = []
        for w in [*words, None]:
            if w is None or w.raw == ";":
                if group:
                    yield _command(d, group)
                group = []
            else:
                group.append(w)


def _command(d: Directive, words: list[Word]) -> Command:
    first = words[0]
    skip = 0
    while skip < len(first.raw) and first.raw[skip] in _EXEC_PREFIXES:
        skip += 1
    head = Word(text=first.text[skip:], raw=first.raw[skip:], start=first.start + skip,
                end=first.end)
    argv = [unspecify(head.text)] + [unspecify(w.text) for w in words[1:]]
    return Command(directive=d, argv=tuple(argv), head=head)


def systemd_dollars(word: str) -> str:
    """The word as the program receives it, except for systemd's own ${VAR} expansion."""
    return word.replace("$$", "$")


TRUE_WORDS = frozenset({"1", "yes", "y", "true", "t", "on"})
FALSE_WORDS = frozenset({"0", "no", "n", "false", "f", "off"})


def as_bool(value: str | None) -> bool | None:
    if value is None:
        return None
    v = value.strip().lower()
    if v in TRUE_WORDS:
        return True
    if v in FALSE_WORDS:
        return False
    return None
