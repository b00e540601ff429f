"""``vex.openvex.json``: the audit's VEX judgements (:mod:`auditor.sbom.vex`) as an OpenVEX v0.2.0
document, checked against :data:`OPENVEX_SCHEMA` before it is written.

The schema is written from the OpenVEX v0.2.0 specification (openvex/spec, OPENVEX-SPEC.md): the
document's required ``@context``, ``@id`` (an IRI), ``author``, ``timestamp`` and ``version``; each
statement's ``vulnerability`` (``name`` required), ``status`` (one of four labels), a
``justification`` from the five labels or an ``impact_statement`` for ``not_affected``, an
``action_statement`` for ``affected``; products and subcomponents identified by ``@id``,
``identifiers`` (purl, cpe22, cpe23) and ``hashes`` (the spec's hash-name table).

The product is the artifact the SBOM describes (the built wheel, or the verified source bundle);
the vulnerable package is its subcomponent. The document's ``@id`` is derived from its content, so
the same audit gives the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from packageurl import PackageURL
from packaging.utils import canonicalize_name

from auditor import jsonschemas
from auditor.bundledigest import BundleDigest
from auditor.errors import ToolError
from auditor.policy import VexStatus
from auditor.redaction import Redacted
from auditor.sbom.vex import VexJudgement
from auditor.textsafe import dump_json

CONTEXT = "https://openvex.dev/ns/v0.2.0"
VEX_FILE = "vex.openvex.json"
ID_NAMESPACE = uuid.UUID("5b0e3a52-8f7e-5c8e-b3a9-2b6f0e9c4d17")

_STATUSES = ["not_affected", "affected", "fixed", "under_investigation"]
_JUSTIFICATIONS = ["component_not_present", "vulnerable_code_not_present",
                   "vulnerable_code_not_in_execute_path",
                   "vulnerable_code_cannot_be_controlled_by_adversary",
                   "inline_mitigations_already_exist"]
_HASH_NAMES = ["md5", "sha1", "sha-256", "sha-384", "sha-512", "sha3-224", "sha3-256",
               "sha3-384", "sha3-512", "blake2s-256", "blake2b-256", "blake2b-512"]
_TEXT = {"type": "string", "minLength": 1}
_TIME = {"type": "string", "format": "date-time"}
_COMPONENT_PROPS: dict[str, Any] = {
    "@id": {"type": "string", "format": "iri", "minLength": 1},
    "identifiers": {"type": "object", "minProperties": 1, "additionalProperties": False,
                    "properties": {"purl": _TEXT, "cpe22": _TEXT, "cpe23": _TEXT}},
    "hashes": {"type": "object", "minProperties": 1, "additionalProperties": False,
               "properties": {h: {"type": "string", "pattern": "^[0-9a-f]+$"}
                              for h in _HASH_NAMES}},
}
_COMPONENT = {"type": "object", "additionalProperties": False, "properties": _COMPONENT_PROPS,
              "anyOf": [{"required": ["@id"]}, {"required": ["identifiers"]},
                        {"required": ["hashes"]}]}
#: OpenVEX v0.2.0, as its specification defines the document (JSON Schema 2020-12)
OPENVEX_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["@context", "@id", "author", "timestamp", "version", "statements"],
    "additionalProperties": False,
    "properties": {
        "@context": {"const": CONTEXT},
        "@id": {"type": "string", "format": "iri", "minLength": 1},
        "author": _TEXT,
        "role": _TEXT,
        "timestamp": _TIME,
        "last_updated": _TIME,
        "version": {"type": "integer", "minimum": 1},
        "tooling": _TEXT,
        "statements": {"type": "array", "items": {
            "type": "object",
            "required": ["vulnerability", "status", "products"],
            "additionalProperties": False,
            "properties": {
                "@id": {"type": "string", "format": "iri"},
                "version": {"type": "integer", "minimum": 0},
                "vulnerability": {
                    "type": "object", "required": ["name"], "additionalProperties": False,
                    "properties": {"@id": {"type": "string", "format": "iri"}, "name": _TEXT,
                                   "description": {"type": "string"},
                                   "aliases": {"type": "array", "items": _TEXT}}},
                "timestamp": _TIME,
                "last_updated": _TIME,
                "products": {"type": "array", "minItems": 1, "items": {
                    **_COMPONENT,
                    "properties": {**_COMPONENT_PROPS,
                                   "subcomponents": {"type": "array", "items": _COMPONENT}}}},
                "status": {"enum": _STATUSES},
                "supplier": _TEXT,
                "status_notes": {"type": "string"},
                "justification": {"enum": _JUSTIFICATIONS},
                "impact_statement": {"type": "string"},
                "action_statement": _TEXT,
                "action_statement_timestamp": _TIME,
            },
            "allOf": [
                {"if": {"properties": {"status": {"const": "not_affected"}}},
                 "then": {"anyOf": [{"required": ["justification"]},
                                    {"required": ["impact_statement"]}]}},
                {"if": {"properties": {"status": {"const": "affected"}}},
                 "then": {"required": ["action_statement"]}},
                {"if": {"not": {"properties": {"status": {"const": "not_affected"}}}},
                 "then": {"not": {"required": ["justification"]}}},
            ],
        }},
    },
}


@dataclass(frozen=True)
class Product:
    """The artifact the statements are about (the SBOM's metadata component)."""

    purl: str
    sha256: str | None


@dataclass(frozen=True)
class VexDocument:
    text: Redacted
    id: str
    statements: int
    counts: Mapping[str, int]  # by status


def vex_product(sbom_text: str, bundle: BundleDigest | None) -> Product:
    """The SBOM's artifact as the VEX product: its purl and sha256 (a source bundle without a
    build: a generic purl, and the bundle file's sha256)."""
    comp = json.loads(sbom_text).get("metadata", {}).get("component", {})
    digest = next((h.get("content") for h in comp.get("hashes", [])
                   if h.get("alg") == "SHA-256"), None)
    purl = comp.get("purl")
    if isinstance(purl, str) and purl:
        return Product(purl=purl, sha256=digest if isinstance(digest, str) else None)
    generic = PackageURL(type="generic", name=str(comp.get("name") or "engine"),
                         version=str(comp.get("version") or "") or None).to_string()
    return Product(purl=generic, sha256=bundle.sha256 if bundle is not None else None)


def _rfc3339(when: datetime) -> str:
    return when.astimezone(UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def _package_purl(j: VexJudgement) -> str:
    v = j.vuln
    return PackageURL(type="pypi", name=str(canonicalize_name(v.package)),
                      version=v.version or None).to_string()


def _statement(j: VexJudgement, product: Product) -> dict[str, Any]:
    v = j.vuln
    vulnerability: dict[str, Any] = {"name": v.id}
    if v.aliases:
        vulnerability["aliases"] = list(v.aliases)
    if v.summary:
        vulnerability["description"] = v.summary  # redacted by dump_json
    sub = _package_purl(j)
    prod: dict[str, Any] = {"@id": product.purl, "identifiers": {"purl": product.purl}}
    if product.sha256:
        prod["hashes"] = {"sha-256": product.sha256}
    prod["subcomponents"] = [{"@id": sub, "identifiers": {"purl": sub}}]
    out: dict[str, Any] = {"vulnerability": vulnerability, "products": [prod],
                           "status": j.status.value, "status_notes": j.detail}
    if j.status is VexStatus.NOT_AFFECTED:
        if j.justification is not None:
            out["justification"] = j.justification.value
        if j.impact:
            out["impact_statement"] = j.impact
    if j.status is VexStatus.AFFECTED:
        out["action_statement"] = j.action or "upgrade or remove the affected package"
    return out


def build_openvex(judgements: Sequence[VexJudgement], product: Product, *, timestamp: datetime,
                  tool_version: str) -> VexDocument:
    """The OpenVEX document of ``judgements`` about ``product``; ToolError when it does not fit
    :data:`OPENVEX_SCHEMA` (nothing is written then)."""
    statements = [_statement(j, product) for j in judgements]
    body: dict[str, Any] = {
        "@context": CONTEXT,
        "@id": "",
        "author": "auditor (automated audit; waivers by the reviewers they name)",
        "role": "audit tool",
        "timestamp": _rfc3339(timestamp),
        "version": 1,
        "tooling": f"auditor {tool_version}",
        "statements": statements,
    }
    digest = hashlib.sha256(dump_json(body).encode()).hexdigest()
    body["@id"] = f"urn:uuid:{uuid.uuid5(ID_NAMESPACE, digest)}"
    validate_openvex(body)
    counts: dict[str, int] = {}
    for j in judgements:
        counts[j.status.value] = counts.get(j.status.value, 0) + 1
    return VexDocument(text=dump_json(body), id=body["@id"], statements=len(statements),
                       counts=dict(sorted(counts.items())))


def validate_openvex(doc: Mapping[str, Any]) -> None:
    """Check ``doc`` against :data:`OPENVEX_SCHEMA`; a ToolError naming the first problem."""
    problem = jsonschemas.first_problem(OPENVEX_SCHEMA, doc)
    if problem is not None:
        raise ToolError(f"the OpenVEX document is malformed at {problem}")
