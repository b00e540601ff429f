"""The in-toto Statement v1 with an SLSA Provenance v1 predicate for the wheel auditor built.

Written as is; with a key the audit also signs these bytes as a DSSE envelope
(:mod:`auditor.attest`), and a team may sign it with its own tools (see sboms/README.md). The ``buildType``
:data:`BUILD_TYPE` names auditor's build-recipe format; its ``externalParameters`` are the audit
spec and the build recipe (path relative to the spec's folder + sha256), and its
``resolvedDependencies`` the upstream commit, the series commits in order, the audited bundle, the
official wheel and the toolchain. The document is checked against :data:`STATEMENT_SCHEMA` (the
shape of both specifications, the parts auditor writes) before it is written.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from auditor import jsonschemas
from auditor.bundledigest import BundleDigest
from auditor.errors import InputError, ToolError
from auditor.model import Workspace
from auditor.redaction import Redacted
from auditor.sbom.inputs import BuildInfo, sha256_or_none
from auditor.sbom.locator import Locator
from auditor.textsafe import dump_json

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://slsa.dev/provenance/v1"
#: the format of auditor's build recipes (builds/*.toml) and of what they mean. SLSA asks for a
#: TypeURI; the project owns no domain, so the name sits under ``.invalid`` (RFC 6761: reserved,
#: never registered or resolved), which nobody can claim or serve (see sboms/README.md)
BUILD_TYPE = "https://auditor.invalid/build/recipe/v1"
#: the builder (auditor's network-less local build of the changed CUDA modules + wheel overlay)
#: unless :data:`BUILDER_ID_ENV` names the team's own build platform
BUILDER_ID = "https://auditor.invalid/builder/local/v1"
BUILDER_ID_ENV = "AUDITOR_BUILDER_ID"
_URI_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s\x00-\x1f\x7f]+$")
INVOCATION_NAMESPACE = uuid.UUID("0b8f7f44-58a4-5bd8-a1c2-4d2a39b5e7f0")

_DIGEST = {"type": "object", "minProperties": 1,
           "additionalProperties": {"type": "string", "pattern": "^[0-9a-f]+$"}}
_RESOURCE = {
    "type": "object",
    "properties": {
        "uri": {"type": "string", "minLength": 1},
        "digest": _DIGEST,
        "name": {"type": "string"},
        "downloadLocation": {"type": "string"},
        "mediaType": {"type": "string"},
        "content": {"type": "string"},
        "annotations": {"type": "object"},
    },
    "anyOf": [{"required": ["uri"]}, {"required": ["digest"]}, {"required": ["content"]}],
    "additionalProperties": False,
}
_TIME = {"type": "string", "pattern": r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$"}
#: the shape of an in-toto Statement v1 carrying an SLSA Provenance v1 predicate
STATEMENT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["_type", "subject", "predicateType", "predicate"],
    "additionalProperties": False,
    "properties": {
        "_type": {"const": STATEMENT_TYPE},
        "subject": {"type": "array", "minItems": 1, "items": {
            "type": "object", "required": ["name", "digest"],
            "properties": {"name": {"type": "string", "minLength": 1},
                           "digest": {**_DIGEST, "required": ["sha256"],
                                      "properties": {"sha256": {"pattern": "^[0-9a-f]{64}$"}}}}}},
        "predicateType": {"const": PREDICATE_TYPE},
        "predicate": {
            "type": "object", "required": ["buildDefinition", "runDetails"],
            "additionalProperties": False,
            "properties": {
                "buildDefinition": {
                    "type": "object", "additionalProperties": False,
                    "required": ["buildType", "externalParameters"],
                    "properties": {
                        "buildType": {"type": "string", "format": "uri", "minLength": 1},
                        "externalParameters": {"type": "object", "minProperties": 1},
                        "internalParameters": {"type": "object"},
                        "resolvedDependencies": {"type": "array", "items": _RESOURCE},
                    }},
                "runDetails": {
                    "type": "object", "required": ["builder"], "additionalProperties": False,
                    "properties": {
                        "builder": {"type": "object", "required": ["id"],
                                    "additionalProperties": False,
                                    "properties": {
                                        "id": {"type": "string", "minLength": 1},
                                        "version": {"type": "object", "additionalProperties":
                                                    {"type": "string"}},
                                        "builderDependencies": {"type": "array",
                                                                "items": _RESOURCE}}},
                        "metadata": {"type": "object", "additionalProperties": False,
                                     "properties": {"invocationId": {"type": "string"},
                                                    "startedOn": _TIME, "finishedOn": _TIME}},
                        "byproducts": {"type": "array", "items": _RESOURCE},
                    }},
            }},
    },
}


@dataclass(frozen=True)
class ProvenanceFacts:
    workspace: Workspace
    build: BuildInfo
    spec_file: Path
    spec_root: Path
    recipe_file: Path | None
    upstream_ref: str
    upstream_locator: Locator
    patches_locator: Locator
    manifest_sha256: str
    reproducible: bool
    tool_version: str
    builder_id: str = BUILDER_ID
    bundle: BundleDigest | None = None  # the bundle file: a resolved dependency by sha256


def configured_builder_id(environ: Mapping[str, str] | None = None) -> str:
    """``$AUDITOR_BUILDER_ID`` when set (an absolute URI: SLSA's TypeURI), else :data:`BUILDER_ID`;
    anything else is an InputError naming the variable (exit 2)."""
    value = (os.environ if environ is None else environ).get(BUILDER_ID_ENV, "")
    if not value:
        return BUILDER_ID
    if not _URI_RE.match(value):
        raise InputError(f"${BUILDER_ID_ENV} is not an absolute URI: {value!r}",
                         hint="e.g. https://ci.example.org/auditor-builder/v1 (a URI your "
                              "team controls, naming the platform that ran the build)")
    return value


@dataclass(frozen=True)
class ProvenanceDocument:
    text: Redacted
    subject: str
    digest: str


def _file_param(path: Path, root: Path) -> dict[str, Any]:
    # relative to the spec's folder even when outside it: no absolute path of this machine
    shown = Path(os.path.relpath(path.resolve(), root.resolve())).as_posix()
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise ToolError(f"cannot read {path} for the provenance statement: {exc}") from exc
    return {"path": shown, "digest": {"sha256": digest}}


def _rfc3339(value: Any) -> str | None:
    """An RFC 3339 UTC time from an epoch number or an ISO string; None when it is neither."""
    when: datetime | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        when = datetime.fromtimestamp(value, UTC)
    elif isinstance(value, str):
        try:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
    if when is None:
        return None
    return when.astimezone(UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def _toolchain(toolchain: Mapping[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(a resolved dependency per tool with a version, everything else about the toolchain)."""
    programs = toolchain.get("programs") if isinstance(toolchain.get("programs"), Mapping) else {}
    deps: list[dict[str, Any]] = []
    other: dict[str, Any] = {}
    for key, value in sorted(toolchain.items()):
        if value is None:
            continue
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            item: dict[str, Any] = {"name": f"toolchain:{key}",
                                    "uri": f"urn:auditor:toolchain:{key}",
                                    "annotations": {"version": str(value)}}
            path = (programs or {}).get(key)
            if isinstance(path, str):
                item["annotations"]["path"] = path
            deps.append(item)
        elif isinstance(value, Mapping) and sha256_or_none(value.get("sha256")):
            deps.append({"name": f"toolchain:{key}", "uri": f"urn:auditor:toolchain:{key}",
                         "digest": {"sha256": sha256_or_none(value.get("sha256"))},
                         "annotations": {str(k): v for k, v in sorted(value.items())
                                         if k != "sha256" and isinstance(v, (str, int, bool))}})
        else:
            other[key] = value
    return deps, other


def build_provenance(f: ProvenanceFacts) -> ProvenanceDocument:
    b = f.build
    if b.wheel is None:
        raise ValueError("provenance is written only for a built wheel")
    wheel_name = b.wheel.file.rsplit("/", 1)[-1]
    external: dict[str, Any] = {"spec": _file_param(f.spec_file, f.spec_root)}
    if f.recipe_file is not None:
        external["recipe"] = _file_param(f.recipe_file, f.spec_root)
    resolved = _resolved(f)
    tools, toolchain_rest = _toolchain(b.toolchain)
    resolved += tools

    internal: dict[str, Any] = {"buildStatus": b.status.value if b.status else None,
                                "reproducible": b.reproducible}
    if toolchain_rest:
        internal["toolchain"] = json.loads(json.dumps(toolchain_rest, sort_keys=True,
                                                      default=str))
    if b.source_date_epoch is not None:
        internal["sourceDateEpoch"] = b.source_date_epoch
    byproducts = [{"name": m.wheel_path, "digest": {"sha256": m.sha256},
                   "annotations": {"action": m.action, **({"builder": m.builder}
                                                          if m.builder else {}),
                                   **({"differsFromOfficial": list(m.differs_from_official)}
                                      if m.differs_from_official else {})}}
                  for m in b.modules if m.sha256 and m.action == "built"]

    statement: dict[str, Any] = {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": wheel_name, "digest": {"sha256": b.wheel.sha256}}],
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "buildDefinition": {"buildType": BUILD_TYPE, "externalParameters": external,
                                "internalParameters": internal,
                                "resolvedDependencies": resolved},
            "runDetails": {"builder": {"id": f.builder_id,
                                       "version": {"auditor": f.tool_version}},
                           "metadata": {}},
        },
    }
    if byproducts:
        statement["predicate"]["runDetails"]["byproducts"] = byproducts
    metadata = statement["predicate"]["runDetails"]["metadata"]
    if f.reproducible:
        # same audit, same bytes: the invocation id is derived from the content, and the wall
        # clock times of the build are left out
        digest = hashlib.sha256(_dump(statement).encode()).hexdigest()
        metadata["invocationId"] = f"urn:uuid:{uuid.uuid5(INVOCATION_NAMESPACE, digest)}"
    else:
        metadata["invocationId"] = f"urn:uuid:{uuid.uuid4()}"
        for key, value in (("startedOn", b.started), ("finishedOn", b.finished)):
            stamp = _rfc3339(value)
            if stamp:
                metadata[key] = stamp
    text = _dump(statement)
    validate_statement(statement)
    return ProvenanceDocument(text=text, subject=wheel_name, digest=b.wheel.sha256)


def _resolved(f: ProvenanceFacts) -> list[dict[str, Any]]:
    """The sources the build resolved: upstream, each series commit, the bundle, the official
    wheel (the toolchain's tools are added by the caller)."""
    ws = f.workspace
    resolved: list[dict[str, Any]] = [_git_dependency(
        "upstream", f.upstream_locator, ws.upstream_commit, {"ref": f.upstream_ref})]
    for i, c in enumerate(ws.commits, 1):
        annotations: dict[str, Any] = {"position": i, "subject": c.subject}
        if c.patch_id:
            annotations["patchId"] = c.patch_id
        if c.sha in ws.upstream_picks:
            annotations["upstreamPick"] = ws.upstream_picks[c.sha]
        resolved.append(_git_dependency(f"series:{i:04d}", f.patches_locator, c.sha,
                                        annotations))
    if f.bundle is not None and f.bundle.sha256:
        # the bundle file as it was handed over: what a deployer checks before installing
        b = f.bundle
        item: dict[str, Any] = {"name": b.name, "digest": {"sha256": b.sha256},
                                "annotations": {"path": b.path, "size": b.size}}
        if f.patches_locator.url:
            item["downloadLocation"] = f.patches_locator.url
        resolved.append(item)
    bundle_digest: dict[str, str] = {"sha256": f.manifest_sha256}
    if ws.bundle_tree:
        bundle_digest["gitTree"] = ws.bundle_tree
    resolved.append({"name": "bundle", "uri": "urn:auditor:bundle", "digest": bundle_digest,
                     "annotations": {"files": len(ws.manifest),
                                     "sha256": "digest of the bundle manifest (see sboms/README.md)"}})
    if f.build.official_wheel is not None:
        o = f.build.official_wheel
        resolved.append({"name": o.file.rsplit("/", 1)[-1],
                         "uri": f"pkg:pypi/{canonicalize_name(o.name)}@{o.version}",
                         "digest": {"sha256": o.sha256}})
    return resolved


def _git_dependency(name: str, loc: Locator, commit: str, annotations: Mapping[str, Any]
                    ) -> dict[str, Any]:
    """A commit of a repository: ``git+<url>@<commit>`` when the spec gives the URL, else only
    the digest with the spec-relative path of the local mirror."""
    item: dict[str, Any] = {"name": name, "digest": {"gitCommit": commit}}
    uri = loc.vcs_url(commit)
    if uri:
        item["uri"] = uri
    item["annotations"] = {**annotations, **({} if uri else {"repository": loc.path})}
    return item


def _dump(doc: Mapping[str, Any]) -> Redacted:
    return dump_json(doc)  # the one JSON writer: every string in the document redacted


def validate_statement(doc: Mapping[str, Any]) -> None:
    """Check the statement's shape; a ToolError (nothing written) when it does not hold."""
    problem = jsonschemas.first_problem(STATEMENT_SCHEMA, doc)
    if problem is not None:
        raise ToolError(f"the provenance statement is malformed at {problem}")
