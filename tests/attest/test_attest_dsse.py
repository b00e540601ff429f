"""DSSE envelopes against the DSSE spec: PAE bytes, the envelope's fields, strict decoding."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from auditor.attest import dsse
from auditor.attest.keys import Algorithm, generate, load_signing_key


def test_pae_is_the_dsse_v1_encoding() -> None:
    # the example of the DSSE protocol document
    assert dsse.pae("http://example.com/HelloWorld", b"hello world") == \
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    # lengths are byte counts, not characters
    assert dsse.pae("t", "é".encode()) == b"DSSEv1 1 t 2 \xc3\xa9"
    assert dsse.pae(dsse.PAYLOAD_TYPE, b"") == b"DSSEv1 28 application/vnd.in-toto+json 0 "


@pytest.mark.parametrize("algorithm", list(Algorithm))
def test_envelope_shape_and_round_trip(tmp_path: Path, algorithm: Algorithm) -> None:
    key = load_signing_key(generate(tmp_path, algorithm).private)
    payload = b'{"_type": "https://in-toto.io/Statement/v1"}\n'
    env = dsse.sign(payload, key)
    line = env.line()
    assert line.endswith("\n") and line.count("\n") == 1
    data = json.loads(line)
    assert list(data) == ["payloadType", "payload", "signatures"]
    assert data["payloadType"] == "application/vnd.in-toto+json"
    assert base64.b64decode(data["payload"], validate=True) == payload
    assert [set(s) for s in data["signatures"]] == [{"keyid", "sig"}]
    assert data["signatures"][0]["keyid"] == key.keyid
    # the signature is over the PAE, checked with the public key alone
    sig = base64.b64decode(data["signatures"][0]["sig"])
    assert key.verifying_key().verify(sig, dsse.pae(dsse.PAYLOAD_TYPE, payload))
    assert not key.verifying_key().verify(sig, payload)
    back = dsse.decode(line)
    assert back == env and back.verified_by(key.verifying_key())


def test_ed25519_signatures_are_deterministic_ecdsa_payloads_are(tmp_path: Path) -> None:
    ed = load_signing_key(generate(tmp_path / "ed", Algorithm.ED25519).private)
    p256 = load_signing_key(generate(tmp_path / "p256", Algorithm.ECDSA_P256).private)
    assert dsse.sign(b"x", ed).line() == dsse.sign(b"x", ed).line()
    a, b = dsse.sign(b"x", p256), dsse.sign(b"x", p256)
    assert a.payload == b.payload and a.signatures != b.signatures


@pytest.mark.parametrize(("text", "why"), [
    ("", "empty"),
    ('{"payloadType": "a", "payload": "', "truncated or garbled"),
    ("[]", "not a JSON object"),
    ('{"payload": "", "signatures": []}', "missing payloadType"),
    ('{"payloadType": "a", "payload": "", "signatures": [], "x": 1}', "unknown x"),
    ('{"payloadType": "a", "payload": "!!", "signatures": [{"sig": ""}]}', "payload is not valid"),
    ('{"payloadType": "a", "payload": "", "signatures": []}', "non-empty list"),
    ('{"payloadType": "a", "payload": "", "signatures": [{"sig": "", "k": 1}]}', "keyid, sig"),
    ('{"payloadType": "a", "payload": "", "signatures": [{"sig": "%%"}]}', "sig is not valid"),
    ('{"payloadType": 1, "payload": "", "signatures": [{"sig": ""}]}', "payloadType"),
    ('{}\n{}', "2 lines"),
])
def test_malformed_envelopes_are_refused(text: str, why: str) -> None:
    with pytest.raises(dsse.EnvelopeError, match=why):
        dsse.decode(text)


def test_an_envelope_without_key_ids_is_checked_by_signature_alone(tmp_path: Path) -> None:
    """cosign writes an empty keyid: the signature still decides, and a failure says both
    possible causes."""
    from auditor.attest.keys import load_verifying_key
    from auditor.attest.verify import VerificationError, check_signature

    made = generate(tmp_path / "a")
    env = dsse.sign(b"{}", load_signing_key(made.private))
    bare = dsse.Envelope(env.payload_type, env.payload,
                         (dsse.Signature("", env.signatures[0].sig),))
    assert dsse.decode(bare.line()).verified_by(load_verifying_key(made.public))
    other = load_verifying_key(generate(tmp_path / "b").public)
    with pytest.raises(VerificationError, match="another key signed it"):
        check_signature(tmp_path / "x", bare, other)
