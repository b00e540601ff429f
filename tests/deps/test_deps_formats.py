"""pyproject.toml, setup.py (from its syntax tree), setup.cfg, CMake fetches, Dockerfiles and
shell scripts: each format yields declarations with the right line, or says what it skipped."""

import sys
from pathlib import Path

from auditor.deps.declaration import Kind
from auditor.deps.extract import extract_tree
from auditor.deps.tree import DirTree

SHA = "8798f27777fb57f447070301bf33a9f9c607f491"


def _extract(tmp_path: Path, files: dict[str, str]):
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return extract_tree(DirTree(tmp_path))


def _find(ex, name, kind=None):
    hits = [d for d in ex.declarations if d.name == name and (kind is None or d.kind is kind)]
    assert hits, f"{name} not extracted from {ex.declarations}"
    return hits[0]


def test_pyproject_pep621_optional_groups_and_build_system(tmp_path):
    ex = _extract(tmp_path, {"pyproject.toml": (
        '[build-system]\n'
        'requires = ["setuptools>=61", "wheel"]\n'
        '\n'
        '[project]\n'
        'name = "engine"\n'
        'dependencies = [\n'
        '  "torch==2.4.0",\n'
        '  "fastapi>=0.110",\n'
        ']\n'
        '[project.optional-dependencies]\n'
        'gpu = ["triton==3.0.0", "cupy-cuda12x==13.0.0"]\n'
        '[dependency-groups]\n'
        'dev = ["pytest>=8"]\n')})
    assert (_find(ex, "setuptools").group, _find(ex, "setuptools").line) == ("build-system", 2)
    assert (_find(ex, "torch").pin, _find(ex, "torch").line) == ("2.4.0", 7)
    assert _find(ex, "fastapi").line == 8
    assert (_find(ex, "triton").group, _find(ex, "triton").line) == ("optional:gpu", 11)
    assert _find(ex, "cupy-cuda12x").line == 11  # several on one line
    assert _find(ex, "pytest").group == "group:dev"
    assert ex.not_checked == ()


def test_pyproject_dynamic_and_malformed_are_not_checked(tmp_path):
    ex = _extract(tmp_path, {
        "pyproject.toml": '[project]\nname = "x"\ndynamic = ["dependencies"]\n',
        "sub/pyproject.toml": "[project\n",
    })
    text = "\n".join(ex.not_checked)
    assert "pyproject.toml:1: [project] dependencies is dynamic" in text
    assert "sub/pyproject.toml: malformed TOML" in text


def test_setup_py_literal_lists_and_computed_values(tmp_path):
    ex = _extract(tmp_path, {"setup.py": (
        "from setuptools import setup\n"
        "BASE = ['requests==2.31.0', 'numpy>=1.26']\n"
        "def get_requirements():\n"
        "    return open('deps.lst').read().split()\n"
        "setup(\n"
        "    name='engine',\n"
        "    install_requires=BASE,\n"
        "    setup_requires=get_requirements(),\n"
        "    extras_require={\n"
        "        'tensorizer': ['tensorizer==2.9.0'],\n"
        "        'audio': [x for x in ('librosa',)],\n"
        "    },\n"
        ")\n")})
    assert (_find(ex, "requests").pin, _find(ex, "requests").line) == ("2.31.0", 2)
    assert _find(ex, "numpy").group == "install_requires"
    t = _find(ex, "tensorizer")
    assert (t.group, t.line, t.pin) == ("extras:tensorizer", 10, "2.9.0")
    text = "\n".join(ex.not_checked)
    assert "setup.py:8: setup_requires is computed (get_requirements())" in text
    assert "setup.py:11: extras:audio is computed" in text


def test_setup_py_never_runs_and_reports_kwargs(tmp_path):
    marker = tmp_path / "ran"
    ex = _extract(tmp_path, {"setup.py": (
        f"open({str(marker)!r}, 'w').write('x')\n"
        "import setuptools\n"
        "kw = dict(install_requires=['a'])\n"
        "setuptools.setup(name='x', **kw)\n")})
    assert not marker.exists()
    assert any("setup(**...)" in n for n in ex.not_checked)


def test_setup_cfg_options_and_extras(tmp_path):
    ex = _extract(tmp_path, {"pkg/setup.cfg": (
        "[metadata]\nname = engine\n\n"
        "[options]\n"
        "install_requires =\n"
        "    aiohttp==3.9.5\n"
        "    pydantic>=2,<3  # comment\n"
        "setup_requires = file: reqs.in, ../missing.in\n"
        "tests_require = attr: engine.TESTS\n"
        "\n[options.extras_require]\n"
        "tracing = opentelemetry-sdk==1.25.0\n"),
        "pkg/reqs.in": "ninja==1.11.1\n"})
    assert (_find(ex, "aiohttp").line, _find(ex, "aiohttp").pin) == (6, "3.9.5")
    assert _find(ex, "pydantic").specifier == "<3,>=2"
    assert _find(ex, "opentelemetry-sdk").group == "extras:tracing"
    assert (_find(ex, "ninja").file, _find(ex, "ninja").pin) == ("pkg/reqs.in", "1.11.1")
    assert ex.not_checked == (
        "pkg/setup.cfg:9: tests_require = attr: engine.TESTS: computed, not checked",
        "pkg/setup.cfg:8: '../missing.in': no such file in the tree")


def test_pyproject_setuptools_dynamic_files_are_read(tmp_path):
    ex = _extract(tmp_path, {
        "pyproject.toml": (
            '[project]\nname = "x"\ndynamic = ["dependencies", "optional-dependencies"]\n'
            "[tool.setuptools.dynamic]\n"
            'dependencies = {file = ["requirements/common.in"]}\n'
            'optional-dependencies.gpu = {file = "gpu.in"}\n'),
        "requirements/common.in": "torch==2.4.0\n",
        "gpu.in": "triton==3.0.0\n",
    })
    assert {d.name: d.file for d in ex.declarations} == {"torch": "requirements/common.in",
                                                         "triton": "gpu.in"}
    assert ex.not_checked == ()


def test_cmake_fetchcontent_and_external_project(tmp_path):
    ex = _extract(tmp_path, {
        "CMakeLists.txt": (
            "include(FetchContent)\n"
            'set(CUTLASS_REVISION "v3.5.1" CACHE STRING "CUTLASS revision")\n'
            "FetchContent_Declare(\n"
            "  cutlass\n"
            "  GIT_REPOSITORY https://github.com/nvidia/cutlass.git\n"
            "  GIT_TAG ${CUTLASS_REVISION}  # a tag name\n"
            "  GIT_SHALLOW TRUE\n"
            ")\n"
            f"FetchContent_Declare(flash_mla GIT_REPOSITORY https://github.com/x/FlashMLA "
            f"GIT_TAG {SHA})\n"
            "FetchContent_Declare(vendor_fork GIT_REPOSITORY https://github.com/fork/kern.git\n"
            "  GIT_TAG main)\n"),
        "cmake/external.cmake": (
            "ExternalProject_Add(zlib\n"
            '  URL "https://zlib.example/zlib-1.3.tar.gz"\n'
            "  URL_HASH SHA256=abc123)\n"
            "ExternalProject_Add(nohash URL https://blobs.example/blob.tgz)\n"),
    })
    cutlass = _find(ex, "cutlass")
    assert (cutlass.kind, cutlass.ref, cutlass.line) == (Kind.CMAKE_GIT, "v3.5.1", 3)
    assert cutlass.end_line == 8
    assert cutlass.text == ("cutlass GIT_REPOSITORY https://github.com/nvidia/cutlass.git "
                            "GIT_TAG v3.5.1")
    assert not cutlass.pinned_ref
    assert _find(ex, "flash-mla").pinned_ref
    assert _find(ex, "vendor-fork").ref == "main"
    z = _find(ex, "zlib")
    assert (z.kind, z.url, z.hash) == (Kind.CMAKE_URL, "https://zlib.example/zlib-1.3.tar.gz",
                                       "SHA256=abc123")
    assert _find(ex, "nohash").hash is None


def test_dockerfile_and_shell_pip_install(tmp_path):
    ex = _extract(tmp_path, {
        "docker/Dockerfile": (
            "FROM python:3.11\n"
            "RUN pip install --no-cache-dir \\\n"
            "      --extra-index-url https://download.example/whl/cu121 \\\n"
            "      torch==2.4.0 'xformers>=0.0.27' && rm -rf /root/.cache\n"
            'RUN ["python3", "-m", "pip", "install", "flashinfer==0.1.6"]\n'
            "RUN pip install -r requirements-build.txt -e .\n"),
        "scripts/setup_env.sh": (
            "#!/bin/sh\n"
            "set -e\n"
            "python -m pip install -U pip && pip3 install git+https://github.com/e/x.git\n"
            "pip install $EXTRA_PKG\n"
            "uv pip install --index-url=https://idx.example/simple reqests==2.31.0\n"),
        "requirements-build.txt": "cmake>=3.26\n",
    })
    torch = _find(ex, "torch")
    assert (torch.file, torch.line, torch.pin) == ("docker/Dockerfile", 4, "2.4.0")
    assert _find(ex, "xformers").specifier == ">=0.0.27"
    assert _find(ex, "flashinfer").line == 5
    index = _find(ex, "extra-index-url", Kind.INDEX)
    assert (index.url, index.line) == ("https://download.example/whl/cu121", 3)
    assert _find(ex, "x").kind is Kind.VCS
    assert _find(ex, "reqests").line == 5
    assert _find(ex, "index-url", Kind.INDEX).url == "https://idx.example/simple"
    assert _find(ex, "pip").specifier == ""
    assert any("scripts/setup_env.sh:4" in n and "$EXTRA_PKG" in n for n in ex.not_checked)
    assert _find(ex, "cmake").file == "requirements-build.txt"


def test_setup_py_with_newer_python_fstrings_is_read(tmp_path):
    """A setup.py that uses Python 3.12 f-strings (a real fork's does) is read; its literal
    lists are declarations, and a list with an f-string requirement is computed, never a
    value."""
    ex = _extract(tmp_path, {"setup.py": (
        "from setuptools import setup\n"
        "HOME = '/usr/local/cuda'\n"
        "ARGS = [f'-DCUDA={HOME.replace(\"\\\\\", \"/\")}/bin']\n"
        "V = {'torch': '2.7.0'}\n"
        "setup(\n"
        "    name='engine',\n"
        "    install_requires=['requests==2.31.0', f'torch=={V[\"torch\"]}'],\n"
        "    extras_require={'audio': ['librosa==0.10.2']},\n"
        ")\n")})
    assert _find(ex, "librosa").pin == "0.10.2"
    assert not [d for d in ex.declarations if d.name in ("torch", "requests", "")]
    text = "\n".join(ex.not_checked)
    assert "not valid Python" not in text
    assert "setup.py:7: install_requires is computed" in text, text


def test_setup_py_this_python_cannot_parse_names_the_interpreter(tmp_path):
    ex = _extract(tmp_path, {"setup.py": "from setuptools import setup\nprint 'x'\nsetup()\n"})
    text = "\n".join(ex.not_checked)
    assert f"setup.py:2: not valid Python {sys.version_info.major}.{sys.version_info.minor}" in text
