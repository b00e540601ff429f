"""Writes into the toolchain or the interpreter's install block (issue 29, principle 1): a build
helper that rewrites $CUDA_HOME/include/cuda.h (the shape of a fork's fix_cuda_13_align.py),
torch's headers or site-packages, in Python, in a shell script and in a command string Python
runs; the real idioms that read the toolkit or write into the build folder do not. End to end:
the shipped rules and the default policy over a real repository."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from scancase import scan_series

from auditor.model import Action, Finding, StageResult

SEMGREP = shutil.which("semgrep", path=str(Path(sys.executable).parent)) or shutil.which("semgrep")
pytestmark = pytest.mark.skipif(SEMGREP is None, reason="semgrep is not installed")

HOSTILE = {
    "tools/fix_cuda_13_align.py": (
        "import os\n"
        "\n"
        "CUDA_HOME = os.environ.get('CUDA_HOME', '/usr/local/cuda')\n"
        "path = os.path.join(CUDA_HOME, 'include', 'cuda.h')\n"
        "src = open(path).read()\n"
        "with open(path, 'w') as f:\n"
        "    f.write(src.replace('__align__(16)', '__align__(8)'))\n", "with open(path, 'w')"),
    "tools/vendor_headers.py": (
        "import shutil\n"
        "from pathlib import Path\n"
        "from torch.utils.cpp_extension import include_paths\n"
        "\n"
        "dest = Path(include_paths()[0]) / 'c10' / 'util'\n"
        "shutil.copy('patches/Exception.h', dest / 'Exception.h')\n", "shutil.copy"),
    "scripts/patch_cuda.sh": (
        "#!/bin/sh\nset -e\n"
        "sed -i 's/__align__(16)/__align__(8)/' \"${CUDA_HOME:-/usr/local/cuda}/include/cuda.h\"\n"
        "sed -i 's/x/y/' $CUDA_HOME/include/cuda.h\n", "$CUDA_HOME/include"),
    "setup_patch.py": (
        "import os\n"
        "\n"
        "def prepare():\n"
        "    os.system(\"cp patches/cuda.h /usr/local/cuda/include/cuda.h\")\n", "os.system"),
}

BENIGN = {
    "tools/cuda_version.py": (
        "import os\n"
        "import shutil\n"
        "from torch.utils.cpp_extension import CUDA_HOME\n"
        "\n"
        "def record(build_dir):\n"
        "    with open(os.path.join(CUDA_HOME, 'include', 'cuda.h')) as f:\n"
        "        text = f.read()\n"
        "    with open(os.path.join(build_dir, 'cuda_version.txt'), 'w') as f:\n"
        "        f.write(text[:100])\n"
        "    lib = os.path.join(CUDA_HOME, 'lib64', 'libcudart.so.12')\n"
        "    shutil.copy(lib, os.path.join(build_dir, os.path.basename(lib)))\n"),
    "scripts/build.sh": (
        "#!/bin/sh\nset -e\n"
        "export PATH=\"$CUDA_HOME/bin:$PATH\"\n"
        "cp \"$CUDA_HOME/include/cuda.h\" build/include/\n"
        "$CUDA_HOME/bin/nvcc --version > build/nvcc.txt\n"),
}


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> StageResult:
    files = {p: v[0] for p, v in HOSTILE.items()} | BENIGN
    return scan_series(tmp_path_factory.mktemp("toolchain"), [("build helpers", files)]).result


def _at(result: StageResult, path: str) -> list[Finding]:
    return [f for f in result.findings if f.path == path and f.rule.endswith("toolchain-modified")]


@pytest.mark.parametrize("path", sorted(HOSTILE))
def test_a_write_into_the_toolchain_blocks(result: StageResult, path: str) -> None:
    text, needle = HOSTILE[path]
    want = next(n for n, ln in enumerate(text.split("\n"), 1) if needle in ln)
    found = _at(result, path)
    assert any(f.line <= want <= (f.end_line or f.line) and f.action is Action.BLOCK
               for f in found), (path, want, [(f.rule, f.line, f.action) for f in found])
    assert all(f.category.value == "filesystem" for f in found)


@pytest.mark.parametrize("path", sorted(BENIGN))
def test_reading_the_toolchain_or_writing_the_build_folder_does_not(result: StageResult,
                                                                     path: str) -> None:
    assert _at(result, path) == []
