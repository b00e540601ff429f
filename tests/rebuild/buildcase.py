"""Helpers for the build tests: a tiny CUDA engine upstream, its official wheel, series, specs.

The official wheel is built once per session (``conftest.upstream``) with the real nvcc (two small
kernels) and our own wheel writer; each test makes its own series branch, bundle, workspace and
recipe.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import shutil
import stat
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support import GitRepo, export_tree, write_spec

from auditor.model import BundleFile, SeriesCommit, StageResult, StageStatus, Workspace
from auditor.rebuild.builders import compile_nvcc
from auditor.rebuild.wheel import write_wheel
from auditor.spec import load_spec
from auditor.stage import Context, Options

NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed on this machine")
needs_cmake = pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed")

KERN_CU = """\
#include "common.cuh"
extern "C" __global__ void tiny_scale_kernel(float* x, float a) { x[threadIdx.x] *= SCALE(a); }
extern "C" int tiny_scale(float* x, float a, int n) { tiny_scale_kernel<<<1, n>>>(x, a); return 0; }
"""
COMMON_CUH = "#define SCALE(a) (a)\n"
OTHER_CU = """\
extern "C" __global__ void tiny_other_kernel(int* x) { x[threadIdx.x] += 1; }
extern "C" int tiny_other(int* x, int n) { tiny_other_kernel<<<1, n>>>(x); return 0; }
"""
CM_C = '#include "tinydep.h"\nint tiny_cm(int x) { return x + TINYDEP_ONE; }\n'
CM_LISTS = """\
cmake_minimum_required(VERSION 3.18)
project(cm C)
include(FetchContent)
FetchContent_Declare(tinydep URL http://127.0.0.1:9/tinydep.tar.gz)
FetchContent_MakeAvailable(tinydep)
add_library(_cm SHARED cm.c)
target_include_directories(_cm PRIVATE ${tinydep_SOURCE_DIR})
set_target_properties(_cm PROPERTIES PREFIX "")
"""
INIT_PY = """\
import ctypes
import os

_here = os.path.dirname(__file__)
kern = ctypes.CDLL(os.path.join(_here, "_kern.so"))
other = ctypes.CDLL(os.path.join(_here, "_other.so"))
VERSION = "1.0.0"
"""
UPSTREAM_FILES = {
    "tinyeng/__init__.py": INIT_PY,
    "tinyeng/server.py": "def serve(host='127.0.0.1'):\n    return host\n",
    "tinyeng/old.py": "LEGACY = True\n",
    "csrc/kern.cu": KERN_CU,
    "csrc/common.cuh": COMMON_CUH,
    "csrc/other.cu": OTHER_CU,
    "cmk/CMakeLists.txt": CM_LISTS,
    "cmk/cm.c": CM_C,
    "setup.py": "from setuptools import setup\nsetup(name='tinyeng')\n",
    "tests/test_server.py": "def test_serve():\n    assert True\n",
}
AUTHOR = "Fork Author <fork@community.example>"


@dataclass
class Upstream:
    repo: GitRepo
    wheel: Path
    sha256: str
    deps: Path  # the local FetchContent folder for tinydep
    root: Path


def build_upstream(root: Path) -> Upstream:
    """The upstream engine at tag v1.0.0 and its official wheel (built here with nvcc and gcc)."""
    repo = GitRepo(root / "engine")
    repo.commit("tiny engine 1.0.0", files=UPSTREAM_FILES)
    repo.tag("v1.0.0")
    deps = root / "deps" / "tinydep"
    deps.mkdir(parents=True)
    (deps / "tinydep.h").write_text("#define TINYDEP_ONE 1\n")
    tree = export_tree(repo, "v1.0.0", root / "official-src")
    mods = root / "mods"
    compile_nvcc(tree, mods / "_kern.so", ["csrc/kern.cu"], include_dirs=["csrc"], flags=["-O2"])
    compile_nvcc(tree, mods / "_other.so", ["csrc/other.cu"])
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", f"-I{deps}", "-o", str(mods / "_cm.so"),
                    str(tree / "cmk/cm.c")], check=True)
    subprocess.run(["strip", "--strip-unneeded", str(mods / "_cm.so")], check=True)
    files: dict[str, Any] = {p: (tree / p).read_bytes() for p in UPSTREAM_FILES
                             if p.startswith("tinyeng/")}
    for m in ("_kern.so", "_other.so", "_cm.so"):
        files[f"tinyeng/{m}"] = ((mods / m).read_bytes(), 0o755)
    wheel = write_wheel(root / "dist", "tinyeng", "1.0.0", files, summary="tiny engine")
    return Upstream(repo=repo, wheel=wheel, sha256=hashlib.sha256(wheel.read_bytes()).hexdigest(),
                    deps=deps, root=root)


_branch_counter = [0]


def make_series(up: Upstream, name: str, commits: list[Mapping[str, str | bytes | None]]) -> str:
    """A series branch from v1.0.0; each commit maps paths to content (None deletes)."""
    _branch_counter[0] += 1
    branch = f"{name}-{_branch_counter[0]}"
    repo = up.repo
    repo.checkout(branch, new=True, start="v1.0.0")
    for i, change in enumerate(commits):
        for path, content in change.items():
            if content is None:
                repo.remove(path)
            else:
                repo.write(path, content)
        repo.commit(f"{name}: change {i + 1}", author=AUTHOR)
    repo.checkout("main")
    return branch


def _manifest(root: Path, repo: GitRepo) -> dict[str, BundleFile]:
    out = {}
    for dirpath, _dirs, names in os.walk(root):
        for n in names:
            p = Path(dirpath) / n
            rel = p.relative_to(root).as_posix()
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode):
                data = os.readlink(p).encode()
                mode = "120000"
            else:
                data = p.read_bytes()
                mode = "100755" if st.st_mode & 0o111 else "100644"
            blob = subprocess.run(["git", "hash-object", "--stdin"], input=data,
                                  capture_output=True, check=True).stdout.decode().strip()
            out[rel] = BundleFile(path=rel, mode=mode, size=len(data),
                                  sha256=hashlib.sha256(data).hexdigest(), blob=blob)
    return out


def _series_commits(repo: GitRepo, base: str, head: str) -> tuple[SeriesCommit, ...]:
    shas = repo.git("rev-list", "--reverse", f"{base}..{head}").split()
    out = []
    for sha in shas:
        fields = repo.git("show", "-s", "--format=%T%x00%P%x00%s%x00%an%x00%ae%x00%aI%x00%cn"
                          "%x00%ce%x00%cI%x00%B", sha).split("\x00")
        out.append(SeriesCommit(sha=sha, tree=fields[0], parents=tuple(fields[1].split()),
                                subject=fields[2], message=fields[9], author_name=fields[3],
                                author_email=fields[4], author_date=fields[5],
                                committer_name=fields[6], committer_email=fields[7],
                                committer_date=fields[8], patch_id=None))
    return tuple(out)


def workspace_for(up: Upstream, branch: str, bundle: Path) -> Workspace:
    repo = up.repo
    base, head = repo.head("v1.0.0"), repo.head(branch)
    return Workspace(
        upstream_repo=repo.path, patches_repo=repo.path, upstream_commit=base,
        upstream_tree=repo.head("v1.0.0^{tree}"), head_commit=head,
        head_tree=repo.head(f"{branch}^{{tree}}"), expected_tree=repo.head(f"{branch}^{{tree}}"),
        commits=_series_commits(repo, base, head), bundle_root=bundle,
        bundle_tree=repo.head(f"{branch}^{{tree}}"), manifest=_manifest(bundle, repo),
        proof_ok=True)


def recipe_text(up: Upstream, *, sha256: str | None = None, wheel: Path | None = None,
                extra: str = "", nvcc_path: str = "nvcc", modules: str | None = None,
                top: str = "") -> str:
    default_modules = f"""
[modules.kern]
wheel_path = "tinyeng/_kern.so"
sources = ["csrc/kern.cu", "csrc/*.cuh"]
builder = "nvcc"
[modules.kern.nvcc]
sources = ["csrc/kern.cu"]
include_dirs = ["csrc"]
flags = ["-O2"]

[modules.other]
wheel_path = "tinyeng/_other.so"
sources = ["csrc/other.cu"]
builder = "nvcc"
[modules.other.nvcc]
sources = ["csrc/other.cu"]

[modules.cm]
wheel_path = "tinyeng/_cm.so"
sources = ["cmk/**"]
builder = "cmake"
[modules.cm.cmake]
source_dir = "cmk"
target = "_cm"
output = "_cm.so"
[modules.cm.cmake.fetchcontent]
tinydep = "{up.deps}"
"""
    return f"""\
engine = "tinyeng"
version = "1.0.0"
target = "sm86"
archs = ["86"]
{top}
[wheel]
file = "{wheel or up.wheel}"
sha256 = "{sha256 or up.sha256}"

[toolchain]
nvcc = "13.0"
nvcc_path = "{nvcc_path}"
cc_version = "12"
{extra}
{modules if modules is not None else default_modules}
"""


@dataclass
class Case:
    ctx: Context
    ws: Workspace
    branch: str
    root: Path


def make_case(up: Upstream, tmp: Path, branch: str, *, repro: bool | None = False,
              recipe: str | None = None, profile: str = "generic") -> Case:
    tmp.mkdir(parents=True, exist_ok=True)
    bundle = export_tree(up.repo, branch, tmp / "bundle")
    ws = workspace_for(up, branch, bundle)
    (tmp / "recipe.toml").write_text(recipe if recipe is not None else recipe_text(up))
    spec_path = write_spec(tmp / "audit.toml", {
        "engine": {"profile": profile, "version": "1.0.0"},
        "upstream": {"repo": str(up.repo.path), "ref": "v1.0.0"},
        "patches": {"ref": branch, "commits": [c.sha for c in ws.commits]},
        "bundle": {"path": str(bundle)},
        "build": {"recipe": "recipe.toml", "repro": True},
    })
    (tmp / "work").mkdir()
    (tmp / "out").mkdir()
    ctx = Context(spec=load_spec(spec_path), options=Options(repro=repro, jobs=2),
                  workdir=tmp / "work", out_dir=tmp / "out")
    ctx.workspace = ws
    ctx.results["verify"] = StageResult("verify", StageStatus.OK)
    return Case(ctx=ctx, ws=ws, branch=branch, root=tmp)


def run_build(case: Case) -> StageResult:
    from auditor.pipeline import run_stage
    from auditor.rebuild.stage import BuildStage

    return run_stage(BuildStage(), case.ctx)


def iso(ts: int) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).isoformat()
