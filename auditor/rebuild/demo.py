"""The demo's "official wheel" and its working build recipe (called by ``auditor/demo.py``).

:func:`make_official_wheel_and_recipe` plays the upstream project's release job: it compiles the
upstream kernels of tag v1.0.0 with nvcc (:func:`~auditor.rebuild.builders.compile_nvcc`, no sandbox:
this is the trusted upstream tree), writes ``wheels/tinyllm-1.0.0-py3-none-linux_x86_64.whl`` with
:func:`~auditor.rebuild.wheel.write_wheel`, and writes ``builds/tinyllm-1.0.0-sm86.toml`` pinning that
wheel's sha256. Without nvcc the wheel holds no kernels and the build stage will be INCOMPLETE
(it needs nvcc to rebuild the changed kernel) - the demo still runs.
"""

from __future__ import annotations

import io
import json
import tarfile
import tempfile
from pathlib import Path

from auditor.errors import ToolError
from auditor.fsutil import sha256_file
from auditor.gitio import git_env, run
from auditor.rebuild.builders import compile_nvcc
from auditor.rebuild.wheel import write_wheel

#: module name -> (kernel source, wheel path); tinyllm/kernels.py loads "<name>.so" next to itself
KERNELS = {
    "rmsnorm": ("csrc/rmsnorm.cu", "tinyllm/_rmsnorm.so"),
    "activation": ("csrc/activation.cu", "tinyllm/_activation.so"),
}
NVCC_FLAGS = ("-O2",)
ARCHS = ("86",)


def _export(work: Path, rev: str, dest: Path) -> Path:
    data = run(["git", "-C", str(work), "archive", "--format=tar", rev], env=git_env(),
               text=False).stdout
    assert isinstance(data, bytes)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")
    return dest


def _metadata(tree: Path) -> tuple[str, ...]:
    import tomllib

    project = tomllib.loads((tree / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return tuple(project.get("dependencies", ()))


def make_official_wheel_and_recipe(root: Path, work: Path, *, ref: str = "v1.0.0") -> Path:
    """Build the official wheel of ``ref`` from the repository ``work``; write and return the recipe."""
    wheels = root / "wheels"
    builds = root / "builds"
    builds.mkdir(parents=True, exist_ok=True)
    built: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="auditor-demo-official-") as tmp:
        tree = _export(work, ref, Path(tmp) / "src")
        files: dict[str, object] = {p.relative_to(tree).as_posix(): p.read_bytes()
                                    for p in sorted((tree / "tinyllm").rglob("*.py"))}
        for _name, (source, wheel_path) in KERNELS.items():
            try:
                module = compile_nvcc(tree, Path(tmp) / "mods" / Path(wheel_path).name, [source],
                                      archs=ARCHS, flags=NVCC_FLAGS)
            except ToolError:
                break  # no nvcc here: the wheel ships without kernels, the build stage says why
            built[wheel_path] = (module.path.read_bytes(), 0o755)
        files.update(built)
        wheel = write_wheel(wheels, "tinyllm", "1.0.0", files,  # type: ignore[arg-type]
                            summary="A small inference engine", requires=_metadata(tree))
    digest = sha256_file(wheel)
    recipe = builds / "tinyllm-1.0.0-sm86.toml"
    modules = "".join(f"""
[modules.{name}]
wheel_path = "{wheel_path}"
sources = ["{source}"]
builder = "nvcc"
[modules.{name}.nvcc]
sources = ["{source}"]
flags = {json.dumps(list(NVCC_FLAGS))}
""" for name, (source, wheel_path) in KERNELS.items())
    recipe.write_text(f"""\
# The demo's build recipe: tinyllm 1.0.0, kernels rebuilt for sm_86 with nvcc.
engine = "tinyllm"
version = "1.0.0"
target = "sm86"
archs = {json.dumps(list(ARCHS))}

[wheel]
file = "../wheels/{wheel.name}"
sha256 = "{digest}"
packages = ["tinyllm"]

[toolchain]
nvcc = "13.0"
cc_version = "12"
{modules}""", encoding="utf-8")
    return recipe
