"""Signing keys: generated 0600, refused when others may read them, from the environment in CI."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from support import simple_case, write_spec
from typer.testing import CliRunner

from auditor.attest.keys import (
    KEY_ENV,
    Algorithm,
    generate,
    load_signing_key,
    load_verifying_key,
    resolve_signing_key,
)
from auditor.cli import app
from auditor.errors import InputError


@pytest.mark.parametrize("algorithm", list(Algorithm))
def test_generate_writes_a_private_key_0600_and_a_public_key(tmp_path: Path,
                                                             algorithm: Algorithm) -> None:
    made = generate(tmp_path / "keys", algorithm)
    assert os.stat(made.private).st_mode & 0o777 == 0o600
    assert made.public.read_text().startswith("-----BEGIN PUBLIC KEY-----")
    key = load_signing_key(made.private)
    public = load_verifying_key(made.public)
    assert key.algorithm is public.algorithm is algorithm
    assert key.keyid == public.keyid == made.keyid and len(made.keyid) == 64
    assert public.verify(key.sign(b"data"), b"data")
    assert not public.verify(key.sign(b"data"), b"dat4")


def test_generate_never_replaces_a_key(tmp_path: Path) -> None:
    generate(tmp_path)
    before = (tmp_path / "audit.key").read_bytes()
    res = CliRunner().invoke(app, ["keys", "generate", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "exists already" in res.output
    assert (tmp_path / "audit.key").read_bytes() == before


def test_generate_cli_refuses_an_unknown_algorithm(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["keys", "generate", "--out", str(tmp_path), "--algorithm",
                                   "rsa"])
    assert res.exit_code == 2 and "ed25519 or ecdsa-p256" in res.output
    assert not (tmp_path / "audit.key").exists()


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_a_key_group_or_others_can_read_is_refused(tmp_path: Path, mode: int) -> None:
    made = generate(tmp_path)
    made.private.chmod(mode)
    with pytest.raises(InputError) as info:
        load_signing_key(made.private)
    assert str(made.private) in info.value.message and f"{mode:04o}" in info.value.message


def test_audit_with_a_0644_key_is_exit_2_naming_the_file(tmp_path: Path) -> None:
    made = generate(tmp_path / "keys")
    made.private.chmod(0o644)
    spec = write_spec(tmp_path / "audit.toml", simple_case(tmp_path)["spec"])
    res = CliRunner().invoke(app, ["audit", str(spec), "--key", str(made.private),
                                   "--out", str(tmp_path / "out")])
    assert res.exit_code == 2
    assert "audit.key" in res.output and "0644" in res.output
    assert not (tmp_path / "out").exists()  # refused before any work


def test_bad_key_files_are_clear_errors(tmp_path: Path) -> None:
    made = generate(tmp_path)
    with pytest.raises(InputError, match="is a public key"):
        load_signing_key(_private_copy(made.public, tmp_path / "pub-as-key"))
    junk = _private_copy(None, tmp_path / "junk", b"not a key\n")
    with pytest.raises(InputError, match="not a PEM private key"):
        load_signing_key(junk)
    with pytest.raises(InputError, match="not a PEM public key"):
        load_verifying_key(junk)
    with pytest.raises(InputError, match="not found"):
        load_signing_key(tmp_path / "missing.key")
    with pytest.raises(InputError, match="not a regular file"):
        load_verifying_key(tmp_path)
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    rsa_file = _private_copy(None, tmp_path / "rsa.key", _pem(rsa_key))
    with pytest.raises(InputError, match="only Ed25519 and ECDSA P-256"):
        load_signing_key(rsa_file)
    p384 = _private_copy(None, tmp_path / "p384.key", _pem(ec.generate_private_key(ec.SECP384R1())))
    with pytest.raises(InputError, match="secp384r1"):
        load_signing_key(p384)
    encrypted = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"pw"))
    with pytest.raises(InputError, match="encrypted"):
        load_signing_key(_private_copy(None, tmp_path / "enc.key", encrypted))


def test_a_private_key_given_to_verify_must_be_0600_too(tmp_path: Path) -> None:
    made = generate(tmp_path)
    assert load_verifying_key(made.private).keyid == made.keyid
    made.private.chmod(0o644)
    with pytest.raises(InputError, match="0644"):
        load_verifying_key(made.private)


def test_key_precedence_cli_then_environment_then_spec(tmp_path: Path) -> None:
    a, b, c = (generate(tmp_path / n) for n in "abc")
    env = {KEY_ENV: b.private.read_text()}
    assert resolve_signing_key(a.private, c.private, env).keyid == a.keyid  # type: ignore[union-attr]
    got = resolve_signing_key(None, c.private, env)
    assert got is not None and got.keyid == b.keyid and got.source == f"${KEY_ENV}"
    assert resolve_signing_key(None, c.private, {}).keyid == c.keyid  # type: ignore[union-attr]
    assert resolve_signing_key(None, None, {KEY_ENV: "  "}) is None
    with pytest.raises(InputError, match=KEY_ENV):
        resolve_signing_key(None, None, {KEY_ENV: "garbage"})


def _pem(key: object) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM,  # type: ignore[attr-defined]
                             serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def _private_copy(src: Path | None, dest: Path, data: bytes | None = None) -> Path:
    dest.write_bytes(data if data is not None else src.read_bytes())  # type: ignore[union-attr]
    dest.chmod(0o600)
    return dest


def test_the_attest_table_is_validated_like_the_others(tmp_path: Path) -> None:
    from auditor.errors import SpecError
    from auditor.spec import load_spec

    case = simple_case(tmp_path)
    generate(tmp_path / "keys")
    spec = load_spec(write_spec(tmp_path / "a.toml", {**case["spec"],
                                                      "attest": {"key": "keys/audit.key"}}))
    assert spec.attest is not None and spec.attest.key == tmp_path / "keys" / "audit.key"
    with pytest.raises(SpecError) as info:
        load_spec(write_spec(tmp_path / "b.toml", {**case["spec"], "attest": {
            "key": "keys/audit.key", "algorithm": "ed25519"}}))
    assert "attest.algorithm" in str(info.value.diagnostics()) and "unknown key" in str(
        info.value.diagnostics())
    with pytest.raises(SpecError) as info:
        load_spec(write_spec(tmp_path / "c.toml", {**case["spec"], "attest": {
            "key": "keys/missing.key"}}))
    assert "attest.key" in info.value.diagnostics() and "does not exist" in info.value.diagnostics()
