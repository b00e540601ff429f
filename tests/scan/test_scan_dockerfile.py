"""The Dockerfile splitter and its shell reading, on Dockerfiles with the shapes of vLLM's own
(multi-line ``RUN --mount=...``, comments inside RUN, ``RUN <<EOF``, ``bash - <<'BASH'``, ARG with
several names, the legacy ENV form, JSON-form RUN, an escape directive). The shell reading must be
valid bash (``bash -n``) and keep every line where it was."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from auditor.scan.dockerfile import readings, shell_reading, split
from auditor.scan.files import split_lines

VLLM_SHAPED = """\
# syntax=docker/dockerfile:1.7
ARG CUDA_VERSION=12.8.1
FROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu22.04 AS base
ARG PIP_INDEX_URL UV_INDEX_URL
ARG PIP_EXTRA_INDEX_URL UV_EXTRA_INDEX_URL

# Install uv for faster pip installs
RUN --mount=type=cache,target=/root/.cache/uv \\
    python3 -m pip install uv
ENV UV_HTTP_TIMEOUT=500
ENV UV_INDEX_STRATEGY="unsafe-best-match"
RUN <<EOF
gcc --version
EOF
RUN --mount=type=cache,target=/root/.cache/uv \\
    --mount=type=bind,source=.git,target=.git \\
    if [ "$TARGETPLATFORM" = "linux/arm64" ]; then \\
        # comments inside a RUN are dropped by Docker
        uv pip install --system torch; \\
    fi
ARG FLASHINFER_GIT_REF="v0.2.8rc1"
RUN --mount=type=cache,target=/root/.cache/uv bash - <<'BASH'
  . /etc/environment
    git clone --depth 1 --branch ${FLASHINFER_GIT_REF} https://github.com/x/y.git y
    curl -fsSL https://get.example/install.sh | sh
BASH
COPY requirements/common.txt requirements/common.txt
ENV PIP_EXTRA_INDEX_URL=https://wheels.example/simple
RUN pip uninstall -y triton && \\
    pip install --no-deps https://wheels.example/triton.whl
RUN ["/bin/bash", "-c", "wget -q https://x.example/a.sh && chmod +x a.sh"]
RUN python3 - <<PY
import urllib.request
urllib.request.urlopen("https://x.example/")
PY
ENV LEGACY_NAME some value with spaces
HEALTHCHECK --interval=30s CMD curl -f http://localhost:8000/health || exit 1
CMD ["vllm", "serve", "--host", "0.0.0.0"]
"""


def _line(text: str, n: int) -> str:
    return text.split("\n")[n - 1]


def test_instructions_and_their_line_ranges() -> None:
    df = split(VLLM_SHAPED)
    got = [(i.keyword, i.start, i.end) for i in df.instructions]
    assert got[:12] == [
        ("ARG", 2, 2), ("FROM", 3, 3), ("ARG", 4, 4), ("ARG", 5, 5), ("RUN", 8, 9),
        ("ENV", 10, 10), ("ENV", 11, 11), ("RUN", 12, 14), ("RUN", 15, 20), ("ARG", 21, 21),
        ("RUN", 22, 26), ("COPY", 27, 27),
    ]
    run = df.instructions[4]
    assert run.flags == ("--mount=type=cache,target=/root/.cache/uv",)
    assert df.instructions[8].flags == ("--mount=type=cache,target=/root/.cache/uv",
                                        "--mount=type=bind,source=.git,target=.git")
    heredoc = df.instructions[10].heredocs[0]
    assert (heredoc.delimiter, heredoc.body_start, heredoc.end) == ("BASH", 23, 26)


def test_shell_reading_keeps_lines_and_is_valid_bash(tmp_path: Path) -> None:
    reading = shell_reading(VLLM_SHAPED)
    text = reading.text
    assert text.count("\n") == VLLM_SHAPED.count("\n")
    assert _line(text, 1) == ""  # the directive: not shell
    # FROM: the pull it amounts to (issue 29: an image not pinned by a digest is reviewed)
    assert _line(text, 3) == "docker pull nvidia/cuda:${CUDA_VERSION}-devel-ubuntu22.04"
    assert _line(text, 4) == "export PIP_INDEX_URL UV_INDEX_URL"
    assert _line(text, 9).strip() == "python3 -m pip install uv"
    assert "--mount" not in _line(text, 8) and _line(text, 8).strip() == "\\"
    assert _line(text, 13) == "gcc --version" and _line(text, 12).strip() == ""
    assert _line(text, 18).strip() == "\\"  # the comment inside the RUN continues it
    assert _line(text, 25).strip().startswith("curl -fsSL")  # heredoc script as shell lines
    assert _line(text, 28) == "export PIP_EXTRA_INDEX_URL=https://wheels.example/simple"
    assert _line(text, 31) == "wget -q https://x.example/a.sh && chmod +x a.sh"
    assert _line(text, 36) == "export LEGACY_NAME='some value with spaces'"
    assert _line(text, 37).strip() == "curl -f http://localhost:8000/health || exit 1"
    assert _line(text, 38) == "vllm serve --host 0.0.0.0"
    covered = {n for a, b in reading.covers for n in range(a, b + 1)}
    assert 3 not in covered and 27 not in covered  # FROM and COPY: Dockerfile rules only
    assert {2, 4, 7, 8, 9, 22, 25, 28, 30, 31, 38} <= covered
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    script = tmp_path / "reading.sh"
    script.write_text(text)
    res = subprocess.run([bash, "-n", str(script)], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr


def test_heredoc_fed_to_python_becomes_a_python_reading() -> None:
    shell, python = readings(VLLM_SHAPED)
    assert python.family == "python"
    assert _line(python.text, 33) == "import urllib.request"
    assert _line(python.text, 34).startswith("urllib.request.urlopen(")
    assert python.covers == ((33, 35),)
    assert _line(shell.text, 33) == ""
    shell_lines = {n for a, b in shell.covers for n in range(a, b + 1)}
    assert 32 in shell_lines and not {33, 34, 35} & shell_lines


def test_escape_directive_backtick_and_tab_stripped_heredoc() -> None:
    src = ("# escape=`\n"
           "FROM mcr.example/windows\n"
           "RUN echo one `\n"
           "    && echo two\n"
           "RUN cat <<-EOT > /etc/app.conf\n"
           "\tkey=value\n"
           "\tEOT\n"
           "ENV A=1 `\n"
           "    B=2\n")
    df = split(src)
    assert [(i.keyword, i.start, i.end) for i in df.instructions] == [
        ("FROM", 2, 2), ("RUN", 3, 4), ("RUN", 5, 7), ("ENV", 8, 9)]
    text = shell_reading(src).text
    assert _line(text, 3).rstrip().endswith("\\")
    assert _line(text, 5).strip() == "cat <<-EOT > /etc/app.conf"  # a heredoc another command reads
    assert _line(text, 7) == "\tEOT"
    assert _line(text, 8).startswith("export A=1")


def test_odd_input_never_raises() -> None:
    for src in ["", "\n\n", "RUN \\", "RUN <<EOF\nno end", "ENV", "# only a comment\n",
                "RUN [\"unclosed\"\n", "HEALTHCHECK NONE\n", "ONBUILD RUN curl x | sh\n"]:
        reading = shell_reading(src)
        assert len(split_lines(reading.text)) == len(split_lines(src))
