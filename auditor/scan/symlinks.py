"""Symlinks of the bundle as the scan must read them: a file is what it is reached as.

``pkg/plugin.py -> ../docs/example.txt`` makes the interpreter import the text file as Python: the
file is scanned as the language of every name that points at it (a *link reading*: the target's
text under the link's language, findings at the target's lines), and a symlink whose name gives a
language its target's own name does not (code named, data or other code inside) is a finding of
its own. Links are followed as the file system follows them (through linked folders, chains of
links, at most :data:`MAX_HOPS`); one that leaves the bundle, dangles or loops reaches nothing
here (the verify stage refuses such bundles).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from auditor.model import BundleFile

MODE_LINK = "120000"
MAX_HOPS = 40
RULE = "obfuscation.builtin.symlink-changes-language"
HELP = ("A symlink gives its target the language of its own name: the interpreter imports (or the "
        "shell runs) the target's text as that language, while a reviewer and every scanner that "
        "goes by the target's name see data. The target was scanned as the link's language too; "
        "replace the link by the real file, or remove it.")


@dataclass(frozen=True)
class Link:
    path: str  # the symlink's own path
    text: str  # what it points at, as written
    target: str | None  # the regular bundle file it reaches (None: nothing the bundle holds)


def links_of(manifest: Mapping[str, BundleFile], read: Callable[[list[str]], Mapping[str, bytes]],
             paths: Iterable[str]) -> list[Link]:
    """The symlinks among ``paths`` and the regular file each reaches; ``read`` gives link texts."""
    wanted = sorted(p for p in paths if p in manifest and manifest[p].mode == MODE_LINK)
    if not wanted:
        return []
    every = sorted(p for p, f in manifest.items() if f.mode == MODE_LINK)
    raw = read(every)
    texts = {p: raw[p].decode("utf-8", "surrogateescape") for p in every if p in raw}
    return [Link(p, texts.get(p, ""), _resolve(p, manifest, texts)) for p in wanted]


def _resolve(path: str, manifest: Mapping[str, BundleFile], texts: Mapping[str, str]) -> str | None:
    """The regular file ``path`` reaches, following links in every component."""
    pending = path.split("/")
    done: list[str] = []
    hops = 0
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            if not done:
                return None  # out of the bundle
            done.pop()
            continue
        here = "/".join([*done, part])
        entry = manifest.get(here)
        if entry is not None and entry.mode == MODE_LINK:
            hops += 1
            text = texts.get(here)
            if hops > MAX_HOPS or text is None or text.startswith("/"):
                return None
            pending = text.split("/") + pending
            continue
        done.append(part)
    final = "/".join(done)
    entry = manifest.get(final)
    return final if entry is not None and entry.mode != MODE_LINK else None


def link_reading_key(target_key: str, link: str) -> str:
    return f"{target_key}#link:{link}"


def describe(link: Link, link_family: str, target_family: str | None) -> str:
    what = f"{target_family} code" if target_family else "a file no language covers"
    return (f"{link.path} is a symlink to {posixpath.normpath(link.target or link.text)} "
            f"({what}): reached by this name it is {link_family}, and was scanned as such")
