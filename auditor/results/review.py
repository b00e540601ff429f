"""The review stage's data: coverage of the changed hunks by sign-offs, and what it was made of
(the hunks, the areas and the counted sign-offs, so the gate can recompute it without git)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from auditor.errors import SpecError
from auditor.results.base import JsonObject, StageData, objects, strs

# The review stage's values live here, below auditor.review (which re-exports them), so that the
# results layer and the spec read them without importing the review machinery.

#: hex digits of a hunk id (the start of its content digest)
ID_HEX = 16
#: a reviewer's name
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}")


@dataclass(frozen=True)
class ReviewArea:
    name: str  # short key: kernels, build, ...
    title: str
    globs: tuple[str, ...]
    checklist: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "title": self.title, "globs": list(self.globs),
                "checklist": list(self.checklist)}


OTHER = "other"
_NAME = re.compile(r"[a-z][a-z0-9_-]{0,39}")


DEFAULT_OTHER = ReviewArea(OTHER, "Everything else", ("**",), (
    "Network, process execution, file access, deserialization, credentials, obfuscation",))


def parse_areas(raw: Mapping[str, Any], *, file: Path) -> tuple[ReviewArea, ...]:
    """The areas of a profile's ``[review_areas]`` table; a malformed one is a SpecError."""
    out: list[ReviewArea] = []
    for name, body in raw.items():
        key = f"review_areas.{name}"
        if not _NAME.fullmatch(name):
            raise SpecError("an area name is lower-case letters, digits, _ or -",
                            file=str(file), key=key)
        if not isinstance(body, dict):
            raise SpecError(f"expected a table, got {type(body).__name__}", file=str(file), key=key)
        unknown = sorted(set(body) - {"title", "globs", "checklist"})
        if unknown:
            raise SpecError("unknown key", file=str(file), key=f"{key}.{unknown[0]}")
        title = body.get("title", name)
        if not isinstance(title, str) or not title.strip():
            raise SpecError("expected a non-empty string", file=str(file), key=f"{key}.title")
        globs = _strings(body.get("globs"), file, f"{key}.globs", required=True)
        checklist = _strings(body.get("checklist", []), file, f"{key}.checklist", required=False)
        out.append(ReviewArea(name, title, globs, checklist))
    if not any(a.name == OTHER for a in out):
        out.append(DEFAULT_OTHER)
    return tuple(out)


def _strings(value: Any, file: Path, key: str, *, required: bool) -> tuple[str, ...]:
    if value is None or not isinstance(value, list) or (required and not value):
        raise SpecError("expected a non-empty list of strings" if required
                        else "expected a list of strings", file=str(file), key=key)
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise SpecError(f"expected a non-empty string, got {item!r}", file=str(file),
                            key=f"{key}[{i}]")
    return tuple(value)


@dataclass(frozen=True)
class HunkRef:
    id: str
    digest: str
    path: str
    commit: str
    area: str
    start: int
    end: int
    lines: int

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "digest": self.digest, "path": self.path, "commit": self.commit,
                "area": self.area, "start": self.start, "end": self.end, "lines": self.lines}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> HunkRef:
        return cls(id=str(d["id"]), digest=str(d["digest"]), path=str(d["path"]),
                   commit=str(d["commit"]), area=str(d["area"]), start=int(d["start"]),
                   end=int(d["end"]), lines=int(d["lines"]))


NOTE_MAX = 4000
_HEX64 = re.compile(r"[0-9a-f]{64}")
_KEYS = {"reviewer", "hunk", "digest", "verdict", "date", "path", "note"}


class ReviewVerdict(StrEnum):
    OK = "ok"
    CONCERN = "concern"
    BLOCKER = "blocker"



@dataclass(frozen=True)
class SignOff:
    reviewer: str
    hunk: str
    digest: str
    verdict: ReviewVerdict
    date: str
    path: str = ""
    note: str = ""
    source: str = ""  # the file it came from (messages only)

    def to_json(self) -> dict[str, Any]:
        return {"reviewer": self.reviewer, "hunk": self.hunk, "digest": self.digest,
                "verdict": self.verdict.value, "date": self.date, "path": self.path,
                "note": self.note}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SignOff | None:
        """From an audit.json (a baseline); None when the entry is not a well-formed sign-off."""
        try:
            return read_signoff(d, Path("audit.json"), "signoff", None)
        except SpecError:
            return None

    def to_toml(self) -> str:
        lines = ["[[signoff]]"]
        for key, value in (("reviewer", self.reviewer), ("hunk", self.hunk),
                           ("digest", self.digest), ("verdict", self.verdict.value),
                           ("date", self.date), ("path", self.path), ("note", self.note)):
            if value or key in ("reviewer", "hunk", "digest", "verdict", "date"):
                lines.append(f"{key} = {toml_string(value)}")
        return "\n".join(lines) + "\n"


def toml_string(value: str) -> str:
    """A TOML basic string: quotes, backslashes and every control character escaped."""
    out = ['"']
    for ch in value:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif o < 0x20 or o == 0x7F:
            out.append(f"\\u{o:04X}")
        elif 0xD800 <= o <= 0xDFFF:  # a lone surrogate (undecodable argv bytes)
            out.append("\\uFFFD")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)



@dataclass(frozen=True)
class _Fields:
    """One ``[[signoff]]`` table's string fields, and errors naming the file and the key."""

    e: Mapping[str, Any]
    file: Path
    key: str

    def bad(self, k: str, msg: str) -> SpecError:
        return SpecError(msg, file=str(self.file), key=f"{self.key}.{k}" if k else self.key)

    def text(self, k: str, required: bool = True) -> str:
        if k not in self.e:
            if required:
                raise self.bad(k, "missing")
            return ""
        v = self.e[k]
        if isinstance(v, (dt.datetime, dt.date)) and k == "date":
            v = v.isoformat()
        if not isinstance(v, str):
            raise self.bad(k, f"expected a string, got {type(v).__name__}")
        return v


def read_signoff(e: Any, file: Path, key: str, owner: str | None) -> SignOff:
    """One ``[[signoff]]`` table (or an audit.json sign-off) checked; SpecError naming the key."""
    if not isinstance(e, Mapping):
        raise SpecError("expected a table", file=str(file), key=key)
    fields = _Fields(e, file, key)
    bad, text = fields.bad, fields.text
    unknown = sorted(set(e) - _KEYS - ({"source"} if file.name == "audit.json" else set()))
    if unknown:
        raise bad(unknown[0], "unknown key")

    reviewer = text("reviewer")
    if not NAME_RE.fullmatch(reviewer):
        raise bad("reviewer", "not a reviewer name (letters, digits, . _ @ + -)")
    if owner is not None and reviewer != owner:
        raise bad("reviewer", f"this file holds {owner}'s sign-offs, not {reviewer}'s")
    digest = text("digest").lower()
    if not _HEX64.fullmatch(digest):
        raise bad("digest", "expected the hunk's 64-hex SHA-256 digest")
    hunk = text("hunk").lower()
    if hunk != digest[:ID_HEX]:
        raise bad("hunk", f"expected {digest[:ID_HEX]} (the first {ID_HEX} hex digits of digest)")
    try:
        verdict = ReviewVerdict(text("verdict"))
    except ValueError:
        raise bad("verdict", "expected ok, concern or blocker") from None
    date = text("date")
    try:
        dt.datetime.fromisoformat(date.replace("Z", "+00:00"))
    except ValueError:
        raise bad("date", "expected an ISO 8601 date") from None
    note = text("note", required=False)
    if len(note) > NOTE_MAX:
        raise bad("note", f"longer than {NOTE_MAX} characters")
    path = text("path", required=False)
    return SignOff(reviewer=reviewer, hunk=hunk, digest=digest, verdict=verdict, date=date,
                   path=path, note=note, source=str(file))



#: the keys of the coverage object (``auditor review status --json``) kept as written
COVERAGE_KEYS = ("lines_total", "lines_signed", "hunks_total", "hunks_unreviewed",
                 "hunks_unreviewed_total", "by_area", "by_reviewer", "concerns", "blockers",
                 "void", "carried")


@dataclass(frozen=True)
class ReviewData(StageData):
    required: bool
    file: str
    coverage: JsonObject  # the counts of ``auditor review status --json`` (display only)
    summary: str  # the coverage in one line
    areas: tuple[ReviewArea, ...]
    hunks: tuple[HunkRef, ...]
    signoffs: tuple[SignOff, ...]  # the counted ones (notes redacted)

    def to_json(self) -> dict[str, Any]:
        return {"required": self.required, "file": self.file, **self.coverage,
                "summary": self.summary, "areas": [a.to_json() for a in self.areas],
                "hunks": [h.to_json() for h in self.hunks],
                "signoffs": [s.to_json() for s in self.signoffs]}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ReviewData:
        signoffs = tuple(s for s in (SignOff.from_json(x) for x in objects(d["signoffs"]))
                         if s is not None)
        return cls(required=bool(d["required"]), file=str(d["file"]),
                   coverage={k: d[k] for k in COVERAGE_KEYS}, summary=str(d["summary"]),
                   areas=tuple(ReviewArea(str(a["name"]), str(a["title"]), strs(a["globs"]),
                                          strs(a["checklist"])) for a in objects(d["areas"])),
                   hunks=tuple(HunkRef.from_json(h) for h in objects(d["hunks"])),
                   signoffs=signoffs)
