"""Hashing a bundle without unpacking it agrees with unpacking it, for any bytes: the same refusal
(word for word), or the same files, manifest and tree (:func:`auditor.provenance.unpack.hash_bundle`
is what the verify stage runs; the unpacked copy is made later, only when a stage needs it)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from fuzz_support import FUZZ, TRIED, archives
from hypothesis import given
from hypothesis import strategies as st

from auditor.errors import InputError
from auditor.provenance.treehash import hash_folder
from auditor.provenance.unpack import hash_bundle, unpack_bundle
from auditor.spec import BundleSpec


def outcome_of_unpacking(spec: BundleSpec, work: Path) -> tuple[str, object]:
    try:
        u = unpack_bundle(spec, work)
    except InputError as exc:
        return "refused", exc.message
    h = hash_folder(u.root)
    return "ok", (dict(h.manifest), u.files, u.bytes, u.git_entries, u.archive_commit, u.kind,
                  u.compression, u.format)


def outcome_of_hashing(spec: BundleSpec) -> tuple[str, object] | None:
    try:
        s = hash_bundle(spec)
    except InputError as exc:
        return "refused", exc.message
    if s is None:
        return None
    return "ok", (dict(s.manifest), s.files, s.bytes, s.git_entries, s.archive_commit, s.kind,
                  s.compression, s.format)


def same_outcome(data: bytes, strip: int, **limits: int) -> None:
    TRIED["hash-bundle"] += 1
    with tempfile.TemporaryDirectory(prefix="fuzz-hash-") as d:
        top = Path(d)
        (top / "work").mkdir()
        bundle = top / "bundle.bin"
        bundle.write_bytes(data)
        spec = BundleSpec(path=bundle, strip_components=strip,
                          max_bytes=limits.get("max_bytes", 1 << 20),
                          max_files=limits.get("max_files", 100),
                          max_file_bytes=limits.get("max_file_bytes", 1 << 19))
        hashed = outcome_of_hashing(spec)
        unpacked = outcome_of_unpacking(spec, top / "work")
        if hashed is None:  # a size the header misstates: the caller unpacks; never a silent pass
            return
        assert hashed == unpacked


@FUZZ
@given(archives(), st.integers(0, 2))
def test_hashing_agrees_with_unpacking(data: bytes, strip: int) -> None:
    same_outcome(data, strip)


@FUZZ
@given(archives(), st.integers(0, 1), st.integers(1, 5), st.integers(1, 300),
       st.integers(1, 2000))
def test_hashing_agrees_with_unpacking_at_the_limits(data: bytes, strip: int, files: int,
                                                     file_bytes: int, total: int) -> None:
    same_outcome(data, strip, max_files=files, max_file_bytes=file_bytes, max_bytes=total)
