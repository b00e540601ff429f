"""jsonschema's answers about the SBOM, remembered between runs so a re-run need not import it.

Importing jsonschema and cyclonedx's validator costs CPU (~0.4 s; ~3 s more with
``rfc3987_syntax``, which :mod:`auditor.jsonschemas` leaves out), more than the rest of a warm
audit's SBOM. The SBOM asks the same questions on every run: does this author's address pass the
``idn-email`` format, this URL ``iri-reference``, and does the document validate against the
CycloneDX 1.6 schema (a document that differs from the last run's only in its serial number and
timestamp). Inside :func:`remembered` the answers are kept in ``<cache>/sbom/formats.json``, keyed
by the installed versions of jsonschema and cyclonedx-python-lib and by the code of
:mod:`auditor.iri` (which checks the ``iri`` formats in jsonschema's stead); jsonschema is imported
only for a question not answered before. A document counts as validated before only when it equals
one that validated, apart from a serial number and a timestamp that are themselves checked here
against the schema's pattern and RFC 3339. A memo that cannot be read is empty; one that cannot be
written costs only speed.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import re
from collections.abc import Callable, Iterator
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from auditor import iri, jsonschemas
from auditor.fsutil import atomic_write_text

MEMO_SCHEMA = "auditor/sbom-formats/v1"
_MAX_ANSWERS = 20_000
_MAX_DOCUMENTS = 200
# the CycloneDX 1.6 schema's serialNumber pattern, exactly
_SERIAL = re.compile(r"urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?:Z|[+-]\d{2}:\d{2})")
_SERIAL_SET = "urn:uuid:00000000-0000-4000-8000-000000000000"
_STAMP_SET = "1970-01-01T00:00:00Z"


@cache
def _checker() -> Any:
    return jsonschemas.load().FormatChecker()


def _versions() -> list[str]:
    # the iri formats are auditor's own checks (auditor.jsonschemas): their code is in the key
    out = [f"auditor.iri=={hashlib.sha256(Path(iri.__file__).read_bytes()).hexdigest()[:16]}"]
    for name in ("jsonschema", "cyclonedx-python-lib"):
        try:
            out.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            out.append(f"{name}==?")
    return out


class FormatMemo:
    """The remembered answers (see the module docstring); ``path`` None remembers nothing."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.versions = _versions()
        self.answers: dict[str, bool] = {}
        self.documents: list[str] = []
        self.dirty = False
        if path is not None:
            self._load(path)

    def _load(self, path: Path) -> None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("schema") != MEMO_SCHEMA or data.get("versions") != self.versions:
                return
            answers = data["answers"]
            documents = data["documents"]
            if (isinstance(answers, dict) and all(isinstance(v, bool) for v in answers.values())
                    and isinstance(documents, list)
                    and all(isinstance(d, str) for d in documents)):
                self.answers, self.documents = dict(answers), list(documents)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return

    def conforms(self, value: str, fmt: str) -> bool:
        key = f"{fmt}\0{value}"
        known = self.answers.get(key)
        if known is None:
            known = bool(_checker().conforms(value, fmt))
            if self.path is not None:
                self.answers[key] = known
                self.dirty = True
        return known

    def validate(self, text: str, validator: Callable[[str], None]) -> None:
        """Run ``validator`` (raises when invalid) unless this document validated before."""
        key = document_key(text, self.versions)
        if key is not None and key in self.documents:
            return
        validator(text)
        if key is not None and self.path is not None:
            self.documents.append(key)
            self.dirty = True

    def save(self) -> None:
        if self.path is None or not self.dirty:
            return
        answers = dict(list(self.answers.items())[-_MAX_ANSWERS:])
        data = {"schema": MEMO_SCHEMA, "versions": self.versions, "answers": answers,
                "documents": self.documents[-_MAX_DOCUMENTS:]}
        with contextlib.suppress(OSError):
            atomic_write_text(self.path, json.dumps(data, sort_keys=True))


def _stamp_ok(value: object) -> bool:
    if not isinstance(value, str) or not _STAMP.fullmatch(value):
        return False
    try:
        dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def document_key(text: str, versions: list[str]) -> str | None:
    """The document with its serial number and timestamp set to fixed valid values, hashed; None
    when they are not what the schema accepts (the document is then always validated)."""
    try:
        doc = json.loads(text)
        serial = doc["serialNumber"]
        meta = doc["metadata"]
        if not isinstance(serial, str) or not _SERIAL.fullmatch(serial):
            return None
        doc["serialNumber"] = _SERIAL_SET
        if "timestamp" in meta:
            if not _stamp_ok(meta["timestamp"]):
                return None
            meta["timestamp"] = _STAMP_SET
    except (ValueError, KeyError, TypeError):
        return None
    raw = json.dumps([MEMO_SCHEMA, versions, doc], sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(raw.encode()).hexdigest()


_active: list[FormatMemo] = []


def memo() -> FormatMemo:
    """The memo of the enclosing :func:`remembered`, else one that remembers nothing."""
    return _active[-1] if _active else FormatMemo(None)


def conforms(value: str, fmt: str) -> bool:
    """jsonschema's ``FormatChecker().conforms(value, fmt)``, remembered inside :func:`remembered`."""
    return memo().conforms(value, fmt)


def memo_file(cache_dir: Path) -> Path:
    return cache_dir / "sbom" / "formats.json"


@contextlib.contextmanager
def remembered(cache_dir: Path | None) -> Iterator[FormatMemo]:
    """Answers inside the block come from (and go to) the memo in ``cache_dir``."""
    m = FormatMemo(memo_file(cache_dir) if cache_dir is not None else None)
    _active.append(m)
    try:
        yield m
    finally:
        _active.pop()
        m.save()
