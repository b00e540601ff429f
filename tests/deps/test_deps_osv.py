"""The offline OSV snapshot source, with OSV records written here (validated against the schema)."""

import zipfile

import jsonschema
import pytest
from deps_osv_records import RECORDS, record, validate, write_snapshot
from packaging.version import Version

from auditor.deps.declaration import parse_requirement
from auditor.deps.stage import partition_pins, unpinned_reason, why_unpinned
from auditor.deps.vulns.interface import NoSource, Package, SourceKind
from auditor.deps.vulns.osv import OsvSnapshotSource, in_range


def test_records_written_here_follow_the_osv_schema():
    for rec in RECORDS.values():
        if not validate(rec):
            pytest.skip("the OSV schema (shared/schemas/osv-schema.json) is not on this machine")
    with pytest.raises(jsonschema.ValidationError):
        validate({"id": "X-1"})  # "modified" is required


def _check(tmp_path, packages, **kw):
    snap = write_snapshot(tmp_path / "osv", **kw)
    return OsvSnapshotSource(snap).check([Package(n, v) for n, v in packages])


def test_affected_pin_fixed_pin_withdrawn_and_other_ecosystems(tmp_path):
    rep = _check(tmp_path, [("vuln-pkg", "1.5"), ("vuln-pkg", "2.0"), ("withdrawn-pkg", "1.0"),
                            ("listed", "1.1"), ("listed", "1.2"), ("lastaff", "1.4"),
                            ("lastaff", "1.4.1")])
    got = {(v.package, v.version, v.id) for v in rep.vulnerabilities}
    assert got == {("vuln-pkg", "1.5", "PYSEC-2026-0001"), ("listed", "1.1", "PYSEC-2026-0003"),
                   ("lastaff", "1.4", "PYSEC-2026-0004")}
    first = next(v for v in rep.vulnerabilities if v.id == "PYSEC-2026-0001")
    assert first.fixed == ("2.0",) and first.severity == "high"
    assert first.aliases == ("CVE-2026-0001",)
    listed = next(v for v in rep.vulnerabilities if v.id == "PYSEC-2026-0003")
    assert listed.severity == "critical"  # CVSS 3.1 base score 9.8
    assert rep.not_checked == ()
    assert len(rep.checked) == 7
    assert rep.source.kind is SourceKind.OSV and rep.source.records == 5
    assert rep.source.date == "2026-03-05T10:00:00Z"
    assert len(rep.source.digest) == 64


def test_a_corrupt_record_is_named_and_the_others_still_count(tmp_path):
    rep = _check(tmp_path, [("vuln-pkg", "1.0")],
                 extra_files={"BROKEN-1.json": "{not json", "BROKEN-2.json": '{"id": 3}'})
    assert [v.id for v in rep.vulnerabilities] == ["PYSEC-2026-0001"]
    assert len(rep.not_checked) == 2
    assert "OSV record BROKEN-1.json: corrupt" in rep.not_checked[0]
    assert "OSV record BROKEN-2.json: corrupt" in rep.not_checked[1]


def test_zip_snapshot_has_the_same_digest_as_the_folder(tmp_path):
    folder = write_snapshot(tmp_path / "osv")
    archive = tmp_path / "osv.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for p in sorted(folder.rglob("*.json")):
            zf.write(p, p.relative_to(folder).as_posix())
    a = OsvSnapshotSource(folder).check([Package("vuln-pkg", "1.0")])
    b = OsvSnapshotSource(archive).check([Package("vuln-pkg", "1.0")])
    assert a.source.digest == b.source.digest
    assert a.vulnerabilities == b.vulnerabilities
    (folder / "PYSEC-2026-0004.json").write_text("{}")
    assert OsvSnapshotSource(folder).check([]).source.digest != a.source.digest


def test_empty_or_unreadable_snapshot_is_not_checked(tmp_path):
    (tmp_path / "empty").mkdir()
    assert "no records" in OsvSnapshotSource(tmp_path / "empty").check([]).not_checked[0]
    (tmp_path / "bad.zip").write_bytes(b"not a zip")
    assert "cannot be read" in OsvSnapshotSource(tmp_path / "bad.zip").check([]).not_checked[0]


def test_unparsable_range_versions_leave_that_package_not_checked(tmp_path):
    rec = record("PYSEC-2026-0009", "odd", events=[{"introduced": "0"}, {"fixed": "not.a.ver!"}])
    rep = _check(tmp_path, [("odd", "1.0")], records={"odd.json": rec})
    assert rep.vulnerabilities == () and rep.checked == ()
    assert "odd==1.0" in rep.not_checked[0] and "odd.json" in rep.not_checked[0]


def test_osv_event_evaluation():
    ev = [{"introduced": "0"}, {"fixed": "1.0"}, {"introduced": "2.0"}, {"fixed": "2.2"}]
    assert [in_range(Version(v), ev) for v in ("0.5", "1.0", "1.5", "2.1", "2.2")] == [
        True, False, False, True, False]


def test_unpinned_requirements_are_set_apart_from_pins():
    decls = [parse_requirement(t, "requirements.txt", i)
             for i, t in enumerate(["a==1.0", "b>=2", "b<5", "c @ https://x.example/c.whl"], 1)]
    pinned, others = partition_pins(decls)
    assert pinned == [Package("a", "1.0")]
    assert [(d.name, d.line, why_unpinned(d)) for d in others] == [
        ("b", 2, "not pinned to one version (>=2)"), ("b", 3, "not pinned to one version (<5)"),
        ("c", 4, "a direct URL/VCS requirement has no version to look up")]
    assert unpinned_reason(others).startswith(
        "vulnerabilities of 3 unpinned deployed requirement(s) not checked (b, c): give [deps] "
        "lock")


def test_none_is_recorded_as_deliberately_not_checked():
    rep = NoSource().check([Package("a", "1.0")])
    assert rep.not_checked == ("vulnerabilities: not checked (deps.vulns = none)",)
    assert rep.source.kind is SourceKind.NONE


def test_every_source_kind_has_a_source(tmp_path):
    from auditor.deps.stage import make_source
    from auditor.spec import DepsSpec

    snap = write_snapshot(tmp_path / "osv")
    specs = {SourceKind.OSV: DepsSpec(f"osv:{snap}", snap, 2),
             SourceKind.PIP_AUDIT: DepsSpec("pip-audit", None, 2),
             SourceKind.NONE: DepsSpec("none", None, 2)}
    for kind in SourceKind:
        assert make_source(specs[kind], tmp_path, online=False).kind is kind
