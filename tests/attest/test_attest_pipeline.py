"""Signing through the real pipeline (real git, the tests' small engine), ``attest verify`` of what
it wrote, each tampering case, the report's "Signed" section and the signed companion of audit.json.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from support import simple_case, write_spec
from typer.testing import CliRunner

from auditor.attest.keys import KEY_ENV, Algorithm, generate
from auditor.cli import app

POLICY = '[actions]\nprocess-exec = "review"\n'
WAIVERS = "# no waivers yet\n"


def _run(*args: object) -> Any:
    res = CliRunner().invoke(app, [str(a) for a in args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res


def _case(tmp: Path, **attest: str) -> dict[str, Any]:
    case = simple_case(tmp)
    (tmp / "policy.toml").write_text(POLICY)
    (tmp / "waivers.toml").write_text(WAIVERS)
    sections = {**case["spec"], "scan": {"policy": "policy.toml", "waivers": "waivers.toml"}}
    if attest:
        sections["attest"] = attest
    case["path"] = write_spec(tmp / "audit.toml", sections)
    return case


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One audit signed with an Ed25519 key given by --key (reproducible), kept read-only."""
    tmp = tmp_path_factory.mktemp("attest")
    case = _case(tmp)
    keys = generate(tmp / "keys")
    res = _run("audit", case["path"], "--out", tmp / "out", "--key", keys.private,
               "--reproducible")
    assert res.exit_code in (0, 1), res.output
    return {**case, "tmp": tmp, "out": tmp / "out", "keys": keys, "output": res.output}


def _payload(path: Path) -> dict[str, Any]:
    env = json.loads(path.read_text())
    return json.loads(base64.b64decode(env["payload"]))  # type: ignore[no-any-return]


def test_the_audit_writes_envelopes_and_says_so(signed: dict[str, Any]) -> None:
    out = signed["out"]
    names = sorted(p.name for p in out.glob("*.intoto.jsonl"))
    assert names == ["sbom.intoto.jsonl", "vsa.intoto.jsonl"]  # no wheel built: no provenance
    data = json.loads((out / "audit.json").read_text())
    attest = data["tool"]["attest"]
    assert attest["signed"] == ["sbom.intoto.jsonl", "vsa.intoto.jsonl"]
    assert attest["keyid"] == signed["keys"].keyid and attest["algorithm"] == "ed25519"
    report = (out / "report.md").read_text()
    assert "## Signed" in report and signed["keys"].keyid in report
    assert "vsa.intoto.jsonl" in report
    assert signed["keys"].keyid in signed["output"]


def test_the_vsa_predicate(signed: dict[str, Any]) -> None:
    out, case = signed["out"], signed
    doc = _payload(out / "vsa.intoto.jsonl")
    assert doc["_type"] == "https://in-toto.io/Statement/v1"
    assert doc["predicateType"] == "https://slsa.dev/verification_summary/v1"
    bundle_tree = json.loads((out / "audit.json").read_text())["stages"]["verify"]["bundle_tree"]
    assert doc["subject"] == [{"name": "bundle", "digest": {"gitTree": bundle_tree}}]
    p = doc["predicate"]
    verdict = json.loads((out / "audit.json").read_text())["verdict"]
    assert p["verificationResult"] == ("PASSED" if verdict == "PASS" else "FAILED")
    assert f"AUDITOR_VERDICT_{verdict}" in p["verifiedLevels"]
    assert p["verifier"]["id"].startswith("https://auditor.invalid/verifier/auditor@")
    assert "?commit=" in p["verifier"]["id"]
    assert p["resourceUri"] == "bundle" and "timeVerified" not in p  # --reproducible
    policy = "".join(f"{hashlib.sha256(f.read_bytes()).hexdigest()}  {role}  {shown}\n"
                     for role, f, shown in (
                         ("policy", case["tmp"] / "policy.toml", "policy.toml"),
                         ("waivers", case["tmp"] / "waivers.toml", "waivers.toml"),
                         ("profile", Path(__file__).parents[2] / "policies/engines/generic.toml",
                          "auditor:policies/engines/generic.toml")))
    assert p["policy"] == {"uri": "urn:auditor:policy-set:v1",
                           "digest": {"sha256": hashlib.sha256(policy.encode()).hexdigest()}}
    inputs = {a["uri"]: a["digest"]["sha256"] for a in p["inputAttestations"]}
    assert inputs["audit.json"] == hashlib.sha256((out / "audit.json").read_bytes()).hexdigest()
    assert inputs["sbom.cdx.json"] == hashlib.sha256(
        (out / "sbom.cdx.json").read_bytes()).hexdigest()
    assert str(signed["tmp"]) not in (out / "vsa.intoto.jsonl").read_text()
    assert str(signed["tmp"]) not in json.dumps(doc)


def test_the_sbom_statement_carries_the_sbom(signed: dict[str, Any]) -> None:
    doc = _payload(signed["out"] / "sbom.intoto.jsonl")
    assert doc["predicateType"] == "https://cyclonedx.org/bom"
    assert doc["predicate"] == json.loads((signed["out"] / "sbom.cdx.json").read_text())
    assert doc["subject"][0]["digest"].keys() == {"gitTree"}  # nothing built: the bundle


def test_attest_verify_round_trip(signed: dict[str, Any]) -> None:
    out, pub = signed["out"], signed["keys"].public
    res = _run("attest", "verify", out / "vsa.intoto.jsonl", "--key", pub, "--subject",
               signed["bundle"], "--spec", signed["path"], "--json")
    assert res.exit_code == 0, res.output
    assert "verified" in res.output and "policy digest" in res.output
    assert "subject gitTree" in res.output
    res = _run("attest", "verify", out / "sbom.intoto.jsonl", "--key", pub)
    assert res.exit_code == 0, res.output


def _tampered(tmp: Path, src: Path, change: Any) -> Path:
    env = json.loads(src.read_text())
    change(env)
    dest = tmp / src.name
    dest.write_text(json.dumps(env) + "\n")
    return dest


def test_a_forged_payload_fails(signed: dict[str, Any], tmp_path: Path) -> None:
    def forge(env: dict[str, Any]) -> None:
        doc = json.loads(base64.b64decode(env["payload"]))
        doc["predicate"]["verificationResult"] = "PASSED"
        doc["predicate"]["verifiedLevels"] = ["AUDITOR_VERDICT_PASS"]
        env["payload"] = base64.b64encode(json.dumps(doc).encode()).decode()

    forged = _tampered(tmp_path, signed["out"] / "vsa.intoto.jsonl", forge)
    res = _run("attest", "verify", forged, "--key", signed["keys"].public)
    assert res.exit_code == 1 and "changed after signing (forged)" in res.output


def test_a_changed_payload_type_fails(signed: dict[str, Any], tmp_path: Path) -> None:
    def retype(env: dict[str, Any]) -> None:
        env["payloadType"] = "text/plain"

    res = _run("attest", "verify", _tampered(tmp_path, signed["out"] / "vsa.intoto.jsonl",
                                             retype), "--key", signed["keys"].public)
    assert res.exit_code == 1 and "forged" in res.output


def test_a_wrong_key_fails(signed: dict[str, Any], tmp_path: Path) -> None:
    other = generate(tmp_path / "other", Algorithm.ECDSA_P256)
    res = _run("attest", "verify", signed["out"] / "vsa.intoto.jsonl", "--key", other.public)
    assert res.exit_code == 1 and "wrong key" in res.output and other.keyid in res.output


def test_a_swapped_subject_fails(signed: dict[str, Any], tmp_path: Path) -> None:
    other = tmp_path / "other-bundle"
    shutil.copytree(signed["bundle"], other)
    (other / "engine" / "util.py").write_text("def helper():\n    return 2\n")
    res = _run("attest", "verify", signed["out"] / "vsa.intoto.jsonl", "--key",
               signed["keys"].public, "--subject", other)
    assert res.exit_code == 1 and "swapped" in res.output
    wheel = tmp_path / "some.whl"
    wheel.write_bytes(b"PK")
    res = _run("attest", "verify", signed["out"] / "vsa.intoto.jsonl", "--key",
               signed["keys"].public, "--subject", wheel)
    assert res.exit_code == 1 and "no subject has a sha256 digest" in res.output


@pytest.mark.parametrize("cut", [2, 40, 200])
def test_a_truncated_envelope_fails(signed: dict[str, Any], tmp_path: Path, cut: int) -> None:
    text = (signed["out"] / "vsa.intoto.jsonl").read_text()
    short = tmp_path / "short.intoto.jsonl"
    short.write_text(text[:-cut])
    res = _run("attest", "verify", short, "--key", signed["keys"].public)
    assert res.exit_code == 1 and "not a well-formed DSSE envelope" in res.output


def test_usage_errors_are_exit_2(signed: dict[str, Any], tmp_path: Path) -> None:
    res = _run("attest", "verify", tmp_path / "missing.jsonl", "--key", signed["keys"].public)
    assert res.exit_code == 2 and "not found" in res.output
    notkey = tmp_path / "notkey.pub"
    notkey.write_text("hello\n")
    res = _run("attest", "verify", signed["out"] / "vsa.intoto.jsonl", "--key", notkey)
    assert res.exit_code == 2 and "not a PEM public key" in res.output


def test_a_changed_policy_file_fails_the_spec_check(tmp_path: Path) -> None:
    case = _case(tmp_path)
    keys = generate(tmp_path / "keys")
    assert _run("audit", case["path"], "--out", tmp_path / "out", "--key",
                keys.private).exit_code in (0, 1)
    vsa = tmp_path / "out" / "vsa.intoto.jsonl"
    assert _run("attest", "verify", vsa, "--key", keys.public, "--spec",
                case["path"]).exit_code == 0
    assert "timeVerified" in _payload(vsa)["predicate"]  # not --reproducible
    (tmp_path / "waivers.toml").write_text(WAIVERS + "# edited\n")
    res = _run("attest", "verify", vsa, "--key", keys.public, "--spec", case["path"])
    assert res.exit_code == 1 and "waivers waivers.toml" in res.output
    assert "policy, waivers or profile file changed" in res.output


def test_reproducible_payloads_are_identical(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                             ) -> None:
    """Signing twice gives the same payloads: ECDSA signatures differ, the payloads do not; the
    key comes from the spec's [attest] table, then from $AUDITOR_SIGNING_KEY."""
    keys = generate(tmp_path / "keys", Algorithm.ECDSA_P256)
    case = _case(tmp_path, key="keys/audit.key")
    monkeypatch.delenv(KEY_ENV, raising=False)
    for n in (1, 2):
        res = _run("audit", case["path"], "--out", tmp_path / f"out{n}", "--reproducible")
        assert res.exit_code in (0, 1), res.output
    monkeypatch.setenv(KEY_ENV, keys.private.read_text())
    (tmp_path / "keys" / "audit.key").chmod(0o644)  # the environment wins: the file is not read
    assert _run("audit", case["path"], "--out", tmp_path / "out3",
                "--reproducible").exit_code in (0, 1)
    for name in ("sbom.intoto.jsonl", "vsa.intoto.jsonl"):
        envs = [json.loads((tmp_path / f"out{n}" / name).read_text()) for n in (1, 2, 3)]
        assert envs[0]["payload"] == envs[1]["payload"] == envs[2]["payload"]
        assert envs[0]["signatures"][0]["sig"] != envs[1]["signatures"][0]["sig"]
        assert envs[0]["signatures"][0]["keyid"] == keys.keyid
    for n in (1, 2):
        assert (tmp_path / f"out{n}" / "audit.json").read_bytes() == \
            (tmp_path / "out1" / "audit.json").read_bytes()


def test_without_a_key_nothing_is_signed_and_the_report_says_so(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    case = _case(tmp_path)
    res = _run("audit", case["path"], "--out", tmp_path / "out")
    assert res.exit_code in (0, 1) and "not signed" in res.output
    assert not list((tmp_path / "out").glob("*.intoto.jsonl"))
    assert "not signed: no key was given" in (tmp_path / "out" / "report.md").read_text()
    assert json.loads((tmp_path / "out" / "audit.json").read_text())["tool"]["attest"][
        "signed"] == []


def test_report_checks_the_signed_companion(signed: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "copy"
    shutil.copytree(signed["out"], out)
    res = _run("report", out / "audit.json", "--key", signed["keys"].public)
    assert res.exit_code == 0 and "verified with key" in res.output
    res = _run("report", out / "audit.json")
    assert res.exit_code == 0 and "signature was not checked" in res.output
    other = generate(tmp_path / "other")
    res = _run("report", out / "audit.json", "--key", other.public)
    assert res.exit_code == 1 and "does not verify" in res.output
    data = json.loads((out / "audit.json").read_text())
    data["reasons"].append("edited")
    (out / "audit.json").write_text(json.dumps(data, indent=2))
    res = _run("report", out / "audit.json")
    assert res.exit_code == 1 and "changed after signing" in res.output
