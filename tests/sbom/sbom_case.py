"""Helpers for the sbom tests: a verified Workspace made from a real git series, stage results
with exactly the keys the deps and build stages agreed to publish, and a Context to run in."""

from __future__ import annotations

import hashlib
import io
import subprocess
import zipfile
from pathlib import Path
from typing import Any

from support import simple_case, write_spec
from typed_results import build_data, built_wheel, decl, deps_data, verify_data, vuln

from auditor.model import (
    Action,
    BundleFile,
    Category,
    Finding,
    SeriesCommit,
    Severity,
    StageResult,
    StageStatus,
    Workspace,
)
from auditor.results.build import ModuleRecord, OfficialWheel, Toolchain
from auditor.results.deps import FetchRecord, IndexRecord, Kind, SourceRecord
from auditor.spec import load_spec
from auditor.stage import Context, Options

FMT = "%H%x00%T%x00%P%x00%s%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%B"


def git(repo: Path, *args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], input=data, check=True,
                          capture_output=True).stdout


def series_commit(repo: Path, sha: str) -> SeriesCommit:
    fields = git(repo, "show", "-s", f"--format={FMT}", sha).decode().split("\0")
    diff = git(repo, "show", sha)
    pid = git(repo, "patch-id", "--stable", data=diff).decode().split()
    return SeriesCommit(sha=fields[0], tree=fields[1], parents=tuple(fields[2].split()),
                        subject=fields[3], author_name=fields[4], author_email=fields[5],
                        author_date=fields[6], committer_name=fields[7], committer_email=fields[8],
                        committer_date=fields[9], message=fields[10].strip() + "\n",
                        patch_id=pid[0] if pid else None)


def manifest(root: Path) -> dict[str, BundleFile]:
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            rel = p.relative_to(root).as_posix()
            data = p.read_bytes()
            blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
            mode = "100755" if p.stat().st_mode & 0o111 else "100644"
            out[rel] = BundleFile(path=rel, mode=mode, size=len(data),
                                  sha256=hashlib.sha256(data).hexdigest(), blob=blob)
    return out


def workspace(case: dict[str, Any]) -> Workspace:
    repo = case["repo"].path
    upstream = case["repo"].head("v1.0.0")
    head = case["commits"][-1]
    tree = git(repo, "rev-parse", f"{head}^{{tree}}").decode().strip()
    return Workspace(
        upstream_repo=repo, patches_repo=repo, upstream_commit=upstream,
        upstream_tree=git(repo, "rev-parse", f"{upstream}^{{tree}}").decode().strip(),
        head_commit=head, head_tree=tree, expected_tree=tree,
        commits=tuple(series_commit(repo, c) for c in case["commits"]),
        bundle_root=case["bundle"], bundle_tree=tree, manifest=manifest(case["bundle"]),
        proof_ok=True)


def make_wheel(path: Path, files: dict[str, bytes]) -> str:
    """A small zip written deterministically; returns its sha256."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in sorted(files.items()):
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            zf.writestr(info, data)
    path.write_bytes(buf.getvalue())
    return hashlib.sha256(buf.getvalue()).hexdigest()


def deps_result(status: StageStatus = StageStatus.OK) -> StageResult:
    bundle = (
        decl("fastapi", "0.110.0", line=1),
        decl("uvicorn", specifier=">=0.29", line=2),
        decl("FastAPI", "0.110.0", file="requirements-cuda.txt", line=3),
        decl("flashinfer", kind="url", url="https://example.invalid/flashinfer-0.2.tar.gz",
             line=3),
        decl("helper", kind="vcs", url="git+https://example.invalid/helper.git@v1", line=4),
        decl("extra-index-url", kind="index", url="https://mirror.example.invalid/simple",
             line=5),
    )
    return StageResult("deps", status, deps_data(
        bundle=bundle,
        cmake_fetches=(
            FetchRecord(name="cutlass", kind=Kind.CMAKE_GIT,
                        repository="https://github.com/NVIDIA/cutlass.git",
                        tag="f9ece1b42c32ef5ffd1b7f39b62a2a4b3c8d1e2f", url=None, hash=None,
                        pinned=True, file="CMakeLists.txt", line=12),
            FetchRecord(name="vllm-flash-attn", kind=Kind.CMAKE_URL, repository=None, tag=None,
                        url="https://example.invalid/fa.tar.gz", hash="SHA256=" + "ab" * 32,
                        pinned=True, file="cmake/external.cmake", line=7),
        ),
        vulnerabilities=(
            vuln("GHSA-aaaa-bbbb-cccc", "fastapi", "0.110.0", aliases=["CVE-2024-0001"],
                 fixed=["0.115.0"], severity="high"),
            # waived by the deps stage: a waiver covers its finding (below)
            vuln("PYSEC-2024-7", "uvicorn", "0.29.0", severity="medium",
                 summary="reloader path traversal", severity_source="GHSA: MODERATE",
                 waived=True,
                 waiver="only reachable through the reloader, disabled in production"),
            vuln("OSV-2024-99", "flashinfer", "", waived=True, waiver="not shipped"),
        ),
        indexes=(IndexRecord(option="index-url", url="https://pypi.example.invalid/simple",
                             file="requirements.txt", line=6),),
        source=SourceRecord(kind="osv", digest="12" * 32, date="2026-11-01T00:00:00Z",
                            records=3, location="/snapshots/osv"),
    ), findings=(Finding(
        rule="dependency.vulnerable", category=Category.DEPENDENCY, severity=Severity.MEDIUM,
        action=Action.REVIEW, path="requirements.txt", line=2, commit=None, scanner="deps",
        message="uvicorn==0.29.0 is affected by PYSEC-2024-7", fingerprint="f" * 32,
        waived=True, waiver="only reachable through the reloader, disabled in production"),))


def build_result(out_dir: Path, status: StageStatus = StageStatus.OK) -> StageResult:
    so = b"\x7fELF fake module built here"
    wheel_sha = make_wheel(out_dir / "engine-1.0.0+audited.sm86-py3-none-any.whl",
                           {"engine/_C.so": so, "engine/__init__.py": b"VERSION = '1.0.0'\n"})
    official = "/cache/engine-1.0.0-py3-none-any.whl"
    return StageResult("build", status, build_data(
        wheel=built_wheel("engine-1.0.0+audited.sm86-py3-none-any.whl", wheel_sha,
                          version="1.0.0+audited.sm86"),
        official_wheel=OfficialWheel(file=official, path=official, name="engine",
                                     version="1.0.0", sha256="cd" * 32,
                                     expected_sha256="cd" * 32),
        modules=(
            ModuleRecord(name="_C", wheel_path="engine/_C.so", action="built",
                         sha256=hashlib.sha256(so).hexdigest(), official_sha256=None,
                         builder="nvcc", recipe_entry="_C", sources=("csrc/kernel.cu",),
                         changed_sources=(),
                         commands=("nvcc -O3 -shared -o _C.so csrc/kernel.cu",), abi=None),
            ModuleRecord(name="_moe_C", wheel_path="engine/_moe_C.so", action="official",
                         sha256="ef" * 32, official_sha256="ef" * 32, builder="",
                         recipe_entry="_moe_C", sources=(), changed_sources=(), commands=(),
                         abi=None),
        ),
        toolchain=Toolchain(nvcc="13.0.48", cc="gcc 12.2.0",
                            expected={"nvcc": "13.0.48", "cc": "gcc 12.2.0"}, matches=True),
        source_date_epoch=1_700_000_180,
        started="2026-11-29T10:00:00+00:00",
        finished="2026-11-29T10:02:30+00:00",
        reproducible=True,
    ))


def context(tmp: Path, case: dict[str, Any], *, build: bool = True, deps: bool = True,
            reproducible: bool = True, name: str = "run") -> Context:
    """A Context after verify (and optionally deps/build), as the pipeline would hand it over."""
    base = tmp / name
    (base / "out").mkdir(parents=True)
    (base / "work").mkdir()
    sections = dict(case["spec"])
    if build:
        recipe = tmp / "recipe.toml"
        if not recipe.exists():
            recipe.write_text("[build]\ntargets = ['_C']\n")
        sections["build"] = {"recipe": str(recipe)}
    if deps:
        sections["deps"] = {"vulns": "none"}
    spec_path = tmp / "audit.toml"
    write_spec(spec_path, sections)
    ctx = Context(spec=load_spec(spec_path), options=Options(reproducible=reproducible),
                  workdir=base / "work", out_dir=base / "out")
    ctx.workspace = case.setdefault("_ws", workspace(case))
    ctx.results["verify"] = StageResult("verify", StageStatus.OK, verify_data())
    ctx.results["scan"] = StageResult.not_requested("scan")
    ctx.results["deps"] = deps_result() if deps else StageResult.not_requested("deps")
    ctx.results["build"] = (build_result(ctx.out_dir) if build
                            else StageResult.not_requested("build"))
    return ctx


def new_case(tmp: Path) -> dict[str, Any]:
    return simple_case(tmp)
