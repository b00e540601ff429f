"""Anomalies: binaries by content, exec bits, symlinks, gitlinks, attributes; attribution."""

from __future__ import annotations

import io
import json
import pickle
import struct
import zipfile
from pathlib import Path

import pytest
from support import GitRepo, export_tree, simple_case, write_spec
from typer.testing import CliRunner

from auditor.cli import app
from auditor.provenance.anomalies import sniff

FORK = "Fork Author <fork@community.example>"
ELF = b"\x7fELF\x02\x01\x01" + bytes(57) + b"payload"


def _zip(names: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for n, d in names.items():
            zf.writestr(n, d)
    return buf.getvalue()


def _safetensors() -> bytes:
    header = json.dumps({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}).encode()
    return struct.pack("<Q", len(header)) + header + bytes(4)


@pytest.mark.parametrize(("data", "kind"), [
    (ELF, "elf"),
    (pickle.dumps({"a": 1}, protocol=4), "pickle"),
    (_zip({"pkg-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\n"}), "wheel"),
    (_zip({"archive/data.pkl": pickle.dumps(1)}), "pytorch"),
    (_zip({"a.txt": b"a"}), "zip"),
    (_safetensors(), "safetensors"),
    (b"GGUF\x03\x00\x00\x00" + bytes(16), "gguf"),
    (b"\x93NUMPY\x01\x00" + bytes(8), "numpy"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary"),
    (b"print('hello')\n", None),
    (b"", None),
    (b"{\"json\": true}\n", None),
])
def test_sniff_by_content(tmp_path, data, kind):
    p = tmp_path / "innocent.txt"  # the name never matters
    p.write_bytes(data)
    assert sniff(p) == kind


def test_anomalies_through_verify(tmp_path):
    case = simple_case(tmp_path)
    repo: GitRepo = case["repo"]
    c3 = repo.commit("speed up loading", files={
        "engine/_fast.so": ELF,
        "engine/cache.bin": pickle.dumps([1, 2, 3], protocol=2),
        "models/w.safetensors": _safetensors(),
        "models/big.bin": b"version https://git-lfs.github.com/spec/v1\noid sha256:ab\nsize 9\n",
        ".gitattributes": "*.bin filter=lfs diff=lfs merge=lfs -text\n",
    }, author=FORK)
    repo.write("tools/setup.sh", "#!/bin/sh\n", mode=0o755)
    repo.symlink("engine/config", "../requirements.txt")
    c4 = repo.commit("tooling", author=FORK)
    sub = GitRepo(tmp_path / "sub")
    sub_head = sub.commit("sub", files={"s.txt": "s\n"})
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{sub_head},vendor/lib")
    repo.git("commit", "-q", "-m", "vendor a submodule")  # not commit(): `add -A` would drop it
    c5 = repo.head()
    bundle = export_tree(repo, "series", tmp_path / "bundle2")
    (bundle / "engine/extra.so").write_bytes(ELF + b"bundle-only")
    spec = case["spec"]
    spec["patches"]["commits"] = [*case["commits"], c3, c4, c5]
    spec["bundle"]["path"] = str(bundle)
    path = write_spec(tmp_path / "audit.toml", spec)
    res = CliRunner().invoke(app, ["verify", str(path), "--json"])
    data = json.loads(res.stdout)
    found = {(f["rule"], f["path"]): f for f in data["findings"]}

    so = found[("provenance.binary-added", "engine/_fast.so")]
    assert so["category"] == "binary-artifact" and so["action"] == "block"
    assert so["commit"] == c3 and so["severity"] == "high"
    assert found[("provenance.binary-added", "engine/cache.bin")]["commit"] == c3
    assert found[("provenance.binary-added", "models/w.safetensors")]["commit"] == c3
    extra = found[("provenance.binary-added", "engine/extra.so")]
    assert extra["commit"] is None  # only the bundle has it
    assert found[("provenance.lfs-pointer", "models/big.bin")]["commit"] == c3
    attrs = found[("provenance.gitattributes", ".gitattributes")]
    assert "filter=lfs" in attrs["message"] and attrs["category"] == "provenance"
    assert found[("provenance.executable-bit", "tools/setup.sh")]["commit"] == c4
    link = found[("provenance.symlink", "engine/config")]
    assert link["commit"] == c4 and "../requirements.txt" in link["message"]
    gl = found[("provenance.gitlink", "vendor/lib")]
    assert gl["commit"] == c5 and sub_head[:12] in gl["message"]
    assert all(len(f["fingerprint"]) == 32 for f in data["findings"])
    # the bundle-only binary also breaks the proof
    assert res.exit_code == 1 and data["ok"] is False
    d = {x["path"]: x for x in data["differences"]}
    assert d["engine/extra.so"]["change"] == "added"
    assert "gitlink" in d["vendor/lib"]["note"]


def test_findings_are_stable_across_runs(tmp_path):
    case = simple_case(tmp_path)
    repo: GitRepo = case["repo"]
    c3 = repo.commit("blob", files={"engine/_x.so": ELF}, author=FORK)
    export_tree(repo, "series", Path(case["bundle"]).with_name("b3"))
    spec = case["spec"]
    spec["patches"]["commits"] = [*case["commits"], c3]
    spec["bundle"]["path"] = str(Path(case["bundle"]).with_name("b3"))
    path = write_spec(tmp_path / "audit.toml", spec)
    runs = [json.loads(CliRunner().invoke(app, ["verify", str(path), "--json"]).stdout)
            for _ in range(2)]
    assert runs[0]["findings"] == runs[1]["findings"]
    assert runs[0]["manifest_digest"] == runs[1]["manifest_digest"]
