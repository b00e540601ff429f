"""A file downloaded and then run, with no digest check between: a download-and-run in two steps.

``curl -o /tmp/i.sh URL`` then ``sh /tmp/i.sh`` (or ``ADD URL /i.sh`` then ``RUN sh /i.sh`` in a
Dockerfile, whose shell reading writes the ADD as that curl) runs whatever the server sent, as
``curl URL | sh`` does; the pipe rules do not see it because the two steps are separate commands.
:func:`findings` reads the script's commands with :mod:`auditor.scan.shellwords` (so spellings
and variables are resolved) and reports each run of a downloaded file that no ``sha256sum -c``
(or ``shasum``, ``gpg --verify``, ``cosign verify``, ``minisign``) checked after the download.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass

from auditor.model import Category, Severity
from auditor.scan import shellwords
from auditor.scan.interface import RawFinding

RULE = "network.builtin.download-then-run"
_URL = re.compile(r"^(?:https?|ftp)://", re.I)
_WRAPPERS = frozenset({"sudo", "exec", "command", "nohup", "env", "time", "nice", "-E", "--",
                       "timeout", "doas"})
_INTERPRETERS = re.compile(r"^(?:(?:ba|da|z|k|a)?sh|busybox|python[0-9.]*|perl|ruby|node|php|"
                           r"source|\.|bun|deno|pwsh|tclsh|lua)$")
_DIGEST = re.compile(r"^(?:sha(?:1|224|256|384|512)sum|shasum|b2sum|md5sum|cksum|gpg|gpgv|"
                     r"cosign|minisign|signify|openssl)$")


@dataclass(frozen=True)
class _Download:
    line: int
    path: str
    url: str


def findings(text: str) -> Iterator[RawFinding]:
    downloads: list[_Download] = []
    reported: set[int] = set()
    for cmd in shellwords.parse(text):
        words = _strip(list(cmd.words))
        if not words:
            continue
        prog = posixpath.basename(words[0])
        if _DIGEST.match(prog):
            downloads = [d for d in downloads if not _mentions(words, d.path) and not (
                {"-c", "--check", "--verify", "verify", "verify-blob"} & set(words))]
            continue
        got = _downloaded(prog, words, cmd.outputs)
        if got is not None:
            path, url = got
            downloads.append(_Download(cmd.line, path, url))
            continue
        ran = _run_target(prog, words) or _from_path(words[0], downloads)
        if ran is None:
            continue
        if "/" not in ran and not _INTERPRETERS.match(prog):
            continue
        for d in downloads:
            if _same(ran, d.path) and cmd.line not in reported:
                reported.add(cmd.line)
                yield RawFinding(
                    rule=RULE, category=Category.NETWORK, severity=Severity.CRITICAL,
                    line=cmd.line, end_line=cmd.line,
                    message=f"{ran} was downloaded from {d.url[:120]} (line {d.line}) and is run "
                            "here with no digest check in between",
                    help="Whatever the server sent at build or start time runs with the script's "
                         "rights, as with `curl | sh`. Check the file against a sha256 written in "
                         "the reviewed script (sha256sum -c, ADD --checksum) before running it, "
                         "or vendor it.")
                break


def _strip(words: list[str]) -> list[str]:
    i = 0
    while i < len(words) and (words[i] in _WRAPPERS or re.match(r"^[A-Za-z_]\w*=", words[i])
                              or words[i] in ("if", "then", "else", "do", "!", "{", "(")):
        i += 1
    return words[i:]


def _downloaded(prog: str, words: list[str], outputs: tuple[str, ...]) -> tuple[str, str] | None:
    """(file written, URL) when the command downloads a URL to a file."""
    url = next((w for w in words[1:] if _URL.match(w)), None)
    if url is None or prog not in ("curl", "wget", "aria2c", "fetch", "http", "axel"):
        return None
    name = posixpath.basename(url.split("?", 1)[0].split("#", 1)[0].rstrip("/")) or "index.html"
    out = (_curl_output(words, name) if prog == "curl" else
           _wget_output(words, name) if prog == "wget" else
           _option(words, ("-o", "--out", "--output")))
    if out is None and outputs:
        out = outputs[-1]
    if out is None and prog in ("aria2c", "axel"):
        out = name
    if out is None or out == "-" or out.startswith("/dev/"):
        return None
    return out, url


def _option(words: list[str], names: tuple[str, ...]) -> str | None:
    """The value of the last of the options ``names`` (``-o F``, ``--output=F``, ``-oF``)."""
    value: str | None = None
    for k, w in enumerate(words):
        for n in names:
            if w == n and k + 1 < len(words):
                value = words[k + 1]
            elif n.startswith("--") and w.startswith(n + "="):
                value = w[len(n) + 1:]
            elif not n.startswith("--") and w.startswith(n) and len(w) > len(n):
                value = w[len(n):]
    return value


def _curl_output(words: list[str], name: str) -> str | None:
    out = _option(words, ("-o", "--output"))
    for k, w in enumerate(words):  # short options run together: -fsSLo FILE, -fsSLO
        if re.match(r"^-[A-Za-z]+$", w) and len(w) > 2:
            if w.endswith("o") and k + 1 < len(words):
                out = words[k + 1]
            elif "O" in w:
                out = out or name
    if out is None and ("-O" in words or "--remote-name" in words):
        out = name
    return out


def _wget_output(words: list[str], name: str) -> str:
    out = _option(words, ("-O", "--output-document"))
    for k, w in enumerate(words):  # short options run together: -qO FILE, -qO-
        m = re.match(r"^-[A-Za-z]*O(.*)$", w)
        if m and len(w) > 2 and not w.startswith("-O"):
            out = m.group(1) or (words[k + 1] if k + 1 < len(words) else None)
    if out is not None:
        return out
    folder = _option(words, ("-P", "--directory-prefix"))
    return posixpath.join(folder, name) if folder else name


def _run_target(prog: str, words: list[str]) -> str | None:
    """The file a command runs: the program itself, or an interpreter's script argument."""
    if _INTERPRETERS.match(prog):
        for w in words[1:]:
            if w in ("-c", "-e", "-m"):
                return None
            if not w.startswith("-"):
                return w
        return None
    return words[0] if "/" in words[0] else None


def _from_path(word: str, downloads: list[_Download]) -> str | None:
    """A bare command name that a download put in a ``bin`` folder (found on PATH)."""
    for d in downloads:
        folder, name = posixpath.split(d.path)
        if name == word and folder.rstrip("/").endswith("bin"):
            return d.path
    return None


def _mentions(words: list[str], path: str) -> bool:
    return any(_same(w, path) or posixpath.basename(path) in w for w in words)


def _same(a: str, b: str) -> bool:
    a, b = a.removeprefix("./"), b.removeprefix("./")
    if a == b:
        return True
    if not a.startswith("/") or not b.startswith("/"):
        return posixpath.basename(a) == posixpath.basename(b) and bool(posixpath.basename(a))
    return posixpath.normpath(a) == posixpath.normpath(b)
