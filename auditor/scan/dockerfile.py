"""A Dockerfile splitter and its line-preserving shell reading, so the shell rules read every RUN.

Semgrep's Dockerfile parser gives up on real files (``ARG A B``, multi-line ``RUN --mount=...``,
heredocs), and the rules of the lines it skips are lost. :func:`split` finds the instructions
themselves, each with its 1-based line range: ``\\`` continuations (or the character of an
``# escape=`` directive), comment and empty lines inside an instruction (Docker drops them),
heredocs (``RUN <<EOF``, ``RUN bash - <<'BASH'``, ``<<-EOF``), the ``--mount=``/``--network=``/
``--security=`` flags and the JSON (exec) form.

:func:`shell_reading` writes what runs as shell text at the same line numbers (every other line
blank), as the CUDA shim does for ``.cu`` files: each RUN's command (flags blanked, a heredoc
script as its own lines), the shell form of CMD/ENTRYPOINT/HEALTHCHECK, and each ENV/ARG as
``export NAME=value``. A heredoc fed to a Python interpreter becomes a Python reading instead, and
so does every shell-form command of a stage whose ``SHELL`` is a Python interpreter (``SHELL
["python3", "-c"]``: the command is a Python program); under another interpreter (PowerShell) no
reading carries it. ``ADD URL DEST`` without ``--checksum`` is written as the ``curl -o DEST URL``
it amounts to, so running the fetched file later is running a download, and ``FROM IMAGE`` (not
an earlier stage) as the ``docker pull IMAGE`` it amounts to, so an image not pinned by a digest
is seen (:mod:`auditor.scan.fetchrun`).
``covers`` lists the lines whose meaning a reading carries (instructions it translated, comments
and blank lines); FROM, COPY, ADD and the like are left to the Dockerfile rules.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from dataclasses import dataclass

from auditor.scan.files import split_lines

#: instructions whose text runs in a shell (shell form), or sets the environment
SHELL_INSTRUCTIONS = frozenset({"RUN", "CMD", "ENTRYPOINT", "HEALTHCHECK"})
ENV_INSTRUCTIONS = frozenset({"ENV", "ARG"})
_DIRECTIVE_RE = re.compile(r"^\s*#\s*([a-zA-Z][a-zA-Z0-9_-]*)\s*=\s*(.*?)\s*$")
_KEYWORD_RE = re.compile(r"^\s*([A-Za-z]+)(?=\s|$)")
_FLAG_RE = re.compile(r"--[a-z][a-z0-9-]*(?:=(?:\"[^\"]*\"|'[^']*'|\S)*)?")
_HEREDOC_RE = re.compile(r"<<(-?)(?:\"([A-Za-z0-9_.]+)\"|'([A-Za-z0-9_.]+)'|([A-Za-z0-9_.]+))")
_SHELLS = frozenset({"sh", "bash", "dash", "ash", "zsh", "ksh"})
_PYTHON_RE = re.compile(r"^python[0-9.]*$")


@dataclass(frozen=True)
class Heredoc:
    """One here-document: its delimiter and the 1-based lines of its body and terminator."""

    delimiter: str
    strip_tabs: bool  # ``<<-``
    body_start: int  # first body line (== terminator when the body is empty)
    end: int  # the terminator's line (the file's last line when it is missing)


@dataclass(frozen=True)
class Instruction:
    """One instruction: its keyword, its line range (heredoc bodies included), its flags and the
    physical lines of the instruction itself (continuations, not heredoc bodies)."""

    keyword: str  # upper case
    start: int
    end: int
    head_end: int  # last line of the instruction proper (before any heredoc body)
    flags: tuple[str, ...]
    heredocs: tuple[Heredoc, ...]


@dataclass(frozen=True)
class Dockerfile:
    escape: str
    instructions: tuple[Instruction, ...]
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Reading:
    """A derived text at the Dockerfile's line numbers and the lines whose meaning it carries."""

    family: str  # "bash" or "python"
    text: str
    covers: tuple[tuple[int, int], ...]


def split(text: str) -> Dockerfile:
    """The instructions of a Dockerfile with their line ranges (never raises on odd input)."""
    lines = split_lines(text)
    escape, i = _directives(lines)
    out: list[Instruction] = []
    n = len(lines)
    while i < n:
        line = lines[i]
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            i += 1
            continue
        m = _KEYWORD_RE.match(line)
        keyword = m.group(1).upper() if m else ""
        start = i
        logical = [line[m.end():] if m else line]
        last = i  # the last line that holds text of the instruction
        continuing = _continues(line, escape)
        while continuing and i + 1 < n:
            i += 1
            nxt = lines[i].strip()
            if nxt.startswith("#") or not nxt:
                # Docker drops comment and empty lines inside an instruction and goes on
                logical.append("")
                continue
            logical.append(lines[i])
            last = i
            continuing = _continues(lines[i], escape)
        i = last
        head_end = i
        joined = " ".join(_strip_escape(part, escape) for part in logical)
        flags = _leading_flags(joined) if keyword in ("RUN", "COPY", "ADD", "FROM") else ()
        heredocs: list[Heredoc] = []
        if keyword in ("RUN", "COPY", "ADD") and "<<" in joined and not _is_json(joined, flags):
            heredocs, i = _heredocs(joined, lines, i)
        out.append(Instruction(keyword, start + 1, i + 1, head_end + 1, flags, tuple(heredocs)))
        i += 1
    return Dockerfile(escape, tuple(out), tuple(lines))


def _directives(lines: list[str]) -> tuple[str, int]:
    """The escape character the parser directives set, and the first line after them (they
    count only at the very top, before any other comment or instruction)."""
    escape = "\\"
    i = 0
    while i < len(lines):
        m = _DIRECTIVE_RE.match(lines[i])
        if not m:
            break
        if m.group(1).lower() == "escape" and m.group(2) in ("`", "\\"):
            escape = m.group(2)
        i += 1
    return escape, i


def _heredocs(joined: str, lines: list[str], i: int) -> tuple[list[Heredoc], int]:
    """The here-documents an instruction (whose head ends at line index ``i``) opens, and the
    index of the last line of the last body."""
    n = len(lines)
    heredocs: list[Heredoc] = []
    for hm in _HEREDOC_RE.finditer(joined):
        delim = hm.group(2) or hm.group(3) or hm.group(4)
        strip_tabs = hm.group(1) == "-"
        body_start = i + 1
        j = body_start
        while j < n:
            candidate = lines[j].lstrip("\t") if strip_tabs else lines[j]
            if candidate.rstrip("\r") == delim:
                break
            j += 1
        end = min(j, n - 1)
        heredocs.append(Heredoc(delim, strip_tabs, body_start + 1, end + 1))
        i = end
    return heredocs, i


def _continues(line: str, escape: str) -> bool:
    return line.rstrip().endswith(escape) and not line.strip().startswith("#")


def _strip_escape(part: str, escape: str) -> str:
    s = part.rstrip()
    return s[:-1] if s.endswith(escape) else part


def _leading_flags(joined: str) -> tuple[str, ...]:
    flags: list[str] = []
    pos = 0
    while True:
        while pos < len(joined) and joined[pos].isspace():
            pos += 1
        m = _FLAG_RE.match(joined, pos)
        if not m or (m.end() < len(joined) and not joined[m.end()].isspace()):
            return tuple(flags)
        flags.append(m.group())
        pos = m.end()


def _is_json(joined: str, flags: tuple[str, ...]) -> bool:
    return _json_args(joined, flags) is not None


def _json_args(joined: str, flags: tuple[str, ...]) -> list[str] | None:
    rest = joined.strip()
    for f in flags:
        rest = rest[len(f):].strip() if rest.startswith(f) else rest
    if not rest.startswith("["):
        return None
    try:
        value = json.loads(rest)
    except ValueError:
        return None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    return None


def readings(text: str) -> list[Reading]:
    """The shell reading (always) and a Python reading when a heredoc feeds Python."""
    df = split(text)
    n = len(df.lines)
    shell = [""] * n
    python = [""] * n
    shell_covers: list[tuple[int, int]] = []
    python_covers: list[tuple[int, int]] = []
    stage = _Stage()
    for ins in df.instructions:
        stage.see(df, ins, shell)
        runner = stage.runner
        if ins.keyword in ENV_INSTRUCTIONS:
            _env(df, ins, shell)
        elif ins.keyword in SHELL_INSTRUCTIONS and runner != "sh" and not _is_json(
                _instruction_text(df, ins), ins.flags):
            if runner == "python":  # the command is the program `python3 -c` is given
                _python_body(df, ins, python, python_covers)
            continue  # another interpreter: no reading of ours carries it
        elif ins.keyword in SHELL_INSTRUCTIONS:
            if not _command(df, ins, shell, python, python_covers):
                continue
        elif ins.keyword == "ONBUILD":
            _onbuild(df, ins, shell)
        else:
            continue
        shell_covers.append((ins.start, ins.end))
    inert = _inert_lines(df)
    # a heredoc fed to Python is the Python reading's, not the shell's
    python_lines = {n for a, b in python_covers for n in range(a, b + 1)}
    shell_lines = [(n, n) for a, b in shell_covers + inert for n in range(a, b + 1)
                   if n not in python_lines]
    out = [Reading("bash", _join(shell), _merge(shell_lines))]
    if python_covers:
        out.append(Reading("python", _join(python), _merge(python_covers)))
    return out


def shell_reading(text: str) -> Reading:
    """The shell reading of a Dockerfile (see the module docstring)."""
    return readings(text)[0]


def _join(lines: list[str]) -> str:
    return "".join(ln + "\n" for ln in lines)


def _inert_lines(df: Dockerfile) -> list[tuple[int, int]]:
    """Comments, blank lines and directives outside instructions: nothing there to check."""
    inside = [False] * len(df.lines)
    for ins in df.instructions:
        for k in range(ins.start - 1, ins.end):
            inside[k] = True
    return [(k + 1, k + 1) for k, ln in enumerate(df.lines)
            if not inside[k] and (not ln.strip() or ln.lstrip().startswith("#"))]


def _merge(ranges: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return tuple(out)


def _head_lines(df: Dockerfile, ins: Instruction) -> list[tuple[int, str]]:
    """(0-based index, text) of the instruction's own lines, keyword blanked, continuation
    characters turned into ``\\``, comment/empty lines inside it made bare continuations."""
    out: list[tuple[int, str]] = []
    for k in range(ins.start - 1, ins.head_end):
        ln = df.lines[k].rstrip("\r")
        if k == ins.start - 1:
            m = _KEYWORD_RE.match(ln)
            if m:
                ln = " " * m.end() + ln[m.end():]
        elif not ln.strip() or ln.lstrip().startswith("#"):
            out.append((k, "\\"))
            continue
        if df.escape != "\\" and ln.rstrip().endswith(df.escape) and k < ins.head_end - 1:
            body = ln.rstrip()
            ln = body[:-1] + "\\"
        out.append((k, ln))
    return out


def _blank_flags(head: list[tuple[int, str]], flags: tuple[str, ...]) -> list[tuple[int, str]]:
    """Blank each leading flag where it stands (flags may sit on continuation lines)."""
    out: list[tuple[int, str]] = []
    remaining = list(flags)
    for k, ln in head:
        while remaining:
            pos = ln.find(remaining[0])
            if pos < 0 or ln[:pos].strip() not in ("", "\\"):
                break
            ln = ln[:pos] + " " * len(remaining[0]) + ln[pos + len(remaining[0]):]
            remaining.pop(0)
        out.append((k, ln))
    return out


def _command(df: Dockerfile, ins: Instruction, shell: list[str], python: list[str],
             python_covers: list[tuple[int, int]]) -> bool:
    head = _blank_flags(_head_lines(df, ins), ins.flags)
    joined = " ".join(_strip_escape(df.lines[k], df.escape) for k in
                      range(ins.start - 1, ins.head_end)
                      if not df.lines[k].lstrip().startswith("#"))
    joined = joined.strip()[len(ins.keyword):]
    if ins.keyword == "HEALTHCHECK":
        cut = re.search(r"\bCMD\b", joined)
        if cut is None:  # HEALTHCHECK NONE
            return True
        joined = joined[cut.end():]
        k0, first = head[0]
        pos = re.search(r"\bCMD\b", first)
        if pos is not None:
            head[0] = (k0, " " * pos.end() + first[pos.end():])
    args = _json_args(joined, ins.flags)
    if args is not None:  # exec form: one command line at the first line
        if len(args) >= 3 and _base(args[0]) in _SHELLS and "-c" in args[1:-1]:
            shell[ins.start - 1] = args[args.index("-c") + 1].replace("\n", " ; ")
        else:
            shell[ins.start - 1] = shlex.join(args)
        return True
    if not ins.heredocs:
        for k, ln in head:
            shell[k] = ln
        return True
    _heredoc_command(df, ins, head, shell, python, python_covers)
    return True


def _heredoc_command(df: Dockerfile, ins: Instruction, head: list[tuple[int, str]],
                     shell: list[str], python: list[str],
                     python_covers: list[tuple[int, int]]) -> None:
    """A RUN with here-documents: what reads the body decides how it is read."""
    command = _HEREDOC_RE.sub(" ", " ".join(ln for _k, ln in head)).strip()
    words = command.replace("\\", " ").split()
    words = [w for w in words if not w.startswith(">") and w not in ("|",)]
    runner = _base(words[0]) if words else ""
    body_is_script = not words or (runner in _SHELLS and all(
        w == "-" or (w.startswith("-") and len(w) > 1) for w in words[1:]))
    body_is_python = bool(_PYTHON_RE.match(runner)) and all(
        w == "-" or (w.startswith("-") and len(w) > 1) for w in words[1:])
    for k, ln in head:
        shell[k] = _HEREDOC_RE.sub(lambda m: " " * len(m.group()), ln) if (
            body_is_script or body_is_python) else ln
    for doc in ins.heredocs:
        body = range(doc.body_start - 1, doc.end - 1)
        if body_is_script:
            for k in body:
                shell[k] = df.lines[k]
        elif body_is_python:
            for k in body:
                python[k] = df.lines[k].lstrip("\t") if doc.strip_tabs else df.lines[k]
            python_covers.append((doc.body_start, doc.end))
        else:  # a here-document another command reads: keep it as one, valid shell
            for k in body:
                shell[k] = df.lines[k]
            shell[doc.end - 1] = df.lines[doc.end - 1]


def _env(df: Dockerfile, ins: Instruction, shell: list[str]) -> None:
    head = _head_lines(df, ins)
    text = " ".join(_strip_escape(ln, "\\") for _k, ln in head).strip()
    if not text:
        return
    if ins.keyword == "ENV" and "=" not in text.split(None, 1)[0]:
        # the legacy form `ENV NAME value with spaces`
        name, _, value = text.partition(" ")
        shell[ins.start - 1] = f"export {name}={shlex.quote(value.strip())}"
        return
    k0, first = head[0]
    shell[k0] = "export" + first[min(len(first), len(ins.keyword)):] if first[
        :len(ins.keyword)].strip() == "" else "export " + first
    for k, ln in head[1:]:
        shell[k] = ln


def _onbuild(df: Dockerfile, ins: Instruction, shell: list[str]) -> None:
    first = df.lines[ins.start - 1]
    m = re.match(r"^\s*ONBUILD\s+RUN\b", first, re.IGNORECASE)
    if not m:
        return
    for k, ln in _head_lines(df, ins):
        shell[k] = (" " * m.end() + first[m.end():]) if k == ins.start - 1 else ln


class _Stage:
    """What a build stage's earlier instructions set: the ``SHELL`` runner and the ``WORKDIR``;
    an ``ADD`` of a URL is written to the shell reading as the download it is."""

    def __init__(self) -> None:
        self.runner = "sh"
        self.workdir = "/"
        self.stages: set[str] = set()

    def see(self, df: Dockerfile, ins: Instruction, shell: list[str]) -> None:
        if ins.keyword == "FROM":
            self.runner, self.workdir = "sh", "/"
            self._base_image(df, ins, shell)
        elif ins.keyword == "SHELL":
            self.runner = _runner(_instruction_text(df, ins))
        elif ins.keyword == "WORKDIR":
            self.workdir = posixpath.join(self.workdir,
                                          _instruction_text(df, ins).strip().strip("\"'"))
        elif ins.keyword == "ADD":
            _fetch(df, ins, shell, self.workdir)


    def _base_image(self, df: Dockerfile, ins: Instruction, shell: list[str]) -> None:
        """``FROM IMAGE``: the pull it is (an earlier stage and ``scratch`` are no image)."""
        words = [w for w in _instruction_text(df, ins).split() if w not in ins.flags]
        if not words:
            return
        image = words[0]
        if len(words) >= 3 and words[1].lower() == "as":
            self.stages.add(words[2].lower())
        if image.lower() not in self.stages and image.lower() != "scratch":
            word = image if re.fullmatch(r"[\w./:@${}-]+", image) else shlex.quote(image)
            shell[ins.start - 1] = f"docker pull {word}"


def _instruction_text(df: Dockerfile, ins: Instruction) -> str:
    """The instruction's own text after its keyword, continuations joined."""
    joined = " ".join(_strip_escape(df.lines[k], df.escape) for k in
                      range(ins.start - 1, ins.head_end)
                      if not df.lines[k].lstrip().startswith("#"))
    m = _KEYWORD_RE.match(joined)
    return joined[m.end():] if m else joined


def _runner(shell_text: str) -> str:
    """What a ``SHELL ["prog", ...]`` runs commands with: ``sh`` (a POSIX shell), ``python``, or
    ``other`` (PowerShell, cmd, node ...)."""
    args = _json_args(shell_text, ())
    if not args:
        return "sh"
    words = args[1:] if _base(args[0]) == "env" and len(args) > 1 else args
    prog = _base(words[0])
    if prog in _SHELLS:
        return "sh"
    return "python" if _PYTHON_RE.match(prog) else "other"


def _python_body(df: Dockerfile, ins: Instruction, python: list[str],
                 python_covers: list[tuple[int, int]]) -> None:
    """A shell-form command under ``SHELL ["python3", "-c"]``: Python, on the first line."""
    text = _instruction_text(df, ins)
    for f in ins.flags:
        text = text.replace(f, " ", 1)
    if ins.keyword == "HEALTHCHECK":
        cut = re.search(r"\bCMD\b", text)
        if cut is None:
            return
        text = text[cut.end():]
    if ins.heredocs:
        text = _HEREDOC_RE.sub(" ", text)
        for doc in ins.heredocs:
            for k in range(doc.body_start - 1, doc.end - 1):
                python[k] = df.lines[k].lstrip("\t") if doc.strip_tabs else df.lines[k]
    if text.strip():
        python[ins.start - 1] = text.strip()
    python_covers.append((ins.start, ins.end))


def _fetch(df: Dockerfile, ins: Instruction, shell: list[str], workdir: str) -> None:
    """``ADD URL DEST``: the download it is, written as the shell command that does the same
    (so what later runs the fetched file is seen as running a download)."""
    text = _instruction_text(df, ins)
    args = _json_args(text, ins.flags)
    if args is None:
        rest = text
        for f in ins.flags:
            rest = rest.replace(f, " ", 1)
        try:
            args = shlex.split(rest)
        except ValueError:
            args = rest.split()
    if len(args) < 2:
        return
    *sources, dest = args
    if any(f.startswith("--checksum=") for f in ins.flags):
        return  # pinned by its digest: Docker checks it before anything runs it
    cmds: list[str] = []
    for src in sources:
        if not re.match(r"^(?:https?|ftp)://", src):
            continue
        name = posixpath.basename(src.split("?", 1)[0].rstrip("/")) or "download"
        target = dest + name if dest.endswith("/") else dest
        target = posixpath.join(workdir, target)
        cmds.append(f"curl -fsSL -o {shlex.quote(target)} {shlex.quote(src)}")
    if cmds:
        shell[ins.start - 1] = " && ".join(cmds)


def _base(word: str) -> str:
    return word.rsplit("/", 1)[-1]
