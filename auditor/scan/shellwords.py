"""Shell words as the shell reads them, so rules match what runs rather than how it is spelt.

``cu''rl``, ``c\\url``, ``"c"url``, ``c=curl; $c URL``, ``${IFS}`` between words, ``$'\\x63url'``,
``alias c=curl``, ``eval "curl … | sh"`` and ``$(echo curl)`` are all ``curl`` to the shell and
plain text to a pattern. :func:`parse` reads a script with the shell's quoting rules (single,
double and ANSI-C quotes, backslash escapes, ``\\``-newline continuations, comments, here-documents)
and expands what a reader can know without running anything: variables and aliases assigned
earlier in the same script (``NAME=value``, ``export``/``local``/``declare``/``readonly``), field
splitting on ``IFS``, ``$(echo …)``/``$(printf …)`` substitutions, and the text given to ``eval``
or ``sh -c``. It gives the simple commands with their words and 1-based lines.

:func:`view` writes those commands back as plain shell at the script's own line numbers (each
logical command on its first line, the lines it continued on blank, here-document bodies kept as
they are): the same shell rules run over it as over the script. Nothing here raises on odd input.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from auditor.lines import split_lines

#: how a derived target that is another target's :func:`view` is named (after the target's own)
VIEW_SUFFIX = "+words"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\+?=(.*)$", re.S)
_OPERATORS = ("&&", "||", ";;", "|&", ";", "|", "&", "(", ")")
_REDIRECTS = ("<<<", "<<-", "<<", ">>", ">&", "<&", "<>", ">|", ">", "<")
_KEYWORDS = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "while", "until",
                       "for", "case", "esac", "in", "{", "}", "!", "time", "function",
                       "select", "[[", "]]", "coproc"})
_DECLARE = frozenset({"export", "local", "declare", "readonly", "typeset"})
_SHELLS = frozenset({"sh", "bash", "dash", "ash", "zsh", "ksh", "busybox"})
_SAFE = re.compile(r"^[A-Za-z0-9_@%+=:,./~^*?{}\[\]!-]+$")
_ANSI = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b",
         "f": "\f", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
_MAX_DEPTH = 4  # nested eval / sh -c / $( ) readings
_MAX_VALUE = 4096  # longest expansion kept


@dataclass(frozen=True)
class Command:
    """One simple command: its words after expansion, at the 1-based line it starts on."""

    line: int
    words: tuple[str, ...]
    outputs: tuple[str, ...] = ()  # files written by ``>``/``>>`` redirections


@dataclass
class Env:
    """What the script has set so far: variables, aliases and the field separators."""

    variables: dict[str, str] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)

    @property
    def ifs(self) -> str:
        return self.variables.get("IFS", " \t\n")


#: a piece of a word: its text, whether field splitting may cut it (an unquoted expansion), and
#: whether it is a command substitution kept as shell (``$(...)``, ``<(...)``, ``$((...))``)
_Bit = tuple[str, bool, bool]


@dataclass
class _Word:
    chars: list[_Bit] = field(default_factory=list)
    quoted: bool = False  # some part was quoted (an empty quoted word is still a word)
    raw: str = ""  # the literal source text (for assignments' names)
    end: int = -1  # index after the word in the text read
    resolved: bool = False  # a variable, substitution or $'...' was resolved in it

    def add(self, text: str, split: bool = False) -> None:
        self.chars.extend((c, split, False) for c in text)

    def add_sub(self, text: str) -> None:
        self.chars.append((text, False, True))

    def fields(self, ifs: str) -> list[list[tuple[str, bool]]]:
        """The words field splitting makes of it, each as (text, is a substitution) pieces."""
        out: list[list[tuple[str, bool]]] = []
        cur: list[tuple[str, bool]] = []
        pending = False
        for c, split, sub in self.chars:
            if split and c in ifs:
                if cur or (pending and c not in " \t\n"):
                    out.append(cur)
                cur, pending = [], c not in " \t\n"
                continue
            cur.append((c, sub))
            pending = True
        if cur or (self.quoted and not out):
            out.append(cur)
        return out

    def text(self) -> str:
        return "".join(c for c, _s, _b in self.chars)


def _pieces(bits: list[_Bit]) -> list[tuple[str, bool]]:
    return [(t, sub) for t, _split, sub in bits]


def _joined(pieces: list[tuple[str, bool]]) -> str:
    return "".join(t for t, _ in pieces)


def _render(pieces: list[tuple[str, bool]]) -> str:
    """A word as shell text: literal runs quoted as needed, substitutions as they are."""
    out: list[str] = []
    run: list[str] = []
    for t, sub in pieces:
        if sub:
            if run:
                out.append(_quote_text("".join(run)))
                run = []
            out.append(t.replace("\n", " "))
        else:
            run.append(t)
    if run or not out:
        out.append(_quote_text("".join(run)))
    return "".join(out)


class _Reader:
    def __init__(self, text: str, env: Env, depth: int = 0, first_line: int = 1) -> None:
        self.s = text
        self.i = 0
        self.line = first_line
        self.env = env
        self.depth = depth
        self.out: dict[int, list[str]] = {}
        self.keep: dict[int, str] = {}  # here-document body lines, as they are
        self.commands: list[Command] = []
        self.heredocs: list[tuple[str, bool]] = []
        # whether the logical line being read means something else than it spells (a variable,
        # alias or substitution resolved, quotes inside a word, eval): only those are rewritten
        self.changed = False
        self.any_change = False  # some line of it (for a nested reading)
        self.continued = False  # the logical line goes on over a backslash-newline
        self.rewritten: set[int] = set()  # the lines whose view is not their own text
        self.src: list[str] | None = None

    # -- the main loop: simple commands separated by operators, logical lines by newlines --
    def run(self) -> None:
        words: list[_Word] = []
        start = self.line
        rendered: list[str] = []
        while self.i < len(self.s):
            c = self.s[self.i]
            if c == "\\" and self.s.startswith("\\\n", self.i):
                self.i += 2
                self.line += 1
                self.continued = True
                continue
            if c in " \t\r":
                self.i += 1
                continue
            if c == "\n":
                self._finish(words, start, rendered)
                words = []
                self._flush(start, rendered)
                rendered = []
                self.i += 1
                self.line += 1
                self._bodies()
                start = self.line
                continue
            if c == "#":
                while self.i < len(self.s) and self.s[self.i] != "\n":
                    self.i += 1
                continue
            op = self._operator(words)
            if op is not None:
                if op in _OPERATORS:
                    self._finish(words, start, rendered)
                    words = []
                    rendered.append(op)
                else:
                    if (words and words[-1].end == self.i - len(op) and words[-1].raw.isdigit()):
                        op = words.pop().raw + op  # an IO number: 2>&1
                    words.append(_Word(chars=[(op, False, False)], raw=op))
                    if op.lstrip("0123456789") in ("<<", "<<-"):
                        self._heredoc_word(words, op)
                continue
            words.append(self._test() if self.s.startswith("[[", self.i) else self._word())
        self._finish(words, start, rendered)
        self._flush(start, rendered)

    def _test(self) -> _Word:
        """A ``[[ ... ]]`` test, kept as it is spelt (its ``(``, ``|`` and ``=~`` patterns are
        no operators)."""
        m = re.compile(r"\[\[(?:\\.|'[^']*'|\"(?:\\.|[^\"\\])*\"|[^\]\n]|\](?!\]))*\]\]").match(
            self.s, self.i)
        if m is None:
            return self._word()
        w = _Word(raw=m.group(), end=m.end())
        w.add_sub(m.group())
        self.line += m.group().count("\n")
        self.i = m.end()
        return w

    def _operator(self, words: list[_Word]) -> str | None:
        s, i = self.s, self.i
        if s.startswith(("<(", ">("), i):
            return None  # a process substitution is part of a word
        for op in _REDIRECTS + _OPERATORS:
            if s.startswith(op, i):
                self.i += len(op)
                return op
        return None

    def _heredoc_word(self, words: list[_Word], op: str) -> None:
        while self.i < len(self.s) and self.s[self.i] in " \t":
            self.i += 1
        w = self._word()
        delim = w.text()
        shown = shlex.quote(delim) if w.quoted else delim
        words.append(_Word(chars=[(c, False, False) for c in shown], raw=delim, quoted=True))
        self.heredocs.append((delim, op == "<<-"))

    def _bodies(self) -> None:
        """Here-document bodies after a newline: kept line by line, as they are."""
        while self.heredocs:
            delim, tabs = self.heredocs.pop(0)
            while self.i < len(self.s):
                end = self.s.find("\n", self.i)
                end = len(self.s) if end < 0 else end
                ln = self.s[self.i:end]
                self.keep[self.line] = ln
                self.i = end + 1
                self.line += 1
                if (ln.lstrip("\t") if tabs else ln).rstrip("\r") == delim:
                    break

    # -- words --
    def _word(self) -> _Word:
        w = _Word()
        start = self.i
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c in " \t\r\n" or (c in ";&|()<>" and not s.startswith(("<(", ">("), self.i)):
                break
            if c == "\\":
                if s.startswith("\\\n", self.i):
                    self.i += 2
                    self.line += 1
                    self.continued = True
                    continue
                w.add(s[self.i + 1:self.i + 2])
                w.quoted = True
                self.i += 2
            elif c == "'":
                end = s.find("'", self.i + 1)
                end = len(s) if end < 0 else end
                body = s[self.i + 1:end]
                self.line += body.count("\n")
                w.add(body)
                w.quoted = True
                self.i = end + 1
            elif c == "$" and s.startswith("$'", self.i):
                self._ansi(w)
            elif c == '"' or (c == "$" and s.startswith('$"', self.i)):
                self.i += 1 if c == '"' else 2
                self._double(w)
            elif c == "$" or c == "`":
                self._dollar(w, quoted=False)
            elif c in "<>" and s.startswith(("<(", ">("), self.i):
                inner, end = _balanced(s, self.i + 1)
                self.line += s[self.i:end].count("\n")
                w.add_sub(c + "(" + self._inline(inner) + ")")
                self.i = end
            else:
                w.add(c)
                self.i += 1
        w.raw = s[start:self.i]
        w.end = self.i
        return w

    def _ansi(self, w: _Word) -> None:
        s = self.s
        self.i += 2
        out: list[str] = []
        while self.i < len(s) and s[self.i] != "'":
            c = s[self.i]
            if c == "\n":
                self.line += 1
            if c != "\\" or self.i + 1 >= len(s):
                out.append(c)
                self.i += 1
                continue
            nxt = s[self.i + 1]
            m = (re.compile(r"x([0-9a-fA-F]{1,2})").match(s, self.i + 1)
                 or re.compile(r"u([0-9a-fA-F]{1,4})").match(s, self.i + 1)
                 or re.compile(r"U([0-9a-fA-F]{1,8})").match(s, self.i + 1))
            o = re.compile(r"0?([0-7]{1,3})").match(s, self.i + 1)
            if m:
                try:
                    out.append(chr(int(m.group(1), 16)))
                except (ValueError, OverflowError):
                    out.append("?")
                self.i = m.end()
            elif o:
                out.append(chr(int(o.group(1), 8) & 0xFF))
                self.i = o.end()
            elif nxt == "c" and self.i + 2 < len(s):
                out.append(chr(ord(s[self.i + 2]) & 0x1F))
                self.i += 3
            else:
                out.append(_ANSI.get(nxt, "\\" + nxt))
                self.i += 2
        self.i += 1
        w.add("".join(out))
        w.quoted = True
        w.resolved = True

    def _double(self, w: _Word) -> None:
        s = self.s
        w.quoted = True
        while self.i < len(s) and s[self.i] != '"':
            c = s[self.i]
            if c == "\\" and self.i + 1 < len(s) and s[self.i + 1] in '$`"\\\n':
                if s[self.i + 1] == "\n":
                    self.line += 1
                else:
                    w.add(s[self.i + 1])
                self.i += 2
            elif c in "$`":
                self._dollar(w, quoted=True)
            else:
                if c == "\n":
                    self.line += 1
                w.add(c)
                self.i += 1
        self.i += 1

    def _dollar(self, w: _Word, *, quoted: bool) -> None:
        s = self.s
        if s.startswith("$((", self.i):
            inner, end = _balanced(s, self.i + 1)
            w.add_sub("$(" + inner + ")")
            self.i = end
            return
        if s.startswith("$(", self.i) or s[self.i] == "`":
            if s[self.i] == "`":
                end = s.find("`", self.i + 1)
                end = len(s) if end < 0 else end
                inner, after = s[self.i + 1:end], end + 1
            else:
                inner, after = _balanced(s, self.i + 1)
            self.line += s[self.i:after].count("\n")
            self.i = after
            value = self._substitution(inner)
            w.resolved |= value is not None
            if value is None:
                w.add_sub("$(" + self._inline(inner) + ")")
            else:
                w.add(value, split=not quoted)
            return
        m = _NAME.match(s, self.i + 1)
        if m:
            self.i = m.end()
            self._expand(w, m.group(), None, quoted, "$" + m.group())
            return
        if s.startswith("${", self.i):
            end = s.find("}", self.i)
            end = len(s) if end < 0 else end
            body = s[self.i + 2:end]
            self.i = end + 1
            bm = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)(?::?[-=]([^}]*))?$", body, re.S)
            om = _PARAM_OP.match(body)
            if bm:
                self._expand(w, bm.group(1), bm.group(2), quoted, "${" + body + "}")
            elif om and om.group(1) in self.env.variables:
                w.resolved = True
                w.add(_param_op(self.env.variables[om.group(1)], om.group(2)), split=not quoted)
            else:
                w.add("${" + body + "}")
            return
        w.add("$")
        self.i += 1

    def _expand(self, w: _Word, name: str, default: str | None, quoted: bool,
                literal: str) -> None:
        value = self.env.variables.get(name)
        if value is None and name == "IFS":
            value = self.env.ifs
        if value is None and default is not None:
            value = _Reader.words_of(default, self.env, self.depth)
        if value is None:
            w.add(literal)
        else:
            w.resolved = True
            w.add(value, split=not quoted)

    def _substitution(self, inner: str) -> str | None:
        """What ``$(echo …)`` / ``$(printf %s …)`` prints; None for anything else."""
        if self.depth >= _MAX_DEPTH:
            return None
        sub = _Reader(inner, self.env, self.depth + 1)
        sub.run()
        if len(sub.commands) != 1 or any(op in "".join(sum(sub.out.values(), []))
                                         for op in ("|", ">", ";", "&")):
            return None
        words = list(sub.commands[0].words)
        if words and words[0] == "echo":
            words = words[1:]
            while words and words[0] in ("-n", "-e", "-E", "-ne", "-en"):
                words = words[1:]
            return " ".join(words)[:_MAX_VALUE]
        if words and words[0] == "printf" and len(words) >= 2:
            fmt, args = words[1], words[2:]
            if fmt == "%s" and args:
                return "".join(args)[:_MAX_VALUE]
            if not args and "%" not in fmt:
                return fmt.replace("\\n", "\n")[:_MAX_VALUE]
        return None

    def _inline(self, text: str) -> str:
        """``text`` read as a script, its commands on one line (for eval, sh -c, $( ))."""
        if self.depth >= _MAX_DEPTH:
            return text.replace("\n", " ; ")
        sub = _Reader(text, self.env, self.depth + 1, self.line)
        sub.run()
        self.changed |= sub.any_change
        self.commands.extend(sub.commands)
        parts = [" ".join(sub.out[k]) for k in sorted(sub.out) if sub.out[k]]
        text = parts[0] if parts else ""
        for p in parts[1:]:  # one line: a `;` where a newline ended a command
            opened = re.search(r"(?:^|\s)(?:[({|]|&&|\|\||;|do|then|else|in)$", text)
            text += (" " if opened or p.startswith((")", ";;", "|", "&&", "||")) else " ; ") + p
        return " " + text if text.startswith("(") else text

    @staticmethod
    def words_of(text: str, env: Env, depth: int) -> str:
        sub = _Reader(text, env, depth + 1)
        w = sub._word()
        return w.text()

    # -- a simple command is complete --
    def _finish(self, words: list[_Word], start: int, rendered: list[str]) -> None:
        if not words:
            return
        fields: list[str] = []
        resolved: set[int] = set()  # the fields a resolution made
        outputs: list[str] = []
        shown: list[str] = []
        command_pos = True
        declaring = False
        i = 0
        while i < len(words):
            w = words[i]
            i += 1
            if w.raw.lstrip("0123456789") in _REDIRECTS:
                nxt = words[i] if i < len(words) else None
                i += nxt is not None
                shown.extend(_redirect(w, nxt, outputs))
                continue
            m = _ASSIGN.match(w.text()) if (command_pos or declaring) else None
            if m and _NAME.fullmatch(w.raw.split("=", 1)[0].rstrip("+")):
                shown.append(self._assign(w, m.group(1), m.group(2)[:_MAX_VALUE]))
                continue
            pieces = w.fields(self.env.ifs)
            parts = [_joined(p) for p in pieces]
            # a program named through a variable, or spelt with quotes inside its name
            if (w.resolved and command_pos) or (not w.resolved and any(
                    _respelt(w.raw, p) for p in parts)):
                self.changed = True
            if w.resolved:
                resolved.update(range(len(fields), len(fields) + len(parts)))
            if command_pos and parts and parts[0] in self.env.aliases:
                self.changed = True
                alias = _Reader.split_words(self.env.aliases[parts[0]], self.env, self.depth)
                pieces = [[(a, False)] for a in alias] + pieces[1:]
                parts = alias + parts[1:]
            if command_pos and parts:
                command_pos = parts[0] in _KEYWORDS
                declaring = parts[0] in _DECLARE
                self._builtin(parts[0], words[i:])
            fields.extend(parts)
            shown.extend(_render(p) for p in pieces)
        if fields:
            shown = self._reread(fields, shown, resolved)
            self.commands.append(Command(start, tuple(fields), tuple(outputs)))
        rendered.append(" ".join(shown))

    def _assign(self, w: _Word, name: str, value: str) -> str:
        """Record ``name=value`` (when its value is known without running anything); the
        assignment as shell text."""
        if "$" in value or any(sub for _t, _split, sub in w.chars):  # known only when run
            self.env.variables.pop(name, None)
        else:
            self.env.variables[name] = value
        bits = _pieces(w.chars)
        eq = next(k for k, (t, sub) in enumerate(bits) if t == "=" and not sub)
        return name + "=" + _render(bits[eq + 1:])

    def _builtin(self, name: str, args: list[_Word]) -> None:
        """What ``alias`` and ``unset`` change for the commands after them."""
        if name == "alias":
            self._aliases(args)
        elif name == "unset":
            for x in args:
                self.env.variables.pop(x.text(), None)

    def _reread(self, fields: list[str], shown: list[str], resolved: set[int]) -> list[str]:
        """The text ``eval`` or ``sh -c`` is given, read as the script it is."""
        cmd = _strip_prefix(fields)
        offset = len(fields) - len(cmd)
        if self.depth >= _MAX_DEPTH:
            return shown
        if cmd and cmd[0] == "eval" and len(cmd) > 1:
            code = " ".join(cmd[1:])
            if "$" in code or "\\" in code:  # built at run time: left as it is spelt
                return shown
            self.changed = True
            return ["eval", self._inline(code)]
        if len(cmd) >= 3 and cmd[0].rsplit("/", 1)[-1] in _SHELLS and "-c" in cmd[1:-1]:
            k = cmd.index("-c")
            self.changed |= offset + k + 1 in resolved
            head = shown[:shown.index("-c") + 1] if "-c" in shown else ["sh", "-c"]
            return [*head, self._inline(cmd[k + 1])]
        return shown

    def _aliases(self, words: list[_Word]) -> None:
        for w in words:
            m = _ASSIGN.match(w.text())
            if m:
                self.env.aliases[m.group(1)] = m.group(2)

    @staticmethod
    def split_words(text: str, env: Env, depth: int) -> list[str]:
        sub = _Reader(text, env, depth + 1)
        sub.run()
        return list(sub.commands[0].words) if sub.commands else []

    def _flush(self, start: int, rendered: list[str]) -> None:
        # a pipeline continued over lines is one line in the view (the rules read lines)
        self.changed |= self.continued and "|" in " ".join(rendered)
        self.continued = False
        self.any_change |= self.changed
        if rendered and (self.changed or self.depth > 0):
            self.out.setdefault(start, []).extend(rendered)
            self.rewritten.update(range(start, self.line + 1))
        elif rendered:  # as it is spelt: the script's own lines
            if self.src is None:
                self.src = self.s.split("\n")
            for k in range(start, self.line + 1):
                if k - 1 < len(self.src) and k not in self.keep:
                    self.keep[k] = self.src[k - 1].rstrip("\r")
        self.changed = False


_PARAM_OP = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(: ?-?\d+(?::\d+)?|//?[^/}]*(?:/[^}]*)?|,,|\^\^|,|\^|"
                       r"##?[^}]*|%%?[^}]*)$", re.S)


def _param_op(value: str, op: str) -> str:
    """``${v:1:3}``, ``${v/a/b}``, ``${v//a/b}``, ``${v,,}``, ``${v^^}``, ``${v#p}``, ``${v%p}``
    with literal patterns (a glob pattern is taken as its text)."""
    if op.startswith(":"):
        m = re.match(r"^:(-?\d+)(?::(\d+))?$", op.replace(": -", ":-"))
        if not m:
            return value
        start = int(m.group(1))
        part = value[start:] if start >= 0 else value[len(value) + start:]
        return part[:int(m.group(2))] if m.group(2) is not None else part
    if op.startswith("/"):
        every = op.startswith("//")
        pat, _, rep = op[2 if every else 1:].partition("/")
        return value.replace(pat, rep) if every else value.replace(pat, rep, 1) if pat else value
    if op in (",,", ","):
        return value.lower() if op == ",," else value[:1].lower() + value[1:]
    if op in ("^^", "^"):
        return value.upper() if op == "^^" else value[:1].upper() + value[1:]
    if op.startswith("#"):
        pat = op.lstrip("#")
        return value[len(pat):] if value.startswith(pat) else value
    pat = op.lstrip("%")
    return value[:-len(pat)] if pat and value.endswith(pat) else value


def _redirect(op: _Word, target: _Word | None, outputs: list[str]) -> list[str]:
    """A redirection as shell text; the file it writes goes to ``outputs``."""
    if target is None:
        return [op.raw]
    if op.raw.lstrip("0123456789") in (">", ">>", ">|"):
        outputs.append(target.text())
    heredoc = "<<" in op.raw and "<<<" not in op.raw
    return [op.raw, target.text() if heredoc else _render(_pieces(target.chars))]


def _balanced(s: str, i: int) -> tuple[str, int]:
    """The text inside the parenthesis at ``s[i]`` and the index after its closing one."""
    depth = 0
    j = i
    quote = ""
    while j < len(s):
        c = s[j]
        if quote:
            if c == "\\" and quote == '"':
                j += 2
                continue
            if c == quote:
                quote = ""
        elif c == "\\":
            j += 2
            continue
        elif c in "'\"":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return s[i + 1:j], j + 1
        j += 1
    return s[i + 1:], len(s)


def _respelt(raw: str, text: str) -> bool:
    """Whether a plain word (``curl``) was spelt with quotes or escapes inside it (``cu''rl``,
    ``c\\url``, ``"c"url``): more than quotes around it."""
    if not text or not re.match(r"^[A-Za-z0-9_./+-]+$", text) or raw == text:
        return False
    bare = raw[1:-1] if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"" else raw
    return bare != text


def _strip_prefix(words: list[str]) -> list[str]:
    """The command proper: keywords and ``sudo``/``env``/``exec``/``command`` wrappers off."""
    i = 0
    while i < len(words) and (words[i] in _KEYWORDS or words[i] in (
            "sudo", "exec", "command", "builtin", "nohup", "env", "-E", "-u", "--")):
        i += 1
    return words[i:]


def _quote_text(text: str) -> str:
    text = text.replace("\n", " ")  # one line: the view keeps the script's line numbers
    if text and _SAFE.match(text):
        return text
    if "$(" in text or "$" in text:
        return '"' + re.sub(r'(["\\`])', r"\\\1", text) + '"'
    return shlex.quote(text)


def parse(text: str) -> list[Command]:
    """The simple commands of a script, words expanded as far as the script itself says."""
    r = _Reader(text, Env())
    try:
        r.run()
    except RecursionError:
        return []
    return sorted(r.commands, key=lambda c: c.line)


def view(text: str) -> str:
    """The script's commands with their words as the shell reads them, at the script's lines."""
    return rewritten(text)[0]


def rewritten(text: str) -> tuple[str, frozenset[int]]:
    """:func:`view`, and the 1-based lines where it says something else than the script (a
    word resolved or respelt, ``eval``, a pipeline joined from continued lines)."""
    lines = split_lines(text)
    r = _Reader(text, Env())
    try:
        r.run()
    except RecursionError:
        return "".join("\n" for _ in lines), frozenset()
    out = [""] * max(len(lines), max(list(r.out) + list(r.keep) + [0]))
    for n, parts in r.out.items():
        out[n - 1] = " ".join(p for p in parts if p)
    for n, ln in r.keep.items():
        out[n - 1] = ln
    shown = out[:max(len(lines), 1)] if lines else []
    return "".join(ln + "\n" for ln in shown), frozenset(n for n in r.rewritten
                                                            if n <= len(lines))
