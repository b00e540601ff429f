"""The server's command line read the way the engine's argument parser reads it.

vLLM parses ``vllm serve`` with argparse (its ``FlexibleArgumentParser``), so a word stands for an
option when argparse would take it as one:

- ``--opt value`` and ``--opt=value``; the last occurrence wins (argparse stores each in turn);
- an abbreviation: argparse's ``allow_abbrev`` takes any prefix of a long option (``--ho`` for
  ``--host``), also before ``=``. A prefix shared with another option is an argparse error (the
  server does not start), so a prefix of an option we look for is read as that option unless it is
  exactly another known option;
- vLLM turns ``_`` into ``-`` in the option name first (``--api_key`` is ``--api-key``);
- ``--`` ends the options: later words are positional;
- a word with a space and no ``=`` is positional (argparse never reads it as an option);
- ``--config FILE`` pulls more options from a YAML file that only the command line overrides.

llama.cpp's parser is stricter (exact names, ``--opt value``): a spelling only argparse accepts
makes llama-server refuse to start, so reading every command line as argparse does never misses
what a server that starts will use.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "busybox"})
CONFIG_OPTION = "--config"
_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


@dataclass(frozen=True)
class OptionUse:
    """One word (or two) that the parser reads as ``option``."""

    option: str  # the option it stands for, e.g. "--host"
    written: str  # the word as written, e.g. "--ho=0.0.0.0"
    value: str | None  # None: no value follows
    index: int  # of the word in the argv read
    in_shell: bool = False  # inside a ``sh -c`` script: its commands cannot be told apart


def _option_name(word: str) -> str:
    """The option part of ``word`` after vLLM's ``_`` to ``-`` rewrite (up to ``=`` and ``.``)."""
    key = word.split("=", 1)[0]
    head, dot, tail = key[2:].partition(".")
    return "--" + head.replace("_", "-") + dot + tail


def _takes_word_as_value(word: str) -> bool:
    """Whether argparse would consume ``word`` as the value of the option before it."""
    if not word.startswith("-") or word == "-":
        return True
    if _NEGATIVE_NUMBER.match(word):
        return True
    return " " in word and "=" not in word


def _stands_for(name: str, wanted: Sequence[str], known: frozenset[str]) -> str | None:
    if name in wanted:
        return name
    if name in known or len(name) <= 2:
        return None  # exactly another option, or a bare "--"
    hits = [o for o in wanted if o.startswith(name)]
    return hits[0] if hits else None


def option_uses(argv: Sequence[str], wanted: Sequence[str], *,
                known: Iterable[str] = (), in_shell: bool = False,
                strict: bool = False) -> list[OptionUse]:
    """Every use of the long options ``wanted`` in ``argv`` (the words after the program), in
    order. ``known``: other options of the engine, which an exact spelling stands for instead.
    ``strict``: read on past ``--`` too (for words whose place on the final line is not known)."""
    known_set = frozenset(known)
    uses: list[OptionUse] = []
    for i, word in enumerate(argv):
        if word == "--" and not (in_shell or strict):
            break
        if not word.startswith("--") or word == "--":
            continue
        if "=" not in word and " " in word:
            continue
        option = _stands_for(_option_name(word), wanted, known_set)
        if option is None:
            continue
        if "=" in word:
            value: str | None = word.split("=", 1)[1]
        elif i + 1 < len(argv) and _takes_word_as_value(argv[i + 1]):
            value = argv[i + 1]
        else:
            value = None
        uses.append(OptionUse(option, word, value, i, in_shell))
    return uses


def command_uses(argv: Sequence[str], wanted: Sequence[str], *,
                 known: Iterable[str] = ()) -> list[OptionUse] | None:
    """:func:`option_uses` over a whole command (``argv[0]`` is the program). A shell's ``-c``
    script is split as the shell would and read too, its uses marked ``in_shell``; None when a
    script cannot be split (nothing can be said about it)."""
    uses = option_uses(argv[1:], wanted, known=known)
    at = shell_script_index(argv)
    if at is not None:
        try:
            tokens = shlex.split(argv[at], comments=True)
        except ValueError:
            return None
        uses += option_uses(tokens, wanted, known=known, in_shell=True)
    return uses


def shell_script_index(argv: Sequence[str]) -> int | None:
    """Where the ``-c`` script of a shell is in ``argv`` (also behind ``env``, ``sudo`` …)."""
    for i, word in enumerate(argv[:-1]):
        if word.rsplit("/", 1)[-1] not in SHELLS:
            continue
        for j in range(i + 1, len(argv) - 1):
            opt = argv[j]
            if not opt.startswith("-") or opt.startswith("--"):
                break
            if "c" in opt[1:]:
                return j + 1
    return None
