"""Taint views (``auditor.scan.taintviews``): a taint rule reads only the functions it can match.

What the views rest on is checked against the real semgrep (its taint analysis follows module-level
taint into functions and nothing from one function to another), and the semgrep scanner is run
with and without views over every rule fixture, the hostile shapes below and files written here,
and must give the same findings and errors both ways, with both of semgrep's command lines.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_scan_osemgrep import answers
from test_scan_osemgrep import targets as fixture_targets
from test_scan_rules import needs_semgrep

from auditor.scan import rules as rules_mod
from auditor.scan.gating import Staging, gated_rules, prefiltered, stage_by_gates
from auditor.scan.interface import Origin, ScanTarget
from auditor.scan.prefilter import Prefilter
from auditor.scan.semgrep import SemgrepScanner
from auditor.scan.taintviews import code_words, taint_views
from auditor.subproc import run

LOGGED = "prompt-logging.python.request-content-logged"

# What the views assume of semgrep: a finding in a function follows from that function and the
# module-level code. Lines marked "reported" are the only findings semgrep gives here.
FLOWS = '''\
G = source()


def reads_module_taint():
    sink(G)  # reported: module-level taint reaches functions


class C:
    A = source()

    def __init__(self):
        self.x = source()

    def other_method(self):
        sink(self.x)  # not followed from __init__

    def class_attribute(self):
        sink(self.A)
        sink(C.A)


def sets_global():
    global H
    H = source()


def reads_global():
    sink(H)  # not followed from sets_global


def returns_taint():
    return source()


def calls():
    sink(returns_taint())  # not followed through a return


def takes(a):
    sink(a)  # not followed from a call site


def call_site():
    takes(source())


K = source()


def default_argument(k=K):
    sink(k)  # reported: the default is module-level taint


def closure():
    v = source()

    def inner():
        sink(v)  # not followed into the closure
    return inner


class D:
    global J
    J = source()
    B = source()

    def bare(self):
        sink(B)  # not followed from the class body


def reads_class_global():
    sink(J)  # not followed from a class body


W = B
Z = D.B


def reads_class_names_through_module_code():
    sink(W)  # not followed from a class body through module-level code
    sink(Z)


L = []
(lambda: L.append(source()))()
(lambda: (Y := source()))()
E = (lambda: source())()
T = {"a": lambda: source(), "b": lambda n=K: n}
sink(L)  # nothing leaves a lambda body: not a side effect,
sink(Y)  # not a name bound in it,
sink(E)  # not what it returns when called,
sink(T)  # not the lambda itself,
sink(lambda: source())  # not a sink's argument
R = {"c": lambda: sink(K)}  # reported: module-level taint reaches a sink in a lambda
'''

FLOW_RULE = {"rules": [{
    "id": "t", "languages": ["python"], "severity": "ERROR", "message": "m", "mode": "taint",
    "pattern-sources": [{"pattern": "source()"}], "pattern-sinks": [{"pattern": "sink(...)"}]}]}


@needs_semgrep
def test_semgrep_taint_is_intraprocedural_as_the_views_assume(tmp_path: Path) -> None:
    (tmp_path / "flows.py").write_text(FLOWS, encoding="utf-8")
    (tmp_path / "rule.json").write_text(json.dumps(FLOW_RULE), encoding="utf-8")
    semgrep = str(Path(rules_mod.__file__).parents[2] / ".venv/bin/semgrep")
    exe = semgrep if Path(semgrep).exists() else "semgrep"
    res = run([exe, "scan", "--experimental", "--json", "--metrics=off",
               "--disable-version-check", "--config", "rule.json", "flows.py"], cwd=tmp_path,
              env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}, check=False)
    doc = json.loads(res.stdout)
    reported = sorted(r["start"]["line"] for r in doc["results"])
    expected = [n for n, line in enumerate(FLOWS.splitlines(), start=1) if "# reported" in line]
    # if semgrep ever follows taint further, the views must follow it too: this fails first
    assert reported == expected


def target(path: str, text: str) -> ScanTarget:
    return ScanTarget(key=f"b:{path}", path=path, origin=Origin.BUNDLE, sha256="",
                      family="python", text=text)


def logged_view(text: str) -> Any:
    meta = rules_mod.load_rule_meta()[LOGGED]
    pf = Prefilter(meta.prefilter, meta.sink_group)
    assert pf.admits(text)
    return taint_views(text, [pf])[0]


MODEL = '''\
import logging

logger = logging.getLogger(__name__)


def forward(input_ids, positions):
    hidden = embed(input_ids)
    return hidden + positions


def report(count):
    logger.info("served %d requests", count)


def leak(request):
    logger.info("prompt: %s", request.prompt)
'''


def test_a_view_keeps_only_the_functions_with_a_source_and_a_sink_word() -> None:
    view = logged_view(MODEL)
    assert view is not None and view.text is not None
    lines = view.text.split("\n")
    assert len(lines) == len(MODEL.split("\n"))  # lines in place
    assert "request.prompt" in view.text  # leak: source and sink words
    assert "embed(input_ids)" not in view.text  # forward: a source word, no sink word
    assert "served" not in view.text  # report: a sink word, no source word
    assert lines[5] == "def forward(input_ids, positions):" and lines[6] == "    ..."
    assert view.functions == 2


def test_module_level_words_count_for_every_function() -> None:
    # a module-level source: report() could log it, so report() is kept
    text = MODEL.replace("logger = logging", "prompt = load()\nlogger = logging")
    view = logged_view(text)
    assert view is not None and view.text is not None and "served" in view.text
    # a module-level source and sink: every function that calls a sink could match
    view = logged_view(text + "print(prompt)\n")
    assert view is not None and view.text is not None
    assert "served" in view.text and "embed(input_ids)" not in view.text
    # a rule naming no sink group: every function could match, the file is read whole
    pf = Prefilter(rules_mod.load_rule_meta()[LOGGED].prefilter)
    assert taint_views(text + "print(prompt)\n", [pf]) == [None]


def test_imports_inside_functions_count_for_every_function() -> None:
    text = ("def setup():\n    from json import dump as keep\n    return keep\n\n\n"
            "def leak(request, f):\n    keep(request.prompt, f)\n\n\n"
            "def count(n):\n    return n + 1\n")
    # the sink word (dump) is only in setup's import, which semgrep resolves in leak too
    view = logged_view(text)
    assert view is not None and view.text is not None
    assert "keep(request.prompt, f)" in view.text and "n + 1" not in view.text


def test_a_function_must_call_a_sink_word_itself() -> None:
    text = MODEL + (
        "\n\ndef parenthesized(prompt):\n    (logger.info)('%s', prompt)\n"
        "\n\ndef continued(prompt):\n    logger.warning \\\n        ('%s', prompt)\n"
        "\n\ndef named_only(prompt):\n    info = prompt\n    return info\n")
    view = logged_view(text)
    assert view is not None and view.text is not None
    assert "(logger.info)('%s', prompt)" in view.text and "('%s', prompt)" in view.text
    assert "info = prompt" not in view.text  # the word, not called: no sink there


def assert_view_keeps(text: str, kept: str, left_out: str) -> None:
    view = logged_view(text)
    assert view is not None and view.text is not None
    assert kept in view.text and left_out not in view.text


def test_a_name_an_import_binds_to_a_sink_counts() -> None:
    assert_view_keeps("from logging import info as say\n\n\ndef leak(prompt):\n    say(prompt)\n"
                      "\n\ndef keep(prompt):\n    return [prompt]\n",
                      kept="say(prompt)", left_out="return [prompt]")


def test_class_bodies_do_not_reach_methods_but_can_hold_a_finding() -> None:
    text = ("import logging\n\nlogger = logging.getLogger(__name__)\n\n\n"
            "class Config:\n    prompt_embeds: bool = False\n\n"
            "    def describe(self, n):\n        logger.info('%d', n)\n")
    # the class body's source word reaches no method: no function can match
    view = logged_view(text + "\n\ndef other(prompt):\n    return prompt\n")
    assert view is not None and view.text is None
    # a source and a sink in the class body itself: the rule reads the class body
    view = logged_view(text.replace("False\n", "False\n    print(prompt_embeds)\n"))
    assert view is not None and view.text is not None and "print(prompt_embeds)" in view.text
    assert "logger.info('%d', n)" not in view.text


SETTINGS = """\
import logging
import os

logger = logging.getLogger(__name__)
env = {
    "PROMPT": lambda: os.getenv("PROMPT", ""),
    "LIMIT": lambda: int(
        os.getenv("LIMIT", "0")  # prompt
    ), "SHOWN": lambda: logger.info(os.getenv("PROMPT")),
    "\u00e9t\u00e9": lambda: "\u00e9" + prompt_of("\u00fc"), "X": lambda: x,
}
hook = lambda request: logger.info(request.prompt)


def leak(request):
    print(request.prompt)
"""


def test_lambda_bodies_that_call_no_sink_are_left_out_lines_and_columns_in_place() -> None:
    view = logged_view(SETTINGS)
    assert view is not None and view.text is not None
    lines, old = view.text.split("\n"), SETTINGS.split("\n")
    assert len(lines) == len(old)
    def left_out(line: str, body: str) -> str:
        return line.replace(body, "...".ljust(len(body)))

    assert lines[5] == left_out(old[5], 'os.getenv("PROMPT", "")')
    assert lines[6:9] == ['    "LIMIT": lambda: (...', "", "    ), " + old[8][7:]]
    assert 'lambda: logger.info(os.getenv("PROMPT"))' in lines[8]  # a sink: kept
    assert lines[9] == left_out(old[9], '"\u00e9" + prompt_of("\u00fc")')
    assert lines[9].index('"X"') == old[9].index('"X"')
    assert "lambda: x," in lines[9]  # no room for ``...``: kept
    assert lines[11] == old[11] and "print(request.prompt)" in view.text
    compile(view.text, "view", "exec")
    crlf = logged_view(SETTINGS.replace("\n", "\r\n"))
    assert crlf is not None and crlf.text == view.text.replace("\n", "\r\n")
    # source words only in left-out bodies admit nothing: the rule is not given the file
    text = SETTINGS.replace("print(request.prompt)", "print(request)").replace(
        "hook = lambda request: logger.info(request.prompt)", "")
    view = logged_view(text)
    assert view is not None and view.text is None


def test_code_words_leave_out_strings_and_comments_but_not_f_string_fields() -> None:
    text = ('    def f(self, n):\n        # the prompt\n        """A prompt."""\n'
            "        a = 'prompts'\n        b = rb'token_ids'\n        c = f'{messages}'\n"
            '        d = F"""{input_ids!r}"""\n        return n\n')
    words = code_words(text)
    assert {"self", "n", "a", "b", "c", "d", "messages", "input_ids"} <= words
    assert not {"prompt", "prompts", "token_ids", "A"} & words
    # text that does not tokenize: every identifier counts
    assert "prompt" in code_words('x = """prompt\n')


def test_a_source_word_only_in_a_string_or_comment_does_not_count() -> None:
    text = ("import logging\n\nlogger = logging.getLogger(__name__)\n\n\n"
            'def documented(n):\n    """Counts the prompt."""\n'
            "    logger.info('prompt count %d', n)  # not the prompt itself\n\n\n"
            "def formatted(request):\n    logger.info(f'{request.prompt}')\n")
    assert_view_keeps(text, kept="f'{request.prompt}'", left_out="prompt count")


def test_a_rule_that_can_match_no_function_is_not_given_the_file() -> None:
    text = ("import logging\n\n\ndef forward(input_ids):\n    return input_ids\n\n\n"
            "def report(n):\n    logging.info('%d', n)\n")
    view = logged_view(text)
    assert view is not None and view.text is None


DECLARED = "".join(f"    VLLM_SETTING_{i}: int = {i}\n" for i in range(25))
STORES = ("import logging\nimport os\nfrom typing import TYPE_CHECKING\n\n"
          "logger = logging.getLogger(__name__)\n\nif TYPE_CHECKING:\n" + DECLARED
          + "    READ: str = 'x'\n    TWICE: int = 1\n    SHARED = 1; OTHER = 2\n"
          "    CALLED: Annotated[int, Field()] = 3\n    LONG: tuple = (\n        1,\n"
          "        -2,\n    )\nTWICE = 2\nKEY = 'HF_TOKEN'\nprompt: str = ''\n"
          "logger.info(os.environ[KEY])  # the constant KEY makes it a secret\n\n\n"
          "def show(request):\n    logger.info(READ, request.prompt)\n")


def test_literal_stores_nothing_reads_are_left_out_of_every_view() -> None:
    view = logged_view(STORES)
    assert view is not None and view.text is not None
    lines, old = view.text.split("\n"), STORES.split("\n")
    assert len(lines) == len(old)
    assert lines[7] == "    ..." and "VLLM_SETTING" not in view.text
    assert "LONG" not in view.text and "-2" not in view.text
    for kept in ("READ: str", "TWICE: int = 1", "SHARED = 1; OTHER = 2", "CALLED:",
                 "TWICE = 2", "KEY = 'HF_TOKEN'", "os.environ[KEY]"):
        assert kept in view.text, kept
    assert "prompt: str = ''" not in view.text  # a source word, but nothing reads the name
    compile(view.text, "view", "exec")
    # a few stores are not worth the walk over the file
    assert logged_view(STORES.replace(DECLARED, "    A: int = 1\n")) is None


def test_a_context_that_calls_no_sink_gives_the_rule_nothing_to_read() -> None:
    # a request model: a source word in the class body, a sink word named but not called
    text = ("import logging\n\n\nclass Request(BaseModel):\n    prompt: str = ''\n"
            "    log: bool = False\n\n    def forward(self, input_ids):\n"
            "        return input_ids\n")
    view = logged_view(text)
    assert view is not None and view.text is None
    # the sink called in the class body: the rule reads it
    view = logged_view(text.replace("    log: bool = False\n", "    log(prompt)\n"))
    assert view is not None and view.text is not None and "log(prompt)" in view.text


def test_files_that_are_not_sliced_are_read_whole() -> None:
    assert logged_view("def f(prompt):\n    print(prompt\n") is None  # does not parse
    assert logged_view("print(prompt)\n") is None  # no function


def _staging(tmp_path: Path, texts: dict[str, str]) -> Staging:
    meta = rules_mod.load_rule_meta()
    return stage_by_gates([target(p, t) for p, t in texts.items()], tmp_path,
                          lambda t: t.text, meta)


def test_views_are_staged_apart_and_every_other_rule_excludes_them(tmp_path: Path) -> None:
    staging = _staging(tmp_path, {"vllm/model.py": MODEL, "vllm/plain.py": "x = 1\n"})
    assert staging.views >= 1 and staging.view_folders
    view_rel = next(rel for rel in staging.files if rel.startswith("v"))
    assert view_rel in staging.readers[LOGGED]
    base = next(rel for rel in staging.files
                if rel.startswith("g") and rel.endswith("vllm/model.py"))
    assert base not in staging.readers[LOGGED]  # the rule reads its view instead
    assert (tmp_path / view_rel).read_text(encoding="utf-8").count("\n") == MODEL.count("\n")
    doc = {"rules": [{"id": LOGGED, "languages": ["python"], "mode": "taint"},
                     {"id": "api-exposure.python.bind-all-interfaces", "languages": ["python"]},
                     {"id": "x.generic.own", "languages": ["generic"],
                      "paths": {"include": ["*.conf"], "exclude": ["/tests/"]}}]}
    rules = gated_rules(doc, rules_mod.load_rule_meta(), staging)["rules"]
    excluded = [f"/{f}/" for f in staging.view_folders]
    assert f"/{view_rel.split('/')[0]}/" in rules[0]["paths"]["include"]
    assert "exclude" not in rules[0]["paths"]
    assert rules[1]["paths"] == {"exclude": excluded}
    assert rules[2]["paths"] == {"include": ["*.conf"], "exclude": ["/tests/", *excluded]}


HOSTILE = {
    # a prompt logged in one method of a large class whose other methods are clean
    "vllm/engine/serving.py": (
        "import logging\nimport os\n\nlogger = logging.getLogger(__name__)\n\n\n"
        "class Server:\n    timeout = 5\n\n"
        "    def start(self, port):\n        logger.info('listening on %d', port)\n\n"
        "    def generate(self, request):\n        text = request.prompt\n"
        "        logger.info('prompt=%s', text)\n        return text\n\n"
        "    def tokens(self, input_ids):\n        return len(input_ids)\n\n\n"
        "def token():\n    key = os.environ['HF_TOKEN']\n    print(key)\n\n\n"
        "def unrelated():\n    return os.environ.get('HOME')\n"),
    # the sink imported in one function under another name, used in another
    "vllm/utils/alias.py": (
        "def _setup():\n    from json import dump as keep\n    return keep\n\n\n"
        "def handle(request, f):\n    keep(request.prompt, f)\n\n\n"
        "def forward(input_ids):\n    return input_ids\n"),
    # sinks called through parentheses, a line continuation or a name an import binds; a class
    # body holding a source and a sink; a method naming a sink word without calling it
    "vllm/utils/calls.py": (
        "import logging\nfrom logging import info as say\n\n"
        "logger = logging.getLogger(__name__)\n\n\n"
        "class Cfg:\n    prompt_embeds: bool = False\n    print(prompt_embeds)\n\n"
        "    def show(self, prompt):\n        (logger.info)('%s', prompt)\n\n"
        "    def wrapped(self, prompt):\n        logger.warning \\\n            ('%s', prompt)\n\n"
        "    def aliased(self, prompt):\n        say(prompt)\n\n"
        "    def named(self, prompt):\n        info = prompt\n        return info\n\n\n"
        "def class_reader(n):\n    logger.info('%d', n)\n"),
    # source words in docstrings, strings and comments; sources in f-string fields
    "vllm/utils/strings.py": (
        "import logging\n\nlogger = logging.getLogger(__name__)\n\n\n"
        "def formatted(request):\n    logger.info(f'{request.prompt}')\n\n\n"
        "def nested(request):\n    logger.info(f\"{'x' + request.prompt}\")\n\n\n"
        'def documented(n):\n    """Logs the prompt count."""\n'
        "    logger.info('prompt count %d', n)  # not the prompt\n"),
    # a module of settings read through lambdas (vLLM's envs.py): most bodies call no sink and
    # are left out of the views; those that do, across lines, beside another on a line, after
    # non-ASCII text or in a class body, stay
    "vllm/utils/settings.py": (
        "import logging\nimport os\nfrom logging import warning as warn\n\n"
        "logger = logging.getLogger(__name__)\nTOKEN = os.environ['HF_TOKEN']\n\n"
        "env = {\n    'A': lambda: os.getenv('HF_TOKEN', ''),\n"
        "    'B': lambda: int(\n        os.getenv('B', '0')\n    ),\n"
        "    'C': lambda: logger.info('token %s', TOKEN),\n"
        "    'D': lambda: print(\n        os.environ['API_KEY']), 'E': lambda: os.getenv('X'),\n"
        "    '\u00e9': lambda: '\u00fc' + os.getenv('SECRET_KEY', '\u00e9'), 'F': lambda: warn(TOKEN),\n"
        "    'G': lambda: (lambda: os.environ['AUTH_TOKEN'])(),\n}\n\n\n"
        "class Hooks:\n    hook = lambda self, request: logger.info(request.prompt)\n"
        "    quiet = lambda self, request: request.prompt.strip()\n\n\n"
        "def show():\n    print(TOKEN)\n\n\ndef other(x):\n    return x\n"),
    # literal stores nothing reads (left out of the views), a name read through constant
    # propagation, a source word in a store nothing reads
    "vllm/utils/stores.py": STORES,
    # module-level taint read in a function
    # the sink is a module-level file: a view must keep the module's own statements
    "vllm/utils/module.py": (
        "import sys\nPROMPT_LOG = open('/var/tmp/prompts.log', 'a')\n\n\ndef dump(prompt):\n"
        "    PROMPT_LOG.write(prompt)\n\n\ndef other(x):\n    return x\n"),
}


def _views_off_and_on(tmp_path: Path, files: list[ScanTarget], cli: str) -> tuple[Any, Any]:
    off = SemgrepScanner(jobs=2, cli=cli, views=False).scan(files, tmp_path / "off")
    on = SemgrepScanner(jobs=2, cli=cli, views=True).scan(files, tmp_path / "on")
    return answers(off), answers(on)


@needs_semgrep
@pytest.mark.parametrize("cli", ["osemgrep", "pysemgrep"])
def test_views_give_the_findings_whole_files_give(tmp_path: Path, cli: str) -> None:
    files = fixture_targets() + [target(p, t) for p, t in HOSTILE.items()]
    off, on = _views_off_and_on(tmp_path, files, cli)
    assert on == off
    # the comparison covered views: some were staged, and rules read them
    config = (tmp_path / "on" / "semgrep" / "rules.json").read_text(encoding="utf-8")
    assert '"/v' in config and '"exclude"' in config
    assert {r for r, *_ in on["findings"]["b:vllm/engine/serving.py"]} >= {
        LOGGED, "secret-access.python.secret-exfiltration"}
    assert on["findings"]["b:vllm/utils/alias.py"]
    assert on["findings"]["b:vllm/utils/module.py"]
    calls = sorted(line for r, line, *_ in on["findings"]["b:vllm/utils/calls.py"] if r == LOGGED)
    # line 9 prints a class attribute named prompt_embeds (a flag, no request's content): only
    # a function's own parameter of that name is a source
    assert calls == [12, 15, 19]
    strings = sorted(line for r, line, *_ in on["findings"]["b:vllm/utils/strings.py"]
                     if r == LOGGED)
    assert strings == [7, 11]
    stores = {r.rsplit(".", 1)[1] for r, *_ in on["findings"]["b:vllm/utils/stores.py"]}
    assert {"secret-exfiltration", "request-content-logged"} <= stores
    settings = sorted((r.rsplit(".", 1)[1], line)
                      for r, line, *_ in on["findings"]["b:vllm/utils/settings.py"])
    assert ("secret-exfiltration", 13) in settings and ("request-content-logged", 22) in settings


def test_every_taint_rule_with_a_prefilter_gets_views() -> None:
    taint = [m.id for m in prefiltered(rules_mod.load_rule_meta()) if m.taint]
    assert LOGGED in taint and len(taint) >= 5
