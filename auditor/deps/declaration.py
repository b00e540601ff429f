"""One dependency declaration found in a tree, and what extraction could not read.

Every extractor (requirements files, pyproject.toml, setup.py, setup.cfg, CMake, Dockerfiles and
shell scripts) returns an :class:`Extraction`: the :class:`Declaration` values it found and one
line per thing it could not check (a dynamic ``install_requires``, an unparsable file, ...).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

# the kind and the sha pattern live with the stage's record, which carries them to the SBOM
from auditor.results.deps import FULL_SHA as FULL_SHA
from auditor.results.deps import Kind as Kind

VCS_PREFIXES = ("git+", "hg+", "svn+", "bzr+")


@dataclass(frozen=True)
class Declaration:
    """A dependency as declared. ``name`` is canonical (PEP 503); for an index it is the option
    (``index-url``, ``extra-index-url``, ``find-links``, ``trusted-host``) and ``url`` its value."""

    name: str
    specifier: str
    pin: str | None  # the exact version when the specifier is ``==X`` / ``===X``
    markers: str
    url: str | None
    kind: Kind
    file: str  # posix path relative to the tree root
    line: int  # 1-based
    group: str = ""  # where in the file: "dependencies", "optional:gpu", "build-system", ...
    extras: tuple[str, ...] = ()
    ref: str | None = None  # git ref of a VCS requirement or CMake fetch
    hash: str | None = None  # --hash values or URL_HASH, comma separated
    text: str = ""  # the declaring line as written (for fingerprints and messages)
    end_line: int = 0  # last line of a declaration written over several lines (0: one line)

    @property
    def sort_key(self) -> tuple[str, int, str, str, tuple[str, ...], str, str, str]:
        """A total order: two declarations of one name on one line (``pkg`` and ``pkg[s3]``)
        still sort the same way on every run."""
        return (self.file, self.line, self.kind.value, self.name, self.extras, self.specifier,
                self.markers, self.url or "")

    @property
    def pinned_ref(self) -> bool:
        """For git fetches: whether the ref is a full commit sha."""
        return bool(self.ref and FULL_SHA.match(self.ref))

    def identity(self) -> tuple[Any, ...]:
        """What makes two declarations the same requirement, wherever they are written."""
        return (self.kind, self.name, self.specifier, self.url, self.markers, self.extras,
                self.ref, self.hash)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "kind": self.kind.value, "specifier": self.specifier,
            "version": self.pin, "pin": self.pin, "markers": self.markers, "url": self.url,
            "extras": list(self.extras), "ref": self.ref, "hash": self.hash,
            "file": self.file, "line": self.line, "end_line": self.end_line or self.line,
            "group": self.group,
        }


class Topic(StrEnum):
    """What kind of thing could not be read (lets the deployed surface judge it)."""

    OTHER = "other"
    COMPUTED_REQUIRES = "computed-requires"  # install_requires / dynamic dependencies computed
    SHELL_COMPUTED = "shell-computed"  # a pip install argument built by the shell ($X, `...`)


@dataclass(frozen=True)
class Skip:
    """One thing extraction could not read, with where it is written."""

    file: str
    line: int  # 0: the whole file
    why: str
    group: str = ""  # as for declarations: "install_requires", "dependencies", "extras", ...
    topic: Topic = Topic.OTHER

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.why}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "group": self.group,
                "topic": self.topic.value, "text": str(self)}


@dataclass(frozen=True)
class Extraction:
    declarations: tuple[Declaration, ...] = ()
    skipped: tuple[Skip, ...] = ()
    files: tuple[str, ...] = ()  # the files that were read
    # requirements files another file points at (setup.cfg ``file:``, setuptools dynamic):
    # (path as written, relative to the folder of ``from_file``, from_file, line)
    references: tuple[tuple[str, str, int], ...] = ()
    # requirements includes resolved in the tree: (including file, included file)
    includes: tuple[tuple[str, str], ...] = ()

    @property
    def not_checked(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(str(s) for s in self.skipped))

    def __add__(self, other: Extraction) -> Extraction:
        return Extraction(self.declarations + other.declarations,
                          self.skipped + other.skipped, self.files + other.files,
                          self.references + other.references, self.includes + other.includes)


@dataclass
class Collector:
    """Mutable helper the extractors fill; frozen into an :class:`Extraction` at the end."""

    file: str
    declarations: list[Declaration] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    end_line: int = 0  # set by a parser while it reads a declaration spanning lines
    references: list[tuple[str, str, int]] = field(default_factory=list)

    def refer(self, target: str, line: int) -> None:
        """``target`` (relative to this file's folder) is a requirements file to read too."""
        self.references.append((target, self.file, line))

    def skip(self, line: int, why: str, *, group: str = "", topic: Topic = Topic.OTHER) -> None:
        self.skipped.append(Skip(self.file, line, why, group, topic))

    def requirement(self, text: str, line: int, *, group: str = "", hashes: tuple[str, ...] = (),
                    raw: str | None = None) -> Declaration | None:
        """Parse one PEP 508 requirement (or a pip-style bare URL); record it or say why not."""
        decl = parse_requirement(text, self.file, line, group=group, hashes=hashes,
                                 raw=raw if raw is not None else text)
        if decl is None:
            self.skip(line, f"not a valid requirement: {text.strip()[:120]!r}")
        else:
            decl = replace(decl, end_line=self.end_line)
            self.declarations.append(decl)
        return decl

    def index(self, option: str, url: str, line: int, raw: str) -> None:
        self.declarations.append(Declaration(
            name=option, specifier="", pin=None, markers="", url=url, kind=Kind.INDEX,
            file=self.file, line=line, text=raw.strip(), end_line=self.end_line))

    def done(self) -> Extraction:
        decls = tuple(replace(d, url=scrub_url(d.url) if d.url else d.url, text=scrub_url(d.text))
                      for d in self.declarations)
        return Extraction(decls, tuple(replace(s, why=scrub_url(s.why)) for s in self.skipped),
                          (self.file,), tuple(self.references))


_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<user>[^/@\s:]*)"
                       r"(?P<password>:[^/@\s]*)?@")


def scrub_url(text: str) -> str:
    """Hide credentials in URLs: ``user:secret@`` -> ``user:***@``; a long bare token -> ``***@``."""
    def sub(m: re.Match[str]) -> str:
        if m.group("password"):
            return f"{m.group('scheme')}{m.group('user')}:***@"
        if len(m.group("user")) >= 20:
            return f"{m.group('scheme')}***@"
        return m.group()

    return _USERINFO.sub(sub, text)


def exact_pin(spec: SpecifierSet) -> str | None:
    specs = list(spec)
    if len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version:
        return specs[0].version
    return None


def _url_kind(url: str) -> Kind:
    return Kind.VCS if url.lower().startswith(VCS_PREFIXES) else Kind.URL


def vcs_ref(url: str) -> str | None:
    """``git+https://host/x.git@v1.2#egg=x`` -> ``v1.2``; None when no ref is given."""
    base = url.split("#", 1)[0]
    scheme, sep, rest = base.partition("://")
    if not sep:
        return None
    path = rest.split("/", 1)[1] if "/" in rest else ""
    if "@" not in path:
        return None
    return path.rsplit("@", 1)[1] or None


def _name_from_url(url: str) -> str | None:
    frag = url.split("#", 1)[1] if "#" in url else ""
    for part in frag.split("&"):
        if part.startswith("egg="):
            return part[4:].split("[")[0] or None
    base = url.split("#", 1)[0].split("?", 1)[0].rstrip("/")
    last = base.rsplit("/", 1)[-1]
    if "@" in last:
        last = last.split("@", 1)[0]
    if last.endswith(".whl"):
        return last.split("-", 1)[0]
    for suffix in (".tar.gz", ".tar.bz2", ".tar.xz", ".zip", ".tgz", ".git"):
        if last.endswith(suffix):
            stem = last[: -len(suffix)]
            return re.split(r"-(?=\d)", stem, maxsplit=1)[0] if suffix != ".git" else stem
    return last or None


def parse_requirement(text: str, file: str, line: int, *, group: str = "",
                      hashes: tuple[str, ...] = (), raw: str = "") -> Declaration | None:
    text = text.strip()
    if not text:
        return None
    markers = ""
    if "://" in text.split(";", 1)[0] and " @ " not in text and not re.match(r"^[\w.\-\[\], ]+@",
                                                                               text):
        # pip's bare URL form: git+https://...@ref#egg=name ; markers
        url, _, markers = text.partition(";")
        url = url.strip()
        if " " in url:
            return None
        name = _name_from_url(url)
        if not name:
            return None
        kind = _url_kind(url)
        return Declaration(name=canonicalize_name(name), specifier="", pin=None,
                           markers=markers.strip(), url=url, kind=kind, file=file, line=line,
                           group=group, ref=vcs_ref(url) if kind is Kind.VCS else None,
                           hash=",".join(hashes) or None, text=raw.strip())
    try:
        req = Requirement(text)
    except InvalidRequirement:
        return None
    markers = str(req.marker) if req.marker else ""
    if req.url:
        kind = _url_kind(req.url)
        return Declaration(name=canonicalize_name(req.name), specifier=str(req.specifier),
                           pin=None, markers=markers, url=req.url, kind=kind, file=file,
                           line=line, group=group, extras=tuple(sorted(req.extras)),
                           ref=vcs_ref(req.url) if kind is Kind.VCS else None,
                           hash=",".join(hashes) or None, text=raw.strip())
    return Declaration(name=canonicalize_name(req.name), specifier=str(req.specifier),
                       pin=exact_pin(req.specifier), markers=markers, url=None, kind=Kind.PYPI,
                       file=file, line=line, group=group, extras=tuple(sorted(req.extras)),
                       hash=",".join(hashes) or None, text=raw.strip())
