"""The demo's audit, run in two folders: no output names the review machine's folders, the
bundle's digest is everywhere (audit.json, SBOM, provenance), the SBOM names the engine audited
(tinyllm, not the vllm profile's package) and keeps the build commands in the order they ran;
with ``--reproducible`` the documents of both folders are the same bytes."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DOCUMENTS = ("sbom.cdx.json", "provenance.intoto.json", "vex.openvex.json")


def _auditor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "auditor", *args], capture_output=True,
                          text=True, timeout=900)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    if shutil.which("nvcc") is None:
        pytest.skip("the demo's build needs nvcc")
    a = tmp_path_factory.mktemp("first") / "demo"
    res = _auditor("demo", "--out", str(a))
    assert (a / "audit.toml").is_file(), res.stderr[-3000:]
    b = tmp_path_factory.mktemp("second-folder") / "elsewhere" / "demo"
    shutil.copytree(a, b, symlinks=True, ignore=shutil.ignore_patterns("audit", "work"))
    out = {}
    for name, root in (("a", a), ("b", b)):
        res = _auditor("audit", str(root / "audit.toml"), "--out", str(root / "again"),
                       "--reproducible")
        assert (root / "again" / "audit.json").is_file(), res.stderr[-3000:]
        out[name] = root
    return out


def _outputs(root: Path) -> list[Path]:
    return sorted(p for p in (root / "again").rglob("*") if p.is_file())


def _local(root: Path) -> set[str]:
    """The ways this machine's folder can be spelled in an output."""
    return {str(root), str(root.resolve()), root.resolve().as_uri(),
            str(root.resolve().parent)}


def test_no_document_or_report_names_the_local_folder(runs):
    for name, root in runs.items():
        files = [p for p in _outputs(root) if p.suffix != ".whl" and p.name != "audit.json"]
        assert {p.name for p in files} >= {*DOCUMENTS, "report.md", "report.html",
                                           "findings.sarif"}
        for p in files:
            text = p.read_text(encoding="utf-8", errors="replace")
            found = [s for s in _local(root) if s in text]
            assert not found, f"{name}: {p.name} names {found}"
            assert "file:///" not in text, p.name


def test_audit_json_inputs_and_sbom_stage_name_no_local_folder(runs):
    for root in runs.values():
        audit = json.loads((root / "again" / "audit.json").read_text())
        for part in (audit["inputs"], audit["stages"]["sbom"]):
            text = json.dumps(part)
            assert not [s for s in _local(root) if s in text], text[:2000]


def test_no_part_of_audit_json_names_the_local_folder(runs):
    root = runs["a"]
    text = (root / "again" / "audit.json").read_text()
    assert not [s for s in _local(root) if s in text]


def test_the_same_audit_from_another_folder_gives_the_same_documents(runs):
    for name in DOCUMENTS:
        one = (runs["a"] / "again" / name).read_bytes()
        two = (runs["b"] / "again" / name).read_bytes()
        assert one == two, name


def test_the_bundle_digest_is_in_audit_json_the_sbom_and_the_provenance(runs):
    root = runs["a"]
    bundle = root / "downloads" / "tinyllm-community.tar.gz"
    digest = hashlib.sha256(bundle.read_bytes()).hexdigest()
    audit = json.loads((root / "again" / "audit.json").read_text())
    assert audit["inputs"]["bundle"] == {
        "path": "downloads/tinyllm-community.tar.gz", "kind": "file", "sha256": digest,
        "size": bundle.stat().st_size, "tree": audit["stages"]["verify"]["bundle_tree"]}
    sbom = json.loads((root / "again" / "sbom.cdx.json").read_text())
    ancestors = {a["bom-ref"]: a for a in sbom["metadata"]["component"]["pedigree"]["ancestors"]}
    fork = ancestors["auditor:fork-source"]
    assert fork["hashes"] == [{"alg": "SHA-256", "content": digest}]
    assert {"name": "auditor:bundle:path", "value": "downloads/tinyllm-community.tar.gz"} \
        in fork["properties"]
    prov = json.loads((root / "again" / "provenance.intoto.json").read_text())
    deps = prov["predicate"]["buildDefinition"]["resolvedDependencies"]
    entry = [d for d in deps if d.get("digest", {}).get("sha256") == digest]
    assert entry and entry[0]["name"] == "tinyllm-community.tar.gz"
    assert entry[0]["annotations"]["path"] == "downloads/tinyllm-community.tar.gz"


def test_the_sbom_names_the_engine_audited_and_keeps_the_build_commands_in_order(runs):
    root = runs["a"]
    sbom = json.loads((root / "again" / "sbom.cdx.json").read_text())
    ancestors = {a["bom-ref"]: a for a in sbom["metadata"]["component"]["pedigree"]["ancestors"]}
    upstream = ancestors["auditor:upstream"]
    assert (upstream["name"], upstream["version"]) == ("tinyllm", "1.0.0")  # profile is vllm
    assert upstream["purl"].startswith("pkg:generic/tinyllm@")
    audit = json.loads((root / "again" / "audit.json").read_text())
    modules = {m["wheel_path"]: m for m in audit["stages"]["build"]["modules"]}
    ran = modules["tinyllm/_rmsnorm.so"]["commands"]
    assert len(ran) >= 2 and ran != sorted(ran)  # nvcc, then strip: not alphabetical
    comp = next(c for c in sbom["components"] if c["name"] == "tinyllm/_rmsnorm.so")
    recorded = [p["value"] for p in comp["properties"] if p["name"] == "auditor:module:command"]
    assert recorded == ran


def test_a_reproducible_audit_json_is_the_same_cold_and_warm(runs, tmp_path):
    """--reproducible leaves out what only says how the run went (the scan's cache counts, the
    build's wall-clock times): an audit with an empty cache writes the same audit.json as the
    audit whose answers came from the cache (and so the same signed summary of it)."""
    root = runs["a"]
    res = subprocess.run([sys.executable, "-m", "auditor", "audit", str(root / "audit.toml"),
                          "--out", str(root / "cold"), "--reproducible"], capture_output=True,
                         text=True, timeout=900,
                         env={**os.environ, "AUDITOR_CACHE": str(tmp_path / "empty-cache")})
    cold = root / "cold" / "audit.json"
    assert cold.is_file(), res.stderr[-3000:]
    warm = (root / "again" / "audit.json").read_bytes()
    doc = json.loads(warm)
    assert doc["stages"]["scan"]["cache"] is None
    assert doc["stages"]["build"]["started"] == doc["stages"]["build"]["finished"]
    assert cold.read_bytes() == warm
