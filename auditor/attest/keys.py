"""Signing keys: Ed25519 or ECDSA P-256, generated and loaded with ``cryptography``, offline.

A private key is a PKCS#8 PEM file written 0600 and refused at load when group or others may read
or write it; in CI it can come from ``$AUDITOR_SIGNING_KEY`` (the PEM text itself). A public key is
a SubjectPublicKeyInfo PEM file, the form cosign's ``--key`` reads. A key's id is the sha256 of its
public key's DER SubjectPublicKeyInfo (lower-case hex), the same for both halves of a pair.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import assert_never

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from auditor.errors import InputError
from auditor.spec import Spec

#: the environment variable that may hold the private key's PEM text (CI secrets)
KEY_ENV = "AUDITOR_SIGNING_KEY"
PRIVATE_NAME = "audit.key"
PUBLIC_NAME = "audit.pub"
#: a key file larger than this is not a key
MAX_KEY_BYTES = 64 * 1024


class Algorithm(StrEnum):
    ED25519 = "ed25519"
    ECDSA_P256 = "ecdsa-p256"


PrivateKey = ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey
PublicKey = ed25519.Ed25519PublicKey | ec.EllipticCurvePublicKey


def _spki(public: PublicKey) -> bytes:
    return public.public_bytes(serialization.Encoding.DER,
                               serialization.PublicFormat.SubjectPublicKeyInfo)


def key_id(public: PublicKey) -> str:
    return hashlib.sha256(_spki(public)).hexdigest()


def _algorithm_of(key: PrivateKey | PublicKey, source: str) -> Algorithm:
    if isinstance(key, (ed25519.Ed25519PrivateKey, ed25519.Ed25519PublicKey)):
        return Algorithm.ED25519
    if isinstance(key.curve, ec.SECP256R1):
        return Algorithm.ECDSA_P256
    raise InputError(f"{source}: an ECDSA key on curve {key.curve.name}; only Ed25519 and "
                     "ECDSA P-256 keys are used")


@dataclass(frozen=True)
class VerifyingKey:
    """A public key: checks DSSE signatures (over the PAE bytes)."""

    algorithm: Algorithm
    public: PublicKey
    keyid: str

    def verify(self, signature: bytes, data: bytes) -> bool:
        try:
            if isinstance(self.public, ed25519.Ed25519PublicKey):
                self.public.verify(signature, data)
            else:
                self.public.verify(signature, data, ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            return False
        return True

    def pem(self) -> str:
        return self.public.public_bytes(serialization.Encoding.PEM,
                                        serialization.PublicFormat.SubjectPublicKeyInfo).decode()


@dataclass(frozen=True)
class SigningKey:
    """A private key and where it came from (a file, or the environment variable)."""

    algorithm: Algorithm
    private: PrivateKey
    keyid: str
    source: str  # shown in messages: the file, or $AUDITOR_SIGNING_KEY

    def sign(self, data: bytes) -> bytes:
        """Ed25519 (deterministic), or ECDSA P-256 over SHA-256 (DER; randomised)."""
        if isinstance(self.private, ed25519.Ed25519PrivateKey):
            return self.private.sign(data)
        return self.private.sign(data, ec.ECDSA(hashes.SHA256()))

    def verifying_key(self) -> VerifyingKey:
        public = self.private.public_key()
        return VerifyingKey(self.algorithm, public, self.keyid)


def new_private_key(algorithm: Algorithm) -> PrivateKey:
    if algorithm is Algorithm.ED25519:
        return ed25519.Ed25519PrivateKey.generate()
    if algorithm is Algorithm.ECDSA_P256:
        return ec.generate_private_key(ec.SECP256R1())
    assert_never(algorithm)


@dataclass(frozen=True)
class GeneratedKeys:
    private: Path
    public: Path
    keyid: str
    algorithm: Algorithm


def generate(out: Path, algorithm: Algorithm = Algorithm.ED25519) -> GeneratedKeys:
    """``out/audit.key`` (0600, created exclusively) and ``out/audit.pub``; an existing key file
    is never replaced (InputError, exit 2)."""
    priv_path, pub_path = out / PRIVATE_NAME, out / PUBLIC_NAME
    for p in (priv_path, pub_path):
        if os.path.lexists(p):
            raise InputError(f"--out {out}: {p.name} exists already; a key is never replaced",
                             hint="choose a new folder, or remove the old key pair yourself")
    try:
        out.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise InputError(f"--out {out}: cannot be created: {exc.strerror or exc}") from None
    if not out.is_dir():
        raise InputError(f"--out {out}: is not a folder")
    private = new_private_key(algorithm)
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    public = private.public_key().public_bytes(serialization.Encoding.PEM,
                                               serialization.PublicFormat.SubjectPublicKeyInfo)
    try:
        _write_new(priv_path, pem, 0o600)
        _write_new(pub_path, public, 0o644)
    except OSError as exc:
        priv_path.unlink(missing_ok=True)
        raise InputError(f"--out {out}: cannot be written: {exc.strerror or exc}") from None
    return GeneratedKeys(priv_path, pub_path, key_id(private.public_key()), algorithm)


def _write_new(path: Path, data: bytes, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "wb") as fh:
        os.fchmod(fh.fileno(), mode)  # the umask never widens or narrows it
        fh.write(data)


def _read_key_file(path: Path, what: str, *, private: bool) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise InputError(f"{what} {path}: not found") from None
    except OSError as exc:
        raise InputError(f"{what} {path}: cannot be read: {exc.strerror or exc}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise InputError(f"{what} {path}: not a regular file")
    with os.fdopen(fd, "rb") as fh:
        if private and st.st_mode & 0o077:
            raise InputError(
                f"{what} {path}: mode {stat.S_IMODE(st.st_mode):04o} lets group or others read "
                "or write the private key; it was not used",
                hint=f"chmod 600 {path}, or pass it through ${KEY_ENV} in CI")
        data = fh.read(MAX_KEY_BYTES + 1)
    if len(data) > MAX_KEY_BYTES:
        raise InputError(f"{what} {path}: larger than {MAX_KEY_BYTES} bytes; not a key file")
    return data


def _parse_private(data: bytes, source: str) -> SigningKey:
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except TypeError:
        raise InputError(f"{source}: the private key is encrypted; auditor reads unencrypted "
                         "PKCS#8 keys (keep the file 0600, or use $" + KEY_ENV + ")") from None
    except (ValueError, UnsupportedAlgorithm) as exc:
        if b"PUBLIC KEY" in data:
            raise InputError(f"{source}: is a public key; signing needs the private key "
                             f"({PRIVATE_NAME})") from None
        raise InputError(f"{source}: not a PEM private key ({type(exc).__name__})") from None
    if not isinstance(key, (ed25519.Ed25519PrivateKey, ec.EllipticCurvePrivateKey)):
        raise InputError(f"{source}: a {type(key).__name__}; only Ed25519 and ECDSA P-256 keys "
                         "are used")
    algorithm = _algorithm_of(key, source)
    return SigningKey(algorithm, key, key_id(key.public_key()), source)


def load_signing_key(path: Path, what: str = "--key") -> SigningKey:
    """A private key file: regular, 0600 or stricter, PEM, Ed25519 or P-256 (else exit 2)."""
    return _parse_private(_read_key_file(path, what, private=True), f"{what} {path}")


def signing_key_from_env(environ: Mapping[str, str] | None = None) -> SigningKey | None:
    """The key in ``$AUDITOR_SIGNING_KEY`` (PEM text), or None when the variable is unset/empty."""
    value = (os.environ if environ is None else environ).get(KEY_ENV, "")
    if not value.strip():
        return None
    return _parse_private(value.encode("utf-8"), f"${KEY_ENV}")


def resolve_signing_key(cli_key: Path | None, spec_key: Path | None,
                        environ: Mapping[str, str] | None = None) -> SigningKey | None:
    """The key an audit signs with: ``--key``, else ``$AUDITOR_SIGNING_KEY``, else the spec's
    ``[attest] key``; None (nothing signed) when there is none."""
    if cli_key is not None:
        return load_signing_key(cli_key, "--key")
    from_env = signing_key_from_env(environ)
    if from_env is not None:
        return from_env
    if spec_key is not None:
        return load_signing_key(spec_key, "[attest] key")
    return None


def load_verifying_key(path: Path, what: str = "--key") -> VerifyingKey:
    """A public key file (PEM SubjectPublicKeyInfo, as ``keys generate`` writes ``audit.pub``).
    A private key file is accepted too (its public half is used), under the same mode rule."""
    data = _read_key_file(path, what, private=False)
    source = f"{what} {path}"
    if b"PRIVATE KEY" in data:
        _read_key_file(path, what, private=True)  # the 0600 rule holds for every private key
        return _parse_private(data, source).verifying_key()
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise InputError(f"{source}: not a PEM public key ({type(exc).__name__})") from None
    if not isinstance(key, (ed25519.Ed25519PublicKey, ec.EllipticCurvePublicKey)):
        raise InputError(f"{source}: a {type(key).__name__}; only Ed25519 and ECDSA P-256 keys "
                         "are used")
    return VerifyingKey(_algorithm_of(key, source), key, key_id(key))


def audit_signing_key(spec: Spec, cli_key: Path | None) -> SigningKey | None:
    """:func:`resolve_signing_key` for a spec (its ``[attest] key``, when it has one)."""
    return resolve_signing_key(cli_key, spec.attest.key if spec.attest is not None else None)
