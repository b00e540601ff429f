"""Install and deploy steps in the docs: shell code blocks of Markdown and reStructuredText files.

A fork's README says how to install and run it (``pip install`` a third-party build from a git
tag, ``docker pull`` an image nobody built from this tree, ``docker run -p 8000:8000 ... vllm
serve`` without a key); readers paste those lines into a shell. :func:`reading` writes the shell
code blocks of a ``.md``/``.rst`` file as one shell text at the file's own line numbers (every
other line blank), so the shell rules read them where they sit:

- Markdown fences (````` and ``~~~``, indented inside list items too) labelled ``sh``, ``bash``,
  ``shell``, ``zsh``, ``console``, ``shell-session``, ``terminal``..., and unlabelled fences;
- reStructuredText ``.. code-block::``/``.. code::``/``.. sourcecode::``/``.. prompt::`` with a
  shell language, and ``::`` literal blocks (a ``.. highlight::`` sets their language).

In a block whose language is a shell and that shows no prompt, every line is a command; in a
session (``console``...), an unlabelled block, a literal block or a shell block that does show
prompts, only the lines after a prompt (``$ ``, ``(venv) $ ``, ``user@host:~$ ``) are, with their
``\\`` continuations; the rest is output. A ``<placeholder>`` is a value, not a redirection.

A heredoc a command opens carries its body, up to its end line, into the reading. What cannot
be read as shell is never silently dropped: a command whose quote nothing in its block closes, or
whose heredoc has no end line in its block, is left out of the reading (it would swallow the
blocks after it) and :func:`unreadable` names it; :class:`DocsScanner` reports those lines not
checked, so a docs file the series changed there is INCOMPLETE, as any file that does not parse.

Docs are read, not run: :func:`ceiling` caps the action of every finding on a docs file at
``review`` (a human reads the instruction; the audit does not fail on prose).
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from auditor import __version__
from auditor.lines import line_ranges, split_lines
from auditor.model import Action
from auditor.scan.dockerfile import Reading
from auditor.scan.interface import FileError, Scanner, ScannerRun, ScanTarget

DOC_SUFFIXES = (".md", ".markdown", ".mdx", ".rst")
#: fence labels whose every line is a command (unless the block shows prompts)
_SCRIPT_LANGS = frozenset({"sh", "bash", "shell", "zsh", "ksh", "dash", "ash", "shellscript",
                           "bash-script", "posix"})
#: fence labels of a terminal session: prompts and output
_SESSION_LANGS = frozenset({"console", "shell-session", "shellsession", "sh-session",
                            "bash-session", "terminal", "term", "shellconsole", "zsh-session"})
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*\{?\s*\.?([\w+-]*)")
_PROMPT = re.compile(r"^\s*(?:\([^()\s]{1,40}\)\s*)?(?:[\w.-]+@[\w.-]+(?::[^\s$#]*)?\s?)?"
                     r"[$%❯]\s+(?=\S)")
_RST_DIRECTIVE = re.compile(r"^(\s*)\.\.\s+(code-block|code|sourcecode|prompt)::\s*([\w+-]*)")
_RST_HIGHLIGHT = re.compile(r"^\s*\.\.\s+highlight::\s*([\w+-]+)")
_RST_OPTION = re.compile(r"^\s*:[\w-]+:")
_PLACEHOLDER = re.compile(r"<[A-Za-z_][\w .:/-]{0,60}>")
_COMMAND_START = re.compile(r"^(?:[\w./~$!}]|[\[{]\s+\S|\\|\(\s*[\w./-]+\s)")
_QUOTED = re.compile(r"'[^']*'|\"(?:\\.|[^\"\\])*\"")
# a parenthesis after a word (``Time (%)``): output, not shell (``$(``, ``<(``, ``=(``, a
# subshell after ``;``/``&&``/``|`` and ``name() {`` are the shell's own)
_STRAY_PAREN = re.compile(r"(?<![$<>=(])(?<![;&|]\s)(?<![;&|])\((?!\))")
_CEILING = Action.REVIEW
_MAX_QUOTED = 60  # lines a quoted argument may span
_HEREDOC_WORD = re.compile(r"-?[ \t]*(?:'([^'\n]+)'|\"([^\"\n]+)\"|\\?([A-Za-z0-9_.+-]+))")


@dataclass(frozen=True)
class Unreadable:
    """Lines of a shell block that cannot be read as shell (1-based), and why."""

    line: int
    end_line: int
    why: str


@dataclass
class _Sink:
    lines: list[str]
    problems: list[Unreadable] = field(default_factory=list)


def is_doc(path: str) -> bool:
    return posixpath.basename(path).lower().endswith(DOC_SUFFIXES)


def ceiling(path: str, action: Action) -> Action:
    """The action a finding on ``path`` may have: at most ``review`` on a docs file."""
    if is_doc(path) and action is Action.BLOCK:
        return _CEILING
    return action


def reading(path: str, text: str) -> Reading | None:
    """The shell reading of a docs file's shell code blocks, or None when it has none."""
    sink = _read(path, text)
    if sink is None:
        return None
    carried = [n + 1 for n, ln in enumerate(sink.lines) if ln.strip()]
    if not carried:
        return None
    return Reading("bash", "".join(ln + "\n" for ln in sink.lines), line_ranges(carried))


def unreadable(path: str, text: str) -> list[Unreadable]:
    """The commands of a docs file's shell blocks that cannot be read as shell."""
    sink = _read(path, text)
    return [] if sink is None else sink.problems


def _read(path: str, text: str) -> _Sink | None:
    if not is_doc(path):
        return None
    lines = split_lines(text)
    sink = _Sink([""] * len(lines))
    if posixpath.basename(path).lower().endswith(".rst"):
        _rst(lines, sink)
    else:
        _markdown(lines, sink)
    return sink


class DocsScanner(Scanner):
    """Reports the shell-block lines of docs files that cannot be read (:func:`unreadable`) as
    not checked; the blocks themselves are read by the shell rules through the derived
    reading."""

    name = "docs"

    def version(self) -> str:
        return f"{__version__}+docs1"

    def options_key(self) -> str:
        return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()

    def accepts(self, target: ScanTarget) -> bool:
        return is_doc(target.path) and not target.derived

    def scan(self, files: Sequence[ScanTarget], workdir: Path) -> ScannerRun:
        errors: dict[str, FileError] = {}
        for t in files:
            problems = unreadable(t.path, t.text)
            if problems:
                shown = "; ".join(f"line {p.line}: {p.why}" for p in problems[:6])
                more = f" (and {len(problems) - 6} more)" if len(problems) > 6 else ""
                errors[t.key] = FileError(
                    f"docs: a shell block cannot be read as shell ({shown}{more})", lasting=True,
                    lines=tuple((p.line, p.end_line) for p in problems))
        return ScannerRun(findings={t.key: () for t in files}, errors=errors)


def _kind(lang: str) -> str | None:
    """``script``, ``session`` or None (not shell) for a block's language label."""
    lang = lang.lower()
    if lang in _SCRIPT_LANGS:
        return "script"
    if lang in _SESSION_LANGS or lang == "":
        return "session"
    return None


def _markdown(lines: list[str], out: _Sink) -> None:
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence = len(m.group(1)), m.group(2)
        end = i + 1
        while end < len(lines) and not (lines[end].strip().startswith(fence)
                                        and not lines[end].strip().strip(fence[0])):
            end += 1
        kind = _kind(m.group(3))
        if kind is not None:
            body = [(n, _dedent(lines[n], indent)) for n in range(i + 1, min(end, len(lines)))]
            _block(body, kind, out)
        i = end + 1


def _rst(lines: list[str], out: _Sink) -> None:
    default = "session"  # a literal block: only its prompted lines are commands
    i = 0
    while i < len(lines):
        line = lines[i]
        h = _RST_HIGHLIGHT.match(line)
        if h:
            default = _kind(h.group(1)) or "none"
            i += 1
            continue
        d = _RST_DIRECTIVE.match(line)
        if d:
            kind = _kind(d.group(3) or "none")
            if d.group(2) == "prompt" and kind is not None:  # the directive shows the prompts
                kind = "script"
            i = _rst_body(lines, i + 1, len(d.group(1)), kind, out)
            continue
        if line.rstrip().endswith("::") and not line.lstrip().startswith(".."):
            indent = len(line) - len(line.lstrip())
            i = _rst_body(lines, i + 1, indent, None if default == "none" else default, out)
            continue
        i += 1


def _rst_body(lines: list[str], i: int, indent: int, kind: str | None, out: _Sink) -> int:
    """The indented block after a directive or ``::`` (options skipped); the index after it."""
    while i < len(lines) and _RST_OPTION.match(lines[i]) and _indent(lines[i]) > indent:
        i += 1
    body: list[tuple[int, str]] = []
    inner: int | None = None
    while i < len(lines):
        line = lines[i]
        if line.strip():
            if _indent(line) <= indent:
                break
            inner = _indent(line) if inner is None else min(inner, _indent(line))
        body.append((i, line))
        i += 1
    if kind is not None and inner is not None:
        _block([(n, ln[inner:]) for n, ln in body], kind, out)
    return i


def _block(body: list[tuple[int, str]], kind: str, out: _Sink) -> None:
    """Put a block's commands at their lines (0-based ``n``). A quote left open on a line
    carries the command over the next lines (``curl -d '{`` ... ``}'``) when one of them closes
    it, and a heredoc its body up to its end line; a command whose quote or heredoc nothing in
    the block closes is left out and reported (:class:`Unreadable`)."""
    prompted = kind == "session" or any(_PROMPT.match(ln) for _n, ln in body)
    continued = False
    logical = ""  # the command so far, for its quotes
    pending: list[tuple[int, str]] = []  # its lines so far
    k = 0
    while k < len(body):
        n, line = body[k]
        k += 1
        if continued or not prompted:
            text: str | None = line
        else:
            p = _PROMPT.match(line)
            text = line[p.end():] if p else None
        if text is None or (not continued and not _plausible(text)):
            continued, logical, pending = False, "", []  # output pasted into the block
            continue
        joined = f"{logical}\n{text}" if continued else text.strip()
        taken = [(n, text)]
        if not _quotes_closed(joined):
            span = _closing(joined, body[k:k + _MAX_QUOTED])
            if span == 0:
                first = pending[0][0] if pending else n
                out.problems.append(Unreadable(first + 1, n + 1, "a quote opened here is not "
                                                                 "closed in its block"))
                for m, _ln in pending:
                    out.lines[m] = ""
                continued, logical, pending = False, "", []
                continue
            taken += body[k:k + span]
            joined += "".join("\n" + ln for _m, ln in body[k:k + span])
            k += span
        for m, ln in taken:
            out.lines[m] = _PLACEHOLDER.sub("${DOC_VALUE}", ln)
        pending += taken
        continued = taken[-1][1].rstrip().endswith("\\")
        logical = joined if continued else ""
        if continued:
            continue
        k, closed = _heredoc_bodies(joined, body, k, out)
        if not closed:
            first = pending[0][0]
            out.problems.append(Unreadable(first + 1, body[-1][0] + 1, "a heredoc opened here "
                                                                       "has no end line in its "
                                                                       "block"))
            for m, _ln in pending:
                out.lines[m] = ""
            return  # the rest of the block is the heredoc's, to the shell
        pending = []


def _heredoc_bodies(command: str, body: list[tuple[int, str]], k: int,
                    out: _Sink) -> tuple[int, bool]:
    """Carry the bodies of the heredocs ``command`` opens (the block's lines from ``k``) into
    the reading; the index after the last end line, and whether every heredoc ended."""
    for delim, tabs in _heredocs(command):
        j = k
        while j < len(body) and (body[j][1].lstrip("\t") if tabs else body[j][1]).rstrip() != delim:
            j += 1
        if j == len(body):
            return k, False
        for m, ln in body[k:j + 1]:
            out.lines[m] = ln
        k = j + 1
    return k, True


def _heredocs(text: str) -> list[tuple[str, bool]]:
    """The end words of the heredocs a command opens (``<<EOF``, ``<<-'END'``), outside quotes;
    and whether leading tabs are stripped (``<<-``)."""
    out: list[tuple[str, bool]] = []
    quote = ""
    k = 0
    while k < len(text):
        c = text[k]
        if quote:
            if c == quote:
                quote = ""
            elif c == "\\" and quote == '"':
                k += 1
        elif c == "\\":
            k += 1
        elif c in "'\"":
            quote = c
        elif c == "#" and (k == 0 or text[k - 1] in " \t"):
            break
        elif text.startswith("<<", k) and not text.startswith("<<<", k) and (
                k == 0 or text[k - 1] != "<"):
            m = _HEREDOC_WORD.match(text, k + 2)
            word = (m.group(1) or m.group(2) or m.group(3)) if m else ""
            # ``$((1<<3))`` shifts: a digit on either side is arithmetic, not a heredoc
            if m and not word.isdigit() and not (k and text[k - 1].isdigit()):
                out.append((word, text[k + 2:k + 3] == "-"))
                k = m.end()
                continue
        k += 1
    return out


def _closing(text: str, rest: list[tuple[int, str]]) -> int:
    """How many of the lines ``rest`` it takes to close the quote ``text`` leaves open (0: none
    of them does)."""
    for j in range(1, len(rest) + 1):
        text += "\n" + rest[j - 1][1]
        if _quotes_closed(text):
            return j
    return 0


def _plausible(line: str) -> bool:
    """Whether a line of a block can start a shell command: a word (a name, a path, an
    assignment, a variable) first, no ``(`` where the shell cannot take one, no redirection
    without its file."""
    stripped = _PLACEHOLDER.sub("${DOC_VALUE}", line.strip())
    if not stripped or stripped.startswith("#"):
        return True
    if not _COMMAND_START.match(stripped):
        return False
    bare = _QUOTED.sub("''", stripped)
    if bare.endswith((">", "<")) and not bare.endswith(("<>",)):
        return False  # a redirection with no file: ``<vllm::kernel<bool>>`` output
    return not _STRAY_PAREN.search(bare[1:] if bare.startswith("(") else bare)


def _quotes_closed(text: str) -> bool:
    quote = ""
    k = 0
    while k < len(text):
        c = text[k]
        if quote == "'":
            quote = "" if c == "'" else quote
        elif c == "\\":
            k += 1
        elif quote == '"':
            quote = "" if c == '"' else quote
        elif c in "'\"":
            quote = c
        elif c == "#" and (k == 0 or text[k - 1] in " \t"):
            break  # a comment
        k += 1
    return not quote


def _dedent(line: str, indent: int) -> str:
    k = 0
    while k < indent and k < len(line) and line[k] in " \t":
        k += 1
    return line[k:]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())
