"""VEX: each known vulnerability judged for a reason auditor has (not deployed, a reviewer's
waiver, or affected), in the SBOM's ``analysis`` and in ``vex.openvex.json`` (OpenVEX v0.2.0)."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from cyclonedx.output import OutputFormat
from cyclonedx.schema import SchemaVersion
from cyclonedx.validation import make_schemabased_validator
from support import GitRepo, write_spec

from auditor.errors import SpecError
from auditor.policy import Justification, VexStatus, Waiver, load_waivers
from auditor.results.deps import Kind
from auditor.sbom.inputs import Dependency, DepsInfo, Vulnerability
from auditor.sbom.openvex import CONTEXT, OPENVEX_SCHEMA, Product, build_openvex
from auditor.sbom.vex import Basis, judge, waivers_by_label

sys.path.insert(0, str(Path(__file__).parents[1] / "deps"))
from deps_osv_records import record, write_snapshot  # noqa: E402

VALIDATOR = jsonschema.Draft202012Validator(
    OPENVEX_SCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
NOW = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
PRODUCT = Product(purl="pkg:pypi/engine@1.0.0%2Baudited.sm86", sha256="ab" * 32)


def _vuln(id_: str, package: str, version: str = "1.0", *, waiver: str | None = None,
          fixed: tuple[str, ...] = ("2.0",)) -> Vulnerability:
    return Vulnerability(id=id_, aliases=(f"CVE-{id_}",), package=package, version=version,
                         fixed=fixed, severity="high", waived=waiver is not None, waiver=waiver)


def _dep(name: str) -> Dependency:
    return Dependency(name=name, specifier=None, pin="1.0", url=None, kind=Kind.PYPI,
                      locations=("requirements.txt:1",))


def _waiver(reason: str, state: str | None = None, justification: str | None = None) -> Waiver:
    return Waiver(rule="dependency.vulnerable", path="requirements.txt", fingerprint="*",
                  reason=reason, owner="alice@example.org", expires=dt.date(2099, 1, 1),
                  vex_state=state, vex_justification=justification)


# ---------------------------------------------------------------- the judgements


def test_each_vulnerability_is_judged_for_the_reason_auditor_has():
    ok = _waiver("patched in our fork", "not_affected", "vulnerable_code_not_present")
    accepted = _waiver("reloader is off in production")
    deps = DepsInfo(status=None, dependencies=(_dep("Deployed_Pkg"), _dep("waived-a"),
                                               _dep("waived-b")),
                    vulnerabilities=(
                        _vuln("V-1", "deployed-pkg"),
                        _vuln("V-2", "elsewhere"),  # not on the deployed surface
                        _vuln("V-3", "waived-a", waiver=ok.label),
                        _vuln("V-4", "waived-b", waiver=accepted.label, fixed=()),
                    ))
    found = judge(deps, waivers_by_label([ok, accepted]))
    assert [(j.vuln.id, j.status, j.basis, j.justification) for j in found] == [
        ("V-1", VexStatus.AFFECTED, Basis.FOUND, None),
        ("V-2", VexStatus.NOT_AFFECTED, Basis.SURFACE, Justification.COMPONENT_NOT_PRESENT),
        ("V-3", VexStatus.NOT_AFFECTED, Basis.WAIVER, Justification.VULNERABLE_CODE_NOT_PRESENT),
        ("V-4", VexStatus.AFFECTED, Basis.WAIVER, None),
    ]
    assert found[0].action == "upgrade deployed-pkg to 2.0 or later"
    # the waiver's reason and owner are carried, whichever state it states
    assert "alice@example.org" in found[2].impact and "patched in our fork" in found[2].impact
    assert "risk accepted" in found[3].action and "reloader is off" in found[3].action
    assert "no fixed version" in found[3].action
    doc = json.loads(build_openvex(found, PRODUCT, timestamp=NOW, tool_version="0").text)
    VALIDATOR.validate(doc)
    assert [s["status"] for s in doc["statements"]] == ["affected", "not_affected",
                                                        "not_affected", "affected"]
    assert "vulnerable_code_not_in_execute_path" not in json.dumps(doc)


def test_waivers_that_disagree_on_the_state_keep_affected():
    a = _waiver("same reason", "not_affected", "component_not_present")
    b = _waiver("same reason")
    deps = DepsInfo(status=None, dependencies=(_dep("p"),),
                    vulnerabilities=(_vuln("V-9", "p", waiver=a.label),))
    (j,) = judge(deps, waivers_by_label([a, b]))
    assert j.status is VexStatus.AFFECTED and "disagree" in j.detail


def test_the_document_is_deterministic_and_names_its_product():
    deps = DepsInfo(status=None, dependencies=(_dep("p"),), vulnerabilities=(_vuln("V-1", "p"),))
    one = build_openvex(judge(deps), PRODUCT, timestamp=NOW, tool_version="0")
    two = build_openvex(judge(deps), PRODUCT, timestamp=NOW, tool_version="0")
    assert one.text == two.text and one.id.startswith("urn:uuid:")
    doc = json.loads(one.text)
    assert doc["@context"] == CONTEXT == "https://openvex.dev/ns/v0.2.0"
    product = doc["statements"][0]["products"][0]
    assert product["@id"] == PRODUCT.purl and product["hashes"] == {"sha-256": "ab" * 32}
    assert product["subcomponents"] == [{"@id": "pkg:pypi/p@1.0",
                                         "identifiers": {"purl": "pkg:pypi/p@1.0"}}]
    assert one.counts == {"affected": 1}


# ---------------------------------------------------------------- the schema (OpenVEX v0.2.0)


def _doc(**statement: Any) -> dict[str, Any]:
    base = {"vulnerability": {"name": "CVE-2026-1"}, "products": [{"@id": "pkg:pypi/x@1"}],
            "status": "fixed"}
    return {"@context": CONTEXT, "@id": "urn:uuid:00000000-0000-0000-0000-000000000000",
            "author": "someone", "timestamp": "2026-12-01T00:00:00Z", "version": 1,
            "statements": [{**base, **statement}]}


@pytest.mark.parametrize(("statement", "valid"), [
    ({}, True),
    ({"status": "not_affected", "justification": "component_not_present"}, True),
    ({"status": "not_affected", "impact_statement": "removed by a patch"}, True),
    ({"status": "not_affected"}, False),  # neither justification nor impact statement
    ({"status": "affected"}, False),  # no action statement
    ({"status": "affected", "action_statement": "upgrade"}, True),
    ({"status": "fixed", "justification": "component_not_present"}, False),
    ({"status": "not_affected", "justification": "because"}, False),
    ({"status": "exploitable"}, False),  # a CycloneDX state, not an OpenVEX status
    ({"vulnerability": {}}, False),
    ({"products": [{"hashes": {"sha256": "ab"}}]}, False),  # the spec's name is "sha-256"
    ({"unknown": 1}, False),
])
def test_the_schema_holds_the_specifications_rules(statement, valid):
    assert VALIDATOR.is_valid(_doc(**statement)) is valid


def test_the_schema_requires_the_document_fields():
    for key in ("@context", "@id", "author", "timestamp", "version"):
        doc = _doc()
        del doc[key]
        assert not VALIDATOR.is_valid(doc), key
    assert not VALIDATOR.is_valid({**_doc(), "@context": "https://openvex.dev/ns"})


# ---------------------------------------------------------------- waivers state VEX


def _waivers_file(tmp_path: Path, extra: str) -> Path:
    p = tmp_path / "waivers.toml"
    p.write_text('[[waiver]]\nrule = "dependency.vulnerable"\npath = "requirements.txt"\n'
                 'fingerprint = "*"\nreason = "r"\nowner = "o"\nexpires = 2099-01-01\n' + extra)
    return p


def test_a_waiver_may_state_a_vex_state_and_justification(tmp_path):
    (w,) = load_waivers(_waivers_file(tmp_path, 'vex_state = "not_affected"\n'
                                                'vex_justification = "component_not_present"\n'))
    assert (w.vex_state, w.vex_justification) == ("not_affected", "component_not_present")


@pytest.mark.parametrize(("extra", "key", "words"), [
    ('vex_state = "not_affected"\nvex_justification = "vulnerable_code_not_in_execute_path"\n',
     "vex_justification", "reachability"),
    ('vex_state = "affected"\nvex_justification = "component_not_present"\n',
     "vex_justification", "only with"),
    ('vex_state = "exploitable"\n', "vex_state", "expected one of"),
])
def test_a_waiver_with_a_bad_vex_field_is_refused_naming_it(tmp_path, extra, key, words):
    with pytest.raises(SpecError) as info:
        load_waivers(_waivers_file(tmp_path, extra))
    assert info.value.key == f"waiver[0].{key}" and words in info.value.message


# ---------------------------------------------------------------- through a real audit


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    """A fork that pins uvicorn (requirements.txt) and fastapi (pyproject.toml), both with known
    vulnerabilities; a waiver says uvicorn's is not_affected."""
    tmp = tmp_path_factory.mktemp("vex")
    repo = GitRepo(tmp / "engine")
    repo.commit("initial", files={
        "engine/__init__.py": "VERSION = '1.0.0'\n",
        "pyproject.toml": '[project]\nname = "tinyengine"\nversion = "1.0.0"\n'
                          'dependencies = ["fastapi==0.110.0"]\n',
        "requirements.txt": "uvicorn==0.29.0\n",
    })
    repo.tag("v1.0.0")
    repo.checkout("series", new=True)
    c1 = repo.commit("option", files={"engine/opt.py": "FAST = True\n"},
                     author="Fork Author <fork@community.example>")
    repo.archive(tmp / "fork.tar.gz", "series", prefix="engine/")
    write_snapshot(tmp / "osv", records={
        "PYSEC-2026-0100.json": record("PYSEC-2026-0100", "uvicorn",
                                       events=[{"introduced": "0"}, {"fixed": "0.30.0"}],
                                       modified="2026-11-30T00:00:00Z"),
        "PYSEC-2026-0101.json": record("PYSEC-2026-0101", "fastapi",
                                       events=[{"introduced": "0"}, {"fixed": "0.115.0"}],
                                       modified="2026-11-30T00:00:00Z"),
    })
    (tmp / "waivers.toml").write_text(
        '[[waiver]]\nrule = "dependency.vulnerable"\npath = "requirements.txt"\n'
        'fingerprint = "*"\nreason = "uvicorn runs behind our proxy, which drops smuggled '
        'requests"\nowner = "alice@example.org"\nexpires = 2099-01-01\n'
        'vex_state = "not_affected"\n'
        'vex_justification = "vulnerable_code_cannot_be_controlled_by_adversary"\n')
    spec = write_spec(tmp / "audit.toml", {
        "engine": {"profile": "generic", "version": "1.0.0"},
        "upstream": {"repo": "engine", "ref": "v1.0.0"},
        "patches": {"ref": "series", "commits": [c1]},
        "bundle": {"path": "fork.tar.gz", "strip_components": 1},
        "scan": {"scope": "diff", "waivers": "waivers.toml"},
        "deps": {"vulns": "osv:osv", "max_age_days": 100000},
    })
    res = subprocess.run([sys.executable, "-m", "auditor", "audit", str(spec), "--out",
                          str(tmp / "out"), "--reproducible"],
                         capture_output=True, text=True, timeout=600)
    return {"tmp": tmp, "out": tmp / "out", "res": res}


def test_the_audit_writes_the_openvex_document_and_the_sbom_analysis(audited):
    out = audited["out"]
    assert (out / "vex.openvex.json").is_file(), audited["res"].stderr[-3000:]
    doc = json.loads((out / "vex.openvex.json").read_text())
    VALIDATOR.validate(doc)
    by_id = {s["vulnerability"]["name"]: s for s in doc["statements"]}
    uv, fa = by_id["PYSEC-2026-0100"], by_id["PYSEC-2026-0101"]
    assert uv["status"] == "not_affected"
    assert uv["justification"] == "vulnerable_code_cannot_be_controlled_by_adversary"
    assert "alice@example.org" in uv["impact_statement"] and "proxy" in uv["impact_statement"]
    assert fa["status"] == "affected" and fa["action_statement"].startswith(
        "upgrade fastapi to 0.115.0")
    assert uv["products"][0]["subcomponents"][0]["@id"] == "pkg:pypi/uvicorn@0.29.0"
    audit = json.loads((out / "audit.json").read_text())
    assert audit["stages"]["sbom"]["vex"]["counts"] == {"affected": 1, "not_affected": 1}
    text = (out / "sbom.cdx.json").read_text()
    error = make_schemabased_validator(OutputFormat.JSON, SchemaVersion.V1_6).validate_str(text)
    assert error is None, str(error)[:2000]
    vulns = {v["id"]: v for v in json.loads(text)["vulnerabilities"]}
    assert vulns["PYSEC-2026-0100"]["analysis"]["state"] == "not_affected"
    assert "alice@example.org" in vulns["PYSEC-2026-0100"]["analysis"]["detail"]
    props = {p["name"]: p["value"] for p in vulns["PYSEC-2026-0100"]["properties"]}
    assert props["auditor:vex:waiver-owner"] == "alice@example.org"
    assert vulns["PYSEC-2026-0101"]["analysis"]["state"] == "exploitable"
    assert vulns["PYSEC-2026-0101"]["analysis"]["response"] == ["update"]
    for name in ("vex.openvex.json", "sbom.cdx.json", "audit.json"):
        assert "vulnerable_code_not_in_execute_path" not in (out / name).read_text()
        assert "code_not_reachable" not in (out / name).read_text()
