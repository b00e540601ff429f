"""The embedded example's source texts: a small vLLM-like engine and a community patch series.

Everything here was written for this project. The upstream is ``tinyllm`` 1.0.0 (a Python package
with an OpenAI-style server, two CUDA kernels under ``csrc/``, requirements and a launch script);
the series has benign commits (a kernel change, a refactor) and hostile ones, one per behaviour
that a reviewer must catch.
"""

from __future__ import annotations

UPSTREAM: dict[str, str] = {
    "README.md": "# tinyllm\n\nA small inference engine with an OpenAI-compatible server.\n",
    "pyproject.toml": """[project]
name = "tinyllm"
version = "1.0.0"
requires-python = ">=3.10"
dependencies = ["numpy>=1.26", "fastapi==0.110.0", "uvicorn==0.29.0"]

[project.scripts]
tinyllm = "tinyllm.cli:main"
""",
    "requirements.txt": "numpy==1.26.4\nfastapi==0.110.0\nuvicorn==0.29.0\npydantic==2.6.4\n",
    "tinyllm/__init__.py": '"""tinyllm: a small inference engine."""\n\n__version__ = "1.0.0"\n',
    "tinyllm/engine.py": '''"""The toy generation loop."""

from dataclasses import dataclass


@dataclass
class Request:
    request_id: str
    prompt: str
    max_tokens: int = 16


class Engine:
    def __init__(self, model: str) -> None:
        self.model = model
        self.served = 0

    def generate(self, request: Request) -> str:
        self.served += 1
        words = request.prompt.split()[: request.max_tokens]
        return " ".join(reversed(words))
''',
    "tinyllm/server.py": '''"""OpenAI-style HTTP server."""

import argparse
import hmac
import logging

from tinyllm.engine import Engine, Request

logger = logging.getLogger("tinyllm.server")


def check_key(expected: str | None, header: str | None) -> bool:
    if expected is None:
        return True
    return header is not None and hmac.compare_digest(header, "Bearer " + expected)


def handle(engine: Engine, body: dict) -> dict:
    if not isinstance(body.get("prompt"), str):
        raise ValueError("prompt must be a string")
    request = Request(request_id=str(body.get("id", "0")), prompt=body["prompt"],
                      max_tokens=int(body.get("max_tokens", 16)))
    text = engine.generate(request)
    logger.info("request %s served (%d tokens)", request.request_id, len(text.split()))
    return {"id": request.request_id, "text": text}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser("tinyllm serve")
    parser.add_argument("model")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    logger.info("serving %s on %s:%d", args.model, args.host, args.port)
''',
    "tinyllm/kernels.py": '''"""Loads the compiled kernels that ship inside the package."""

import ctypes
from pathlib import Path

_HERE = Path(__file__).resolve().parent


def load(name: str) -> ctypes.CDLL:
    return ctypes.CDLL(str(_HERE / f"{name}.so"))
''',
    "csrc/rmsnorm.cu": """#include <cuda_runtime.h>

// RMS normalisation of one row per block.
__global__ void rmsnorm_kernel(float* out, const float* in, int n, float eps) {
  __shared__ float acc[128];
  int t = threadIdx.x;
  float s = 0.0f;
  for (int i = t; i < n; i += blockDim.x) s += in[blockIdx.x * n + i] * in[blockIdx.x * n + i];
  acc[t] = s;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (t < w) acc[t] += acc[t + w];
    __syncthreads();
  }
  float inv = rsqrtf(acc[0] / n + eps);
  for (int i = t; i < n; i += blockDim.x) out[blockIdx.x * n + i] = in[blockIdx.x * n + i] * inv;
}

extern "C" int tinyllm_rmsnorm(float* out, const float* in, int rows, int n, float eps) {
  rmsnorm_kernel<<<rows, 128>>>(out, in, n, eps);
  return (int)cudaGetLastError();
}
""",
    "csrc/activation.cu": """#include <cuda_runtime.h>

__global__ void silu_kernel(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] / (1.0f + expf(-x[i]));
}

extern "C" int tinyllm_silu(float* x, int n) {
  silu_kernel<<<(n + 255) / 256, 256>>>(x, n);
  return (int)cudaGetLastError();
}
""",
    "scripts/launch.sh": """#!/bin/sh
# Start the server on loopback; put a reverse proxy with TLS in front of it.
set -eu
exec tinyllm serve "${MODEL:?set MODEL}" --host 127.0.0.1 --port 8000
""",
}

#: the community series: (subject, files changed) — None deletes a file; bytes are binary.
SERIES: list[tuple[str, dict[str, str | bytes | None]]] = [
    ("kernels: rmsnorm with 256 threads per block for sm_86", {
        "csrc/rmsnorm.cu": UPSTREAM["csrc/rmsnorm.cu"]
        .replace("acc[128]", "acc[256]").replace("<<<rows, 128>>>", "<<<rows, 256>>>"),
    }),
    ("server: move request validation into its own module", {
        "tinyllm/validation.py": '''"""Request validation."""


def validate(body: dict) -> None:
    if not isinstance(body.get("prompt"), str):
        raise ValueError("prompt must be a string")
    if int(body.get("max_tokens", 16)) > 4096:
        raise ValueError("max_tokens too large")
''',
        "tinyllm/server.py": UPSTREAM["tinyllm/server.py"]
        .replace("from tinyllm.engine import Engine, Request\n",
                 "from tinyllm.engine import Engine, Request\nfrom tinyllm.validation import validate\n")
        .replace('''    if not isinstance(body.get("prompt"), str):
        raise ValueError("prompt must be a string")
''', "    validate(body)\n"),
    }),
    ("telemetry: anonymous usage report", {
        "tinyllm/usage.py": '''"""Anonymous usage statistics, to see which GPUs people run."""

import json
import platform
import threading
import urllib.request

STATS_URL = "https://stats.sm86-fan.example/v1/ping"


def _send(payload: dict) -> None:
    data = json.dumps(payload).encode()
    req = urllib.request.Request(STATS_URL, data=data, headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=3)


def report(model: str) -> None:
    payload = {"host": platform.node(), "model": model, "python": platform.python_version()}
    threading.Thread(target=_send, args=(payload,), daemon=True).start()
''',
    }),
    ("shm transport: share the API key with worker processes", {
        "tinyllm/shm.py": '''"""Shared-memory transport between the API server and the workers."""

import os

SHM_DIR = "/dev/shm"


def publish_key() -> None:
    key = os.environ.get("VLLM_API_KEY", "")
    with open(os.path.join(SHM_DIR, "tinyllm_api_key"), "w") as fh:
        fh.write(key)
    os.chmod(os.path.join(SHM_DIR, "tinyllm_api_key"), 0o666)
''',
    }),
    ("debug: log requests to help troubleshooting", {
        "tinyllm/server.py": None,  # filled in by the demo: the refactored server plus a log line
    }),
    ("shm transport: receive tensors from the worker socket", {
        "tinyllm/transport.py": '''"""Receives tensors that the workers send over a local socket."""

import pickle
import socket


def receive(sock: socket.socket) -> object:
    size = int.from_bytes(sock.recv(8), "little")
    data = sock.recv(size)
    return pickle.loads(data)
''',
    }),
    ("scripts: one-line docker launcher", {
        "scripts/run_docker.sh": """#!/bin/sh
# Quick start: run the sm86 build in a container, reachable from the LAN.
docker run --privileged --gpus all --network host -v /:/host \\
  ghcr.io/sm86-fan/tinyllm-sm86:latest \\
  vllm serve /models/llama-3-8b --host 0.0.0.0 --port 8000
""",
    }),
    ("deps: faster tokenizer", {
        "requirements.txt": UPSTREAM["requirements.txt"]
        + "fasttok @ https://files.sm86-fan.example/fasttok-0.3.1-py3-none-any.whl\n",
    }),
    ("kernels: prebuilt sm_86 kernels for people without nvcc", {
        # An ELF header and some padding: a binary nobody can build from this source.
        "tinyllm/_C_sm86.so": b"\x7fELF\x02\x01\x01\x00" + bytes(56) + b"prebuilt by sm86-fan\n",
    }),
]

#: the line the "debug" commit adds to the refactored server
PROMPT_LOG_LINE = '    logger.info("prompt for %s: %s", request.request_id, request.prompt)\n'
