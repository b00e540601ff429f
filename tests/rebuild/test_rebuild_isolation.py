"""Each nvcc call in its own PID and mount namespaces: process-id-derived names stop varying.

nvcc ends the module id of a translation unit (and so the name of every anonymous namespace in it,
in ``.rodata``, ``.symtab`` and ``.nv_fatbin``) with the process id of its front end, and names
its temporary files after its own. Real nvcc, real namespaces, real CMake and ninja here.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest
from buildcase import CM_LISTS, needs_nvcc

from auditor.rebuild.sandbox import (
    ISOLATED_COMPILE,
    ISOLATION_DONE,
    BwrapSandbox,
    Unsandboxed,
    compile_isolation,
    write_compile_launcher,
)

# a unit that defines nothing of its own (an explicit instantiation, as vLLM's Marlin kernels),
# on a type in an anonymous namespace: nvcc ends that namespace's name with a process id
ANON_CU = """\
namespace {{ struct Step {{ static constexpr int n = {n}; }}; }}
template <typename T> __global__ void step_kernel(int* x) {{ x[threadIdx.x] += T::n; }}
template __global__ void step_kernel<Step>(int*);
"""


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _isolation_or_skip(tmp_path: Path) -> None:
    problem = compile_isolation(Unsandboxed(), tmp_path / "probe")
    if problem is not None:
        pytest.skip(f"nested PID and mount namespaces are not allowed here: {problem}")


def test_the_launcher_is_a_fixed_script_naming_what_it_does(tmp_path: Path) -> None:
    path = write_compile_launcher(tmp_path)
    assert path.read_text() == ISOLATED_COMPILE
    assert path.stat().st_mode & 0o777 == 0o755
    assert "--pid --fork" in ISOLATED_COMPILE and "mount -t tmpfs" in ISOLATED_COMPILE


@needs_nvcc
def test_two_compiles_of_an_anonymous_namespace_agree_only_through_the_launcher(
        tmp_path: Path) -> None:
    _isolation_or_skip(tmp_path)
    (tmp_path / "step.cu").write_text(ANON_CU.format(n=1))
    launcher = write_compile_launcher(tmp_path)

    def compile_(out: str, isolated: bool) -> Path:
        argv = [shutil.which("nvcc") or "nvcc", "-c", "step.cu", "-o", f"{out}.o"]
        subprocess.run([str(launcher), *argv] if isolated else argv, cwd=tmp_path, check=True)
        subprocess.run(["strip", "--strip-unneeded", "-o", out, f"{out}.o"], cwd=tmp_path,
                       check=True)  # as the build stage does: temporary names in .file go
        return tmp_path / out

    plain = [compile_(f"plain{i}", isolated=False) for i in (1, 2)]
    alone = [compile_(f"alone{i}", isolated=True) for i in (1, 2)]
    # two plain runs are two processes with two ids: the namespace's name differs
    assert _sha(plain[0]) != _sha(plain[1])
    assert _anon_names(plain[0]) != _anon_names(plain[1])
    assert _sha(alone[0]) == _sha(alone[1])


def _anon_names(path: Path) -> set[bytes]:
    import re

    return set(re.findall(rb"_GLOBAL__N__\w+?Step", path.read_bytes()))


def test_a_sandbox_that_cannot_nest_namespaces_is_named(tmp_path: Path) -> None:
    """Where the launcher fails inside the sandbox (here: a sandbox program that cannot start
    it), the probe says so instead of pretending the compiles were isolated."""

    class NoNesting(Unsandboxed):
        kind = "no-nesting"

        def wrap(self, argv, *, cwd, env, writable, readable, mount=None):  # type: ignore[no-untyped-def]
            return ["/bin/sh", "-c", "echo 'unshare: user namespaces disabled' >&2; exit 1"], {}

    problem = compile_isolation(NoNesting(), tmp_path / "probe")
    assert problem is not None
    assert "inside no-nesting" in problem and "user namespaces disabled" in problem


# the test engine's CMake module (cm.c keeps the official module's export) with CUDA units, and
# a step before them that starts a varying number of processes (1 to 9, by the clock), as a
# parallel build's interleaving does: without the launcher, every nvcc after it gets other ids
CM_CUDA = CM_LISTS.replace("project(cm C)", "project(cm C CUDA)").replace(
    "add_library(_cm SHARED cm.c)",
    "add_library(_cm SHARED cm.c {units})\n"
    "add_custom_target(spawn COMMAND /bin/sh ${CMAKE_SOURCE_DIR}/spawn.sh)\n"
    "add_dependencies(_cm spawn)")
SPAWN_SH = """\
n=$(( $(date +%N | sed 's/^0*//;s/^$/0/') % 9 + 1 ))
while [ "$n" -gt 0 ]; do /bin/true; n=$((n - 1)); done
"""


@needs_nvcc
@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed")
def test_a_parallel_cmake_cuda_build_reproduces_with_each_compile_alone(  # type: ignore[no-untyped-def]
        upstream, tmp_path: Path) -> None:
    """Four CUDA units with anonymous namespaces, ``ninja -j 2``, after a step that starts a
    varying number of processes, built twice in bwrap: every nvcc call goes through the launcher
    (the configure command names it) and the builds agree (without it they differ: the module
    ids end with other process ids)."""
    from test_rebuild_compare_official import _repro_build

    _isolation_or_skip(tmp_path)
    if compile_isolation(BwrapSandbox(), tmp_path / "probe-bwrap") is not None:
        pytest.skip("bwrap cannot nest namespaces here")
    units = [f"u{i}.cu" for i in range(4)]
    files = {f"cmk/{u}": ANON_CU.format(n=i) for i, u in enumerate(units)}
    files["cmk/CMakeLists.txt"] = CM_CUDA.replace("{units}", " ".join(units))
    files["cmk/spawn.sh"] = SPAWN_SH
    assert "project(cm C CUDA)" in files["cmk/CMakeLists.txt"]
    case, result = _repro_build(upstream, tmp_path, "bwrap", "alone", files)
    data = result.to_json()
    assert data["sandbox"]["compile_isolation"] == ISOLATION_DONE
    assert data["reproducible"] is True, result.reasons
    cm = data["repro"]["modules"]["cm"]
    assert cm["identical"] is True
    [module] = [m for m in data["modules"] if m["name"] == "cm"]
    [configure] = [c for c in module["commands"] if " -S " in c]
    assert "-DCMAKE_CUDA_COMPILER_LAUNCHER=$BUILD/auditor-compile" in configure


@needs_nvcc
def test_two_modules_that_differ_by_a_process_id_are_named_so(tmp_path: Path) -> None:
    from auditor.rebuild.elf import first_difference

    (tmp_path / "step.cu").write_text(ANON_CU.format(n=2))
    outs = []
    for i in (1, 2):
        subprocess.run([shutil.which("nvcc") or "nvcc", "-shared", "-Xcompiler", "-fPIC",
                        "-o", f"m{i}.so", "step.cu"], cwd=tmp_path, check=True)
        subprocess.run(["strip", "--strip-unneeded", f"m{i}.so"], cwd=tmp_path, check=True)
        outs.append(tmp_path / f"m{i}.so")
    first = first_difference(*outs)
    assert first["cause"].startswith("nvcc's module id"), first
