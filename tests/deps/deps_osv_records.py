"""OSV records for the deps tests (written here, valid against the OSV schema)."""

import json
from functools import lru_cache
from pathlib import Path

import jsonschema

# a copy of shared/schemas/osv-schema.json kept in the repository for offline tests
SCHEMA = Path(__file__).resolve().parents[1] / "schemas" / "osv-schema.json"


@lru_cache(maxsize=1)
def _validator():
    schema = json.loads(SCHEMA.read_text())
    return jsonschema.Draft202012Validator(schema)


def validate(rec) -> bool:
    """Check a record against the OSV schema (raises ValidationError when it does not fit)."""
    _validator().validate(rec)
    return True


def record(id_, name, *, events=None, versions=None, modified="2026-01-01T00:00:00Z", **extra):
    affected = {"package": {"ecosystem": "PyPI", "name": name}}
    if events is not None:
        affected["ranges"] = [{"type": "ECOSYSTEM", "events": events}]
    if versions is not None:
        affected["versions"] = versions
    return {"schema_version": "1.6.0", "id": id_, "modified": modified,
            "published": "2025-12-01T00:00:00Z", "aliases": [f"CVE-2026-{id_[-4:]}"],
            "summary": f"problem in {name}", "affected": [affected], **extra}


RECORDS = {
    "PYSEC-2026-0001.json": record(
        "PYSEC-2026-0001", "Vuln_Pkg", events=[{"introduced": "0"}, {"fixed": "2.0"}],
        database_specific={"severity": "HIGH"}),
    "GHSA-with-drawn.json": record(
        "GHSA-aaaa-bbbb-0002", "withdrawn-pkg", events=[{"introduced": "0"}],
        withdrawn="2026-02-01T00:00:00Z", modified="2026-02-01T00:00:00Z"),
    "sub/PYSEC-2026-0003.json": record(
        "PYSEC-2026-0003", "listed", versions=["1.0", "1.1"],
        severity=[{"type": "CVSS_V3", "score": "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H"}],
        modified="2026-03-05T10:00:00Z"),
    "PYSEC-2026-0004.json": record(
        "PYSEC-2026-0004", "lastaff", events=[{"introduced": "1.2"}, {"last_affected": "1.4"}]),
    "GO-2026-0005.json": {"id": "GO-2026-0005", "modified": "2026-01-01T00:00:00Z",
                          "affected": [{"package": {"ecosystem": "Go", "name": "vuln-pkg"},
                                        "ranges": [{"type": "SEMVER",
                                                    "events": [{"introduced": "0"}]}]}]},
}


def write_snapshot(folder: Path, records=RECORDS, extra_files=None) -> Path:
    for name, rec in records.items():
        validate(rec)
        p = folder / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(rec, indent=1))
    for name, text in (extra_files or {}).items():
        (folder / name).write_text(text)
    return folder
