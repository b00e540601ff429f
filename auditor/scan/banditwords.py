"""What bandit's tests need written in a file, read from the installed bandit at run time.

Bandit's views (:mod:`auditor.scan.banditviews`) leave out a function body only when it shows
none of what a test auditor runs (:data:`auditor.scan.bandit.TESTS`) needs. The resolved names
those tests look for are bandit's own data, read here from the installed bandit, never copied:

- the blacklisted calls (``bandit.blacklists.calls.gen_blacklist``: B301 pickle, B302 marshal,
  B306 mktemp, B307 eval, B310 urlopen, B312 telnetlib, B321 ftplib ...), each test's
  qualified names;
- the shell-injection family's names (``bandit.plugins.injection_shell.gen_config``: B602-B607
  and B609's ``subprocess``, ``shell`` and ``no_shell`` lists);
- B108's temporary folders (``bandit.plugins.general_hardcoded_tmp.gen_config``).

A call resolves to a qualified name through the import alias of its first part followed by the
parts written, so every name a test needs has one of its parts written in the call or bound by
an import of a prefix of the name (which :mod:`auditor.scan.banditviews` adds as a word). Any
one part of each name is thus a sound word; the first is taken, except for module names common
in any code (:data:`_COMMON`, a choice of speed only), where the next part is.

The other tests name what they match in their code, not in data (B102 ``exec``, B113
``requests``/``httpx``, B506 ``yaml``'s ``load``, B601 ``exec_command``, B612 ``listen``, B614
``torch``'s ``load``, B604 ``shell=``, B103 ``chmod``, B202 ``extractall``): those words are
ours (:data:`_PLUGIN_WORDS`), and are checked at run time against the source of the installed
plugin that implements each test. If bandit cannot be imported here, is another version than
the one that runs, or a plugin no longer spells a word of ours, :func:`triggers` is None and
bandit reads every file whole (no view, none left out): the plain path.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

#: module names found in most code: a name under them is indexed by its next part (speed only:
#: any part of a name is a sound word)
_COMMON = frozenset({"os", "six", "moves", "pandas", "tempfile", "logging", "config", "torch",
                     "serialization", "builtins"})
#: the tests whose names are in their code: test id -> words its plugin must spell
_PLUGIN_WORDS: dict[str, tuple[str, ...]] = {
    "B102": ("exec",), "B113": ("requests", "httpx"), "B506": ("load",),
    "B601": ("exec_command",), "B612": ("listen",), "B614": ("load",),
    "B604": ("shell",), "B103": ("chmod",), "B202": ("extractall",),
}
#: what else those plugins must spell: B506 and B614 match only in a file that imports the
#: module exactly (:mod:`auditor.scan.banditviews` counts ``load`` only there)
_PLUGIN_ALSO: dict[str, tuple[str, ...]] = {"B506": ("yaml", "is_module_imported_exact"),
                                            "B614": ("torch", "is_module_imported_exact")}
#: the qualified names those plugins match, for names an import binds in part
_PLUGIN_NAMES: dict[str, tuple[str, ...]] = {"B612": ("logging.config.listen",),
                                             "B614": ("torch.serialization.load",)}
#: of those, the words a call's last name part need only contain (B103, B202)
_CONTAINED = ("chmod", "extractall")
#: the blacklist tests auditor runs (the others stay off)
_BLACKLIST = ("B301", "B302", "B306", "B307", "B310", "B312", "B321")
#: the tests of the shell-injection family (their names are that plugin's configuration)
_SHELL = ("B602", "B603", "B604", "B605", "B606", "B607", "B609")


@dataclass(frozen=True)
class Triggers:
    """What a function must show for some test to match in it."""

    words: frozenset[str]  # a word of any of these: the body is kept
    contained: tuple[str, ...]  # a call's last part containing one of these: kept
    names: tuple[tuple[str, ...], ...]  # every qualified name, as parts (import bindings)
    tmp_dirs: tuple[str, ...]  # B108's folders
    version: str  # the bandit they were read from

    def digest(self) -> str:
        return hashlib.sha256(json.dumps([sorted(self.words), self.contained, self.names,
                                          self.tmp_dirs, self.version]).encode()).hexdigest()

    @property
    def tmp_re(self) -> re.Pattern[str]:
        """A text that holds a string starting with one of the folders has its last part, or
        an escape that can spell a letter, or a backslash before a line break."""
        last = sorted({d.rstrip("/").rsplit("/", 1)[-1] for d in self.tmp_dirs} - {""})
        return re.compile("|".join([*map(re.escape, last), r"\\[xuUN0-7\r\n]"]))

    @property
    def tmp_start_re(self) -> re.Pattern[str]:
        """A string (or an f-string's text after a brace) that is a proper start of a folder,
        to be continued by the next literal."""
        starts = sorted({d[1:k] for d in self.tmp_dirs if d.startswith("/")
                         for k in range(1, len(d))})
        alts = "|".join(re.escape(s) for s in starts if s)
        return re.compile(r"[\"'}]/(?:" + alts + r")?[\"']")


def source_digest() -> str:
    """A digest of the installed bandit's blacklists and plugins (what :func:`triggers` reads),
    found without importing bandit (for the scan cache's key; "none" when it is not there)."""
    import importlib.util

    spec = importlib.util.find_spec("bandit")
    if spec is None or not spec.submodule_search_locations:
        return "none"
    root = Path(next(iter(spec.submodule_search_locations)))
    h = hashlib.sha256()
    for sub in ("blacklists", "plugins"):
        for path in sorted((root / sub).glob("*.py")):
            data = path.read_bytes()
            h.update(f"{sub}/{path.name}:{len(data)}:".encode() + data)
    return h.hexdigest()


def word_of(name: str) -> str:
    """The part of a qualified name taken as its word (see the module docstring)."""
    parts = name.split(".")
    return next((p for p in parts if p not in _COMMON), parts[-1])


@lru_cache(maxsize=4)
def triggers(version: str | None = None) -> Triggers | None:
    """Read from the installed bandit (``version``: the one that runs; None: any), or None when
    that cannot be done soundly (see the module docstring)."""
    try:
        import bandit  # type: ignore[import-untyped]
        from bandit.blacklists import calls  # type: ignore[import-untyped]
        from bandit.core import extension_loader  # type: ignore[import-untyped]
        from bandit.plugins import (  # type: ignore[import-untyped]
            general_hardcoded_tmp,
            injection_shell,
        )
    except Exception:  # noqa: BLE001 - not importable here: the plain path
        return None
    found = str(getattr(bandit, "__version__", ""))
    if version is not None and found != version:
        return None
    try:
        names: set[str] = set()
        for entry in calls.gen_blacklist()["Call"]:
            if entry["id"] in _BLACKLIST:
                names.update(entry["qualnames"])
        shell = injection_shell.gen_config("shell_injection")
        for key in ("subprocess", "shell", "no_shell"):
            names.update(shell[key])
        tmp = tuple(general_hardcoded_tmp.gen_config("hardcoded_tmp_directory")["tmp_dirs"])
        plugins = extension_loader.MANAGER.plugins_by_id
        for test_id, spelled in _PLUGIN_WORDS.items():
            spelled = spelled + _PLUGIN_ALSO.get(test_id, ())
            source = inspect.getsource(plugins[test_id].plugin)
            if not all(re.search(rf"\b{re.escape(w)}\b", source) for w in spelled):
                return None
            if not all(n in source for n in _PLUGIN_NAMES.get(test_id, ())):
                return None
            names.update(_PLUGIN_NAMES.get(test_id, ()))
        for test_id in (*_BLACKLIST, *_SHELL):
            if test_id not in plugins and test_id not in {
                    e["id"] for e in calls.gen_blacklist()["Call"]}:
                return None
    except Exception:  # noqa: BLE001 - an unexpected shape: the plain path
        return None
    words = {word_of(n) for n in names} | {w for ws in _PLUGIN_WORDS.values() for w in ws
                                           if w not in _CONTAINED}
    return Triggers(words=frozenset(words), contained=_CONTAINED,
                    names=tuple(sorted(tuple(n.split(".")) for n in names)),
                    tmp_dirs=tuple(sorted(tmp)), version=found)
