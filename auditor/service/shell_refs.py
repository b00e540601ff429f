"""Which variables of an ``Exec*=`` line end up on a command line, and which stay inside a shell.

systemd expands ``$VAR`` and ``${VAR}`` of an ``Exec*=`` word into the program's argv; ``$$`` is a
literal ``$``. A program that is not a shell receives ``$${VLLM_API_KEY}`` as the plain text
``${VLLM_API_KEY}``: no secret. A shell's ``-c`` script expands it itself, and the value reaches a
command line only as an argument of a command the shell runs (``vllm --api-key "$K"``); inside
builtins that never start a process (``export``, ``read``, ``test``, an assignment) it stays in
the shell. ``echo``/``printf`` write it to the journal, so they count as a leak too.
"""

from __future__ import annotations

import re
import shlex

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_SYSTEMD_REF = re.compile(rf"\$\$|\$\{{({_NAME})\}}|\$({_NAME})")
_SHELL_REF = re.compile(rf"\$\{{?({_NAME})")
_ASSIGNMENT = re.compile(rf"{_NAME}=")
#: builtins that keep their arguments inside the shell process
QUIET_BUILTINS = frozenset({"export", "readonly", "local", "declare", "typeset", "test", "[",
                            "[[", "]]", "read", ":", "true", "false", "unset", "set", "shift",
                            "exit", "return", "wait", "umask", "cd"})
#: words that run the next word as the command
PREFIX_WORDS = frozenset({"exec", "command", "nohup", "env", "time", "builtin"})
_SEPARATORS = frozenset({";", "&", "&&", "|", "||", "(", ")", ";;", "\n", "{", "}", "!", "do",
                         "then", "else", "elif", "fi", "done", "if", "while", "until"})
_REDIRECTS = re.compile(r"^[0-9]*[<>]+&?$")


def systemd_refs(word: str) -> list[str]:
    """The variables systemd itself expands in an ``Exec*=`` word (``$$`` is a literal ``$``)."""
    return [m.group(1) or m.group(2) for m in _SYSTEMD_REF.finditer(word) if m.group(0) != "$$"]


def shell_argv_refs(script: str) -> list[str] | None:
    """The variables a shell script puts on the argv of a command it runs (or prints); None when
    the script cannot be split (then every variable it names must be assumed to)."""
    lexer = shlex.shlex(script, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        tokens = list(lexer)
    except ValueError:
        return None
    refs: list[str] = []
    start = True  # the next word names a command
    quiet = False  # the current command is a quiet builtin
    redirect = False
    for token in tokens:
        if token in _SEPARATORS or set(token) <= set(";&|()"):
            start, quiet, redirect = True, False, False
            continue
        if _REDIRECTS.match(token):
            redirect = True
            continue
        if redirect:  # a file name: opened by the shell, never on an argv
            redirect = False
            continue
        if start:
            if _ASSIGNMENT.match(token):
                continue  # NAME=value before the command: environment, not argv
            if token in PREFIX_WORDS:
                continue
            start = False
            quiet = token in QUIET_BUILTINS
        if not quiet:
            refs += _SHELL_REF.findall(token)
    return refs
