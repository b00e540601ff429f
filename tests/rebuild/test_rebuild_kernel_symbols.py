"""CUDA 13's nvcc hides ``__global__`` functions (``-device-entity-has-hidden-visibility``, true
by default), so a module rebuilt with it no longer exports the kernels and host stubs the
official module (built with CUDA 12) did: seen on vLLM 0.10.0's real ``_moe_C``
(``preprocessTopkIdKernel``, ``MarlinDefault``...). Those are told apart from the symbols a
module's users need: a hidden kernel nothing else imports is a review finding, anything else a
build failure. The real nvcc builds both sides; nothing is loaded or run."""

from __future__ import annotations

import subprocess
from pathlib import Path

from buildcase import NVCC, needs_nvcc

from auditor.rebuild.elf import cuda_kernel_symbols, exported_symbols, imported_symbols

KERNELS = """\
__global__ void preprocessTopkIdKernel(int* ids, int n) { if (threadIdx.x < n) ids[0] = 1; }
template <typename T> __global__ void scaleKernel(T* x) { x[threadIdx.x] *= 2; }
extern "C" __attribute__((visibility("default"))) void launch(int* ids, float* x) {
  preprocessTopkIdKernel<<<1, 32>>>(ids, 32);
  scaleKernel<float><<<1, 32>>>(x);
}
"""


def _module(tmp: Path, name: str, *flags: str) -> Path:
    src = tmp / "kernels.cu"
    src.write_text(KERNELS)
    out = tmp / f"{name}.so"
    subprocess.run([str(NVCC), "-shared", "-Xcompiler", "-fPIC", "-arch=sm_86", *flags,
                    "-o", str(out), str(src)], check=True, capture_output=True, timeout=300)
    return out


@needs_nvcc
def test_kernels_hidden_by_nvcc_13_are_told_apart_from_the_modules_own_exports(tmp_path):
    official = _module(tmp_path, "official", "-device-entity-has-hidden-visibility=false")
    rebuilt = _module(tmp_path, "rebuilt")  # nvcc 13's default
    old, new = exported_symbols(official), exported_symbols(rebuilt)
    missing = old - new
    assert "launch" in old and "launch" in new and missing, (sorted(old), sorted(new))
    kernels = cuda_kernel_symbols(missing, old)
    assert kernels == missing, sorted(missing - kernels)
    assert any("preprocessTopkIdKernel" in s and "__device_stub__" not in s for s in kernels)
    assert any("__device_stub__" in s for s in kernels)
    # the module's own entry point is never taken for a kernel
    assert not cuda_kernel_symbols(frozenset({"launch"}), old)


@needs_nvcc
def test_a_kernel_another_library_imports_is_seen_as_imported(tmp_path):
    official = _module(tmp_path, "official", "-device-entity-has-hidden-visibility=false")
    kernel = next(s for s in exported_symbols(official)
                  if "preprocessTopkIdKernel" in s and "__device_stub__" not in s)
    user = tmp_path / "user.c"
    # a library of the wheel that calls the kernel's symbol by its mangled name
    user.write_text(f"extern void {kernel}(int*, int);\n"
                    f"void use(int* p) {{ {kernel}(p, 1); }}\n")
    lib = tmp_path / "libuser.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(user)], check=True)
    assert kernel in imported_symbols(lib)
    assert "use" not in imported_symbols(lib)
