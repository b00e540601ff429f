"""A declaration keeps its typed kind and its pin from extraction to the SBOM (issue 32, item 4)."""

from __future__ import annotations

import pytest
from typed_results import deps_data

from auditor.deps.declaration import parse_requirement
from auditor.deps.stage import record
from auditor.model import StageResult, StageStatus
from auditor.results.deps import DeclarationRecord, FetchRecord, Kind
from auditor.sbom.inputs import read_deps


def _vcs() -> DeclarationRecord:
    d = parse_requirement("git+https://example.invalid/helper.git@v1.2#egg=helper",
                          "requirements.txt", 4)
    assert d is not None
    return record(d)


def test_the_record_carries_the_kind_as_the_enum_and_json_as_its_value() -> None:
    rec = _vcs()
    assert rec.kind is Kind.VCS
    assert rec.to_json()["kind"] == "vcs"
    back = DeclarationRecord.from_json(rec.to_json())
    assert back.kind is Kind.VCS and back == rec


def test_a_kind_audit_json_does_not_know_is_refused() -> None:
    with pytest.raises(ValueError):
        DeclarationRecord.from_json(_vcs().to_json() | {"kind": "Vcs"})


def test_the_pin_is_computed_once_on_the_record() -> None:
    rec = _vcs()
    assert rec.pin is None and rec.version_pin == "v1.2" and rec.pinned
    pypi = parse_requirement("orjson==3.10.0", "requirements.txt", 1)
    ranged = parse_requirement("orjson>=3", "requirements.txt", 2)
    assert pypi is not None and ranged is not None
    assert record(pypi).version_pin == "3.10.0"
    assert record(ranged).version_pin is None and not record(ranged).pinned


def test_the_sbom_reads_the_records_kind_and_pin() -> None:
    rec = _vcs()
    st = StageResult("deps", StageStatus.OK, deps_data(bundle=(rec,)))
    (dep,) = read_deps(st).dependencies
    assert dep.kind is Kind.VCS
    assert dep.pin == rec.version_pin == "v1.2"


@pytest.mark.parametrize(("tag", "commit"), [("a" * 40, "a" * 40), ("v3.5.0", None), (None, None)])
def test_a_fetch_names_its_commit_only_for_a_full_sha(tag: str | None, commit: str | None) -> None:
    f = FetchRecord(name="cutlass", kind=Kind.CMAKE_GIT, repository="https://example.invalid/c",
                    tag=tag, url=None, hash=None, pinned=commit is not None, file="CMakeLists.txt",
                    line=3)
    assert f.commit == commit
    assert FetchRecord.from_json(f.to_json()) == f
