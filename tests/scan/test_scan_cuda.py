"""The CUDA -> C++ shim: it keeps every line and column, and after it the C/C++ rules find a network
call in a `.cu` file at the right line (semgrep cannot parse the file as it is)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scancase import semgrep_shipped_rules

from auditor.scan import rules as rules_mod
from auditor.scan.cuda import cuda_to_cpp, is_cuda, shim_name

SEMGREP = shutil.which("semgrep", path=str(Path(sys.executable).parent)) or shutil.which("semgrep")


def same_shape(a: str, b: str) -> bool:
    """Same length, newlines at the same offsets (so every line and column is kept)."""
    return len(a) == len(b) and all((x == "\n") == (y == "\n") for x, y in zip(a, b, strict=True))


def test_qualifiers_are_blanked_in_place() -> None:
    src = ("template <int B>\n"
           "__global__ void __launch_bounds__(B, 2) k(float* __restrict__ o) {\n"
           "  __shared__ float t[B];\n"
           "}\n"
           "__device__ __forceinline__ float f(float x) { return x; }\n"
           "__host__ __device__ int g();\n"
           "__constant__ float c[4];\n"
           "__managed__ int m;\n")
    out = cuda_to_cpp(src)
    assert same_shape(src, out)
    assert out.splitlines() == [
        "template <int B>",
        "           void                         k(float*              o) {",
        "             float t[B];",
        "}",
        "                           float f(float x) { return x; }",
        "                    int g();",
        "             float c[4];",
        "            int m;",
    ]


def test_launch_configuration_becomes_call_arguments_in_place() -> None:
    src = ("void run(cudaStream_t s) {\n"
           "  k<float, 256><<<dim3(n / 256, 1), dim3(256),\n"
           "                  0, s>>>(out, in);\n"
           "  auto x = a >> 2;  // shifts stay\n"
           "}\n")
    out = cuda_to_cpp(src)
    assert same_shape(src, out)
    lines = out.splitlines()
    # the configuration's expressions stay at their columns, as the arguments of a call
    assert lines[1] == "  k<float, 256>(  dim3(n / 256, 1), dim3(256),"
    assert lines[2] == "                  0, s  )(out, in);"
    assert lines[3] == src.splitlines()[3]


def test_launch_bounds_with_nested_parentheses_over_lines() -> None:
    src = "__global__ void\n__launch_bounds__(MAX(THREADS,\n  64), (2))\nk() {}\n"
    out = cuda_to_cpp(src)
    assert same_shape(src, out)
    assert out.split("\n") == [" " * 10 + " void", " " * 30, " " * 11, "k() {}", ""]


def test_comments_strings_and_literals_are_left_alone() -> None:
    src = ('// __global__ launch with <<<g, b>>>\n'
           '/* __device__\n   <<<x>>> */\n'
           'const char* s = "__shared__ <<<1, 2>>>";\n'
           "const char q = '\"'; int big = 1'000'000;\n"
           'const char* r = R"x(__host__ <<<a>>>)x";\n'
           '__device__ int d;\n')
    out = cuda_to_cpp(src)
    assert same_shape(src, out)
    assert out.splitlines()[:6] == src.splitlines()[:6]
    assert out.splitlines()[6] == "           int d;"


def test_unterminated_launch_is_not_touched() -> None:
    src = "int a = b <<< c;\nint d = e >> f;\n"
    assert cuda_to_cpp(src) == src


def test_names() -> None:
    assert is_cuda("csrc/attention/kernel.cu") and is_cuda("a/B.CUH") and not is_cuda("a.cpp")
    assert shim_name("csrc/k.cu") == "csrc/k.cu.cpp"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(
    list("ab_( )<>;{}\"'/*\n\\R") + ["__global__", "__launch_bounds__(", "<<<", ">>>", "//", "/*",
                                     "*/", "__device__", 'R"(', ')"']), max_size=60))
def test_shape_is_always_kept(pieces: list[str]) -> None:
    text = "".join(pieces)
    assert same_shape(text, cuda_to_cpp(text))


# ------------------------------------------------------------------ semgrep on a shimmed .cu file

KERNEL_CU = """\
#include <cuda_runtime.h>
#include <curl/curl.h>
#include <netdb.h>
#include <sys/socket.h>

template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK) fused_scale(T* __restrict__ out,
                                                     const T* __restrict__ in, int n) {
  __shared__ T tile[BLOCK];
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) { tile[threadIdx.x] = in[i]; out[i] = tile[threadIdx.x]; }
}

static void report(const char* host, const char* url) {
  struct addrinfo* res = nullptr;
  getaddrinfo(host, "443", nullptr, &res);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  connect(fd, res->ai_addr, res->ai_addrlen);
  CURL* c = curl_easy_init();
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_perform(c);
}

void launch(float* out, const float* in, int n, cudaStream_t stream) {
  fused_scale<float, 256><<<(n + 255) / 256, 256,
                            0, stream>>>(out, in, n);
  report("telemetry.example.net", "https://telemetry.example.net/k");
}
"""
HELPER_CUH = """\
#pragma once
#include <cstdlib>
__device__ __forceinline__ float twice(float x) { return 2.0f * x; }
inline void tune() { std::system("nvidia-smi -q > /dev/null"); }
"""


def where(text: str, needle: str) -> tuple[int, int]:
    """1-based line and column of the first `needle` in `text`."""
    offset = text.index(needle)
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


@pytest.fixture(scope="module")
def cuda_scan(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One semgrep run: the shimmed copies (suffix .cpp) and, for contrast, an unshimmed copy."""
    root = tmp_path_factory.mktemp("cuda-scan")
    (root / "csrc").mkdir()
    for rel, text in {"csrc/kernel.cu": KERNEL_CU, "csrc/helper.cuh": HELPER_CUH}.items():
        (root / shim_name(rel)).write_text(cuda_to_cpp(text))
    (root / "csrc" / "unshimmed.cpp").write_text(KERNEL_CU)
    assert SEMGREP is not None
    return semgrep_shipped_rules(SEMGREP, root, ["csrc"])


@pytest.mark.skipif(SEMGREP is None, reason="semgrep is not installed")
def test_network_calls_in_cu_found_at_their_lines(cuda_scan: dict[str, Any]) -> None:
    meta = rules_mod.load_rule_meta()
    found = {(rules_mod.canonical_rule_id(r["check_id"], meta), r["start"]["line"],
              r["start"]["col"])
             for r in cuda_scan["results"] if r["path"] == "csrc/kernel.cu.cpp"}
    expected = {
        ("network.c.socket-connect", *where(KERNEL_CU, "getaddrinfo(")),
        ("network.c.socket-connect", *where(KERNEL_CU, "socket(AF_INET")),
        ("network.c.socket-connect", *where(KERNEL_CU, "connect(fd")),
        ("network.c.libcurl", *where(KERNEL_CU, "curl_easy_init(")),
        ("network.c.libcurl", *where(KERNEL_CU, "curl_easy_perform(")),
    }
    assert found == expected
    assert not any(e.get("path") == "csrc/kernel.cu.cpp" for e in cuda_scan["errors"])


@pytest.mark.skipif(SEMGREP is None, reason="semgrep is not installed")
def test_cuh_header_is_scanned_too(cuda_scan: dict[str, Any]) -> None:
    meta = rules_mod.load_rule_meta()
    found = {(rules_mod.canonical_rule_id(r["check_id"], meta), r["start"]["line"])
             for r in cuda_scan["results"] if r["path"] == "csrc/helper.cuh.cpp"}
    assert found == {("process-exec.c.exec", where(HELPER_CUH, "std::system")[0])}


@pytest.mark.skipif(SEMGREP is None, reason="semgrep is not installed")
def test_without_the_shim_semgrep_cannot_parse_cuda(cuda_scan: dict[str, Any]) -> None:
    # the reason the shim exists: the same file, unshimmed, is a parse error for semgrep
    assert any(e.get("path") == "csrc/unshimmed.cpp" for e in cuda_scan["errors"])
