"""Diff-scope slicing (auditor.scan.diffslice; its AST toolkit auditor.scan.pyast, its cache
auditor.scan.slicecache): what a slice keeps, and that the real semgrep (the shipped rules) and
bandit give the same findings on changed lines for a slice as for the whole file.

The equivalence runs one semgrep and one bandit process over every Python rule fixture, a file of
cross-function shapes and the demo's Python files, each whole and once per function as if only
that function had changed (and once as if only module-level code had); then the scan engine runs
a repository both ways (an upstream function with a finding, the series changing another one)
and the demo example both ways."""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from scancase import FORK, bundle_of, workspace
from support import GitRepo
from test_scan_rules import needs_semgrep

from auditor import demo, demo_files
from auditor.model import Finding, Scope
from auditor.policy import load_policy
from auditor.results.scan import ScanData
from auditor.scan import diffslice, pyast, slicecache
from auditor.scan import rules as rules_mod
from auditor.scan.bandit import BanditScanner
from auditor.scan.builtin import BuiltinScanner
from auditor.scan.engine import ScanConfig, run_scan
from auditor.scan.interface import Origin, RawFinding, Scanner, ScanTarget
from auditor.scan.semgrep import SemgrepScanner
from auditor.spec import POLICIES_DIR

# shapes where something in one function reaches another (measured with semgrep 1.185 and
# bandit 1.9: imports inside a function resolve names in later functions for both tools; a
# `global` rebinding makes semgrep stop treating the module-level name as a constant)
CROSS_FUNCTION = '''\
import os
import requests

URL = "http://localhost:8000/health"
BASE = "http://localhost"
CACHE = {}


def lazy_tools():
    import subprocess as sp
    from pickle import loads as unpickle
    if os.name == "posix":
        import yaml
    return sp, unpickle


def run_tool(cmd):
    sp.Popen(cmd)
    return unpickle(cmd)


def parse(doc):
    return yaml.load(doc)


def retarget():
    global URL
    URL = "https://collector.example.net/p"


def probe():
    return requests.get(URL)


def shadow():
    BASE = "https://elsewhere.example"
    return BASE


def health():
    return requests.get(BASE)


class Client:
    endpoint = "http://localhost:9000"

    def __init__(self, token):
        self.token = os.environ["HF_TOKEN"]

    @staticmethod
    def send(prompt):
        requests.post("https://collector.example.net/x", json={"p": prompt})

    def leak(self):
        print(os.environ["OPENAI_API_KEY"])

    async def grab(self, sock):
        data = await sock.recv(1024)
        return __import__("pickle").loads(data)


if os.environ.get("X"):
    def fallback(code):
        eval(code)
else:
    def fallback(code):
        return code


def one_liner(code): exec(code)
'''


def target(rel: str, text: str) -> ScanTarget:
    return ScanTarget(key=f"b:{rel}", path=rel, origin=Origin.BUNDLE,
                      sha256=hashlib.sha256(text.encode()).hexdigest(), family="python", text=text)


def spans(text: str) -> list[tuple[int, int]]:
    tree = ast.parse(text)
    return [pyast.span(f) for f in pyast.outer_functions(tree.body)]


def module_lines(text: str) -> set[int]:
    inside = {n for a, b in spans(text) for n in range(a, b + 1)}
    return {n for n in range(1, text.count("\n") + 2) if n not in inside}


# ---------------------------------------------------------------- what a slice keeps


def test_untouched_bodies_are_left_out_and_every_kept_line_stays_in_place() -> None:
    text = CROSS_FUNCTION
    probe = next(s for s in spans(text) if "def probe" in text.split("\n")[s[0] - 1])
    s = diffslice.slice_python(text, {probe[0] + 1})
    assert s is not None
    old, new = text.split("\n"), s.text.split("\n")
    assert len(new) == len(old)
    ast.parse(s.text)
    # the changed function, module-level code, headers and decorators are unchanged
    for n in range(probe[0], probe[1] + 1):
        assert new[n - 1] == old[n - 1]
    for n in module_lines(text):
        assert new[n - 1] == old[n - 1]
    assert "    @staticmethod" in new and "    async def grab(self, sock):" in new
    # an untouched body: `...` on its first line, then blank lines
    run_tool = old.index("def run_tool(cmd):") + 1
    assert new[run_tool:run_tool + 3] == ["    ...", "", ""]
    assert "sp.Popen(cmd)" not in s.text
    assert s.functions >= 5 and s.lines > 5


def test_imports_in_a_left_out_body_stay_on_their_lines() -> None:
    text = CROSS_FUNCTION
    s = diffslice.slice_python(text, set())
    assert s is not None
    old, new = text.split("\n"), s.text.split("\n")
    for mod in ("import subprocess as sp", "from pickle import loads as unpickle",
                "import yaml"):
        n = next(i for i, line in enumerate(old) if line.strip() == mod)
        assert new[n] == "    " + mod  # at the body's indentation, on the same line


def test_global_keeps_a_function_whole() -> None:
    text = CROSS_FUNCTION
    s = diffslice.slice_python(text, set())
    assert s is not None
    assert 'URL = "https://collector.example.net/p"' in s.text  # declares `global URL`
    assert 'BASE = "https://elsewhere.example"' not in s.text  # a local: left out
    assert "requests.get(URL)" not in s.text


def test_a_function_next_to_a_changed_line_is_kept() -> None:
    text = "import os\n\n\ndef f():\n    os.system('x')\n    return 1\n# changed\n"
    assert diffslice.slice_python(text, {7}) is None  # nothing to leave out
    assert diffslice.slice_python(text, {3}) is None
    s = diffslice.slice_python(text, {1})
    assert s is not None and s.text == "import os\n\n\ndef f():\n    ...\n\n# changed\n"


def test_a_body_that_starts_with_a_decorator_is_left_out_from_the_decorator() -> None:
    """A decorated class or function first in a body starts at its decorator (a real vLLM file
    once sliced to a lone decorator line: bandit could not parse it)."""
    text = ("def f(s):\n    @dataclass\n    class C:\n        x: int = 1\n    return C\n\n\n"
            "def g():\n    @functools.cache\n    def h():\n        return 1\n    return h\n")
    s = diffslice.slice_python(text, set())
    assert s is not None and s.functions == 2
    assert s.text == "def f(s):\n    ...\n\n\n\n\n\ndef g():\n    ...\n\n\n\n"
    ast.parse(s.text)


@pytest.mark.parametrize("text", [
    "def f(:\n    return 1\n",  # does not parse
    "def f():\n    return '\u202e'\n\ndef g():\n    return 2\n",  # bidi control character
    "def f():\n    return 1\r\ndef g():\r    return 2\n",  # a lone CR
    "def f():\n    return 1\x0c\n\ndef g():\n    return 2\n",  # form feed
    "def f(): return 1\n",  # a one-line function
    "x = 1\n",  # no function
])
def test_files_scanned_whole(text: str) -> None:
    assert diffslice.slice_python(text, set()) is None


def test_crlf_files_keep_their_line_ends() -> None:
    text = "def f():\r\n    a = 1\r\n    return a\r\n\r\ndef g():\r\n    return 2\r\n"
    s = diffslice.slice_python(text, {6})
    assert s is not None
    assert s.text == "def f():\r\n    ...\r\n\r\n\r\ndef g():\r\n    return 2\r\n"


def test_slice_targets_keys_on_the_sliced_content() -> None:
    text = CROSS_FUNCTION
    t = target("vllm/x.py", text)
    other = ScanTarget(key="b:doc.md", path="doc.md", origin=Origin.BUNDLE, sha256="0",
                       family=None, text="# hi\n")
    out, tally = diffslice.slice_targets([t, other], lambda _t: True,
                                       lambda ts: {x.key: set() for x in ts})
    assert out[1] is other and out[0].text != text
    assert out[0].sha256 == hashlib.sha256(out[0].text.encode()).hexdigest() != t.sha256
    assert tally.files == 1 and tally.lines > 0 and tally.notes()
    same, none = diffslice.slice_targets([t], lambda _t: False, lambda ts: {})
    assert same == [t] and none.notes() == []


# ---------------------------------------------------------------- the real tools agree


@dataclass(frozen=True)
class Variant:
    source: str  # the file's staged name
    changed: frozenset[int]


def sources() -> dict[str, str]:
    """Every Python rule fixture, the cross-function shapes and the demo's Python files."""
    out = {f"fixtures/{p.relative_to(rules_mod.FIXTURES_DIR).as_posix()}": p.read_text()
           for p in sorted(rules_mod.FIXTURES_DIR.rglob("*.py"))}
    out["shapes/cross_function.py"] = CROSS_FUNCTION
    for upstream in (demo_files.UPSTREAM, *(files for _s, files in demo_files.SERIES)):
        for rel, content in upstream.items():
            if rel.endswith(".py") and isinstance(content, str):
                out.setdefault(f"demo/{rel}", content)
    return out


def variants(texts: dict[str, str]) -> Iterator[tuple[Variant, str]]:
    """Each file as if the series had changed only one of its functions, or only its
    module-level code; with the slice each such change gives."""
    for name, text in texts.items():
        near = {n for a, b in spans(text) for n in (a - 1, b + 1)}
        changes = [set(range(a, b + 1)) for a, b in spans(text)] + [module_lines(text) - near]
        for changed in changes:
            s = diffslice.slice_python(text, changed)
            if s is not None:
                yield Variant(name, frozenset(changed)), s.text


def on_changed(found: Iterable[RawFinding], changed: frozenset[int]) -> set[tuple[object, ...]]:
    return {(f.rule, f.line, f.end_line, f.message) for f in found
            if any(n in changed for n in range(f.line, f.end_line + 1))}


@pytest.fixture(scope="module")
def agreement(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """One run of each scanner over every whole file and every slice."""
    texts = sources()
    whole = [target(f"whole/{name}", text) for name, text in texts.items()]
    vs = list(variants(texts))
    sliced = [target(f"slice{i}/{v.source}", text) for i, (v, text) in enumerate(vs)]
    work = tmp_path_factory.mktemp("slicing-agree")
    runs = {}
    scanners: list[Scanner] = [SemgrepScanner(jobs=2), BanditScanner(), BuiltinScanner()]
    for s in scanners:
        runs[s.name] = s.scan(whole + sliced, work / s.name)
    return {"texts": texts, "variants": [v for v, _t in vs], "runs": runs}


@needs_semgrep
@pytest.mark.parametrize("scanner", ["semgrep", "bandit", "builtin"])
def test_findings_on_changed_lines_are_the_same_sliced_and_whole(
        agreement: dict[str, object], scanner: str) -> None:
    texts = agreement["texts"]
    vs = agreement["variants"]
    run = agreement["runs"][scanner]  # type: ignore[index]
    assert isinstance(texts, dict) and isinstance(vs, list)
    assert not run.errors, run.errors
    compared = 0
    for i, v in enumerate(vs):
        want = on_changed(run.findings[f"b:whole/{v.source}"], v.changed)
        got = on_changed(run.findings[f"b:slice{i}/{v.source}"], v.changed)
        assert got == want, (v.source, sorted(v.changed)[:3], got ^ want)
        compared += len(want)
    # every fixture file with a function is sliced at least once (one of module-level statements
    # only has nothing to leave out: it is read whole), and the comparison saw real findings
    assert {v.source for v in vs} >= {n for n, t in texts.items()
                                      if n.startswith("fixtures/") and spans(t)}
    assert compared >= {"semgrep": 80, "bandit": 10, "builtin": 0}[scanner], compared


@needs_semgrep
def test_cross_function_shapes_are_found_in_the_slices(agreement: dict[str, object]) -> None:
    """The aliases imported in lazy_tools() resolve in run_tool()/parse() for both tools, and
    the `global` rebinding of URL keeps probe() a finding: the slices must keep that."""
    vs = agreement["variants"]
    runs = agreement["runs"]
    assert isinstance(vs, list) and isinstance(runs, dict)
    lines = CROSS_FUNCTION.split("\n")

    def line_of(code: str) -> int:
        return next(i for i, line in enumerate(lines, start=1) if line.strip() == code)

    wanted = {("semgrep", line_of("sp.Popen(cmd)")), ("bandit", line_of("sp.Popen(cmd)")),
              ("bandit", line_of("return yaml.load(doc)")),
              ("semgrep", line_of("return requests.get(URL)"))}
    for scanner, line in sorted(wanted):
        v_index = next(i for i, v in enumerate(vs) if v.source == "shapes/cross_function.py"
                       and line in v.changed and len(v.changed) < 10)
        found = runs[scanner].findings[f"b:slice{v_index}/shapes/cross_function.py"]
        assert any(f.line == line for f in found), (scanner, line, found)


# ---------------------------------------------------------------- the engine, both ways

UPSTREAM_WORKER = '''\
import os
import requests


def report_usage(stats):
    requests.post("https://stats.example.net/v1", json=stats)


def _tools():
    import subprocess as sp
    return sp


def warm_up(model):
    return model.load()
'''

SERIES_WORKER = UPSTREAM_WORKER.replace("    return model.load()\n", '''\
    sp.Popen(["nvidia-smi", "-pm", "1"])
    print(os.environ["HF_TOKEN"])
    return model.load()
''')


def engine_findings(ws: object, tmp: Path, *, sliced: bool) -> tuple[list[Finding], list[str]]:
    config = ScanConfig(scope=Scope.DIFF, policy=load_policy(POLICIES_DIR / "default.toml"),
                        jobs=2, slice_diff=sliced)
    scanners: list[Scanner] = [SemgrepScanner(jobs=2), BanditScanner(), BuiltinScanner()]
    res = run_scan(ws, scanners, config, tmp)  # type: ignore[arg-type]
    assert not res.not_checked, res.not_checked
    return list(res.findings), list(res.data_as(ScanData).notes)


def key(f: Finding) -> tuple[object, ...]:
    return (f.path, f.line, f.end_line, f.rule, f.commit, f.fingerprint, f.message, f.snippet)


@needs_semgrep
def test_engine_diff_scope_is_the_same_sliced_and_whole(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    repo.commit("engine 1.0.0", files={"engine/worker.py": UPSTREAM_WORKER,
                                       "engine/__init__.py": ""})
    repo.tag("v1.0.0")
    repo.checkout("series", new=True)
    sha = repo.commit("worker: persistence mode", files={"engine/worker.py": SERIES_WORKER},
                      author=FORK)
    bundle = bundle_of(repo, "series", tmp_path / "bundle")
    ws = workspace(repo, "v1.0.0", "series", bundle)
    whole, whole_notes = engine_findings(ws, tmp_path / "w", sliced=False)
    cut, notes = engine_findings(ws, tmp_path / "s", sliced=True)
    assert sorted(map(key, cut)) == sorted(map(key, whole))
    rules = {f.rule for f in cut}
    # the alias imported in the untouched _tools() still resolves in the changed warm_up()
    assert {"process-exec.python.subprocess", "process-exec.bandit.b603-subprocess"} & rules
    assert "secret-access.python.secret-exfiltration" in rules
    assert all(f.commit == sha for f in cut)
    assert not any("stats.example" in (f.snippet or "") for f in cut)  # upstream's finding
    assert not any("slices" in n for n in whole_notes)
    assert any("1 modified Python file(s) scanned as slices" in n for n in notes), notes


@needs_semgrep
def test_demo_diff_scope_is_the_same_sliced_and_whole(tmp_path: Path) -> None:
    example = demo.make_example(tmp_path / "demo")
    work = GitRepo(Path(str(example["work"])))
    bundle = bundle_of(work, "sm86", tmp_path / "bundle")
    ws = workspace(work, "v1.0.0", "sm86", bundle)
    whole, _ = engine_findings(ws, tmp_path / "w", sliced=False)
    cut, _notes = engine_findings(ws, tmp_path / "s", sliced=True)
    assert whole and sorted(map(key, cut)) == sorted(map(key, whole))


# ---------------------------------------------------------------- the slice cache


def test_the_slice_cache_gives_back_the_slice_without_asking_blame(tmp_path: Path) -> None:
    t = target("vllm/x.py", CROSS_FUNCTION)
    whole = target("vllm/y.py", "x = 1\n")
    cache = slicecache.SliceCache(tmp_path, "series-a")
    first, tally = diffslice.slice_targets([t, whole], lambda _t: True,
                                         lambda ts: {x.key: {1} for x in ts}, cache)
    assert tally.files == 1 and tally.cached == 0

    def no_blame(ts: object) -> dict[str, set[int]]:
        raise AssertionError(f"blame asked about {ts}")

    again, warm = diffslice.slice_targets([t, whole], lambda _t: True, no_blame, cache)
    assert [x.text for x in again] == [x.text for x in first] and again[1] is whole
    assert warm.cached == 2 and warm.files == 1 and warm.lines == tally.lines
    # another series (or a changed repository) is another identity: blame is asked again
    asked: list[str] = []

    def blame(ts: list[ScanTarget]) -> dict[str, set[int]]:
        asked.extend(x.key for x in ts)
        return {x.key: set() for x in ts}

    diffslice.slice_targets([t], lambda _t: True, blame, slicecache.SliceCache(tmp_path, "series-b"))
    assert asked == [t.key]


def test_the_blame_identity_names_replace_refs_and_configuration(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    up = repo.commit("one", files={"a.py": "x = 1\n"})
    head = repo.commit("two", files={"a.py": "x = 2\n"})
    ws = workspace(repo, up, head, tmp_path)
    first = slicecache.blame_identity(ws)
    assert slicecache.blame_identity(ws) == first
    repo.git("replace", "--graft", head)  # a replace ref: history now reads differently
    second = slicecache.blame_identity(ws)
    assert second != first
    repo.git("config", "blame.ignoreRevsFile", ".ignore-revs")
    assert slicecache.blame_identity(ws) != second


UP_A = "import os\n\n\ndef f():\n    return os.getcwd()\n\n\ndef g():\n    return 1\n"


def test_path_histories_give_each_paths_blobs_and_set_apart_what_moves(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    up = repo.commit("up", files={"a.py": UP_A, "b.py": "b = 1\n", "c.py": "c = 1\n"})
    repo.commit("one", files={"a.py": UP_A.replace("1\n", "2\n")})
    repo.commit("two", files={"a.py": UP_A.replace("1\n", "3\n"), "b.py": "b = 2\n"})
    repo.git("mv", "c.py", "d.py")
    head = repo.commit("three", files={"e.py": "e = 1\n"})
    h = slicecache.path_histories(workspace(repo, up, head, tmp_path))
    assert h is not None
    blob = lambda rev, path: repo.git("rev-parse", f"{rev}:{path}")  # noqa: E731
    assert h.blobs == {"a.py": (blob("HEAD~2", "a.py"), blob("HEAD~1", "a.py")),
                       "b.py": (blob("HEAD~1", "b.py"),)}
    assert h.moved == {"c.py", "d.py", "e.py"}
    # a merge in the range: no per-path answer, the series identity keys the cache
    repo.checkout("side", new=True, start=up)
    side = repo.commit("side", files={"f.py": "f = 1\n"})
    repo.checkout("main")
    repo.git("merge", "--no-ff", "-m", "merge", side)
    assert slicecache.path_histories(workspace(repo, up, repo.head(), tmp_path)) is None


def test_a_rebased_series_that_gives_a_file_the_same_blobs_needs_no_blame(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    up = repo.commit("up", files={"a.py": UP_A, "b.py": UP_A})
    series_a = UP_A.replace("return 1", "return 2")
    repo.checkout("v1", new=True, start=up)
    repo.commit("a", files={"a.py": series_a})
    head1 = repo.commit("b", files={"b.py": UP_A.replace("return 1", "return 3")})
    repo.checkout("v2", new=True, start=up)  # the same change to a.py, new commits
    repo.commit("a, reworded", files={"a.py": series_a})
    head2 = repo.commit("b, reworked", files={"b.py": UP_A.replace("return 1", "return 4")})
    upstream = {p: repo.git("rev-parse", f"{up}:{p}") for p in ("a.py", "b.py")}
    asked: list[str] = []

    def blame(ts: Sequence[ScanTarget]) -> dict[str, set[int]]:
        asked.extend(t.path for t in ts)
        return {t.key: {9} for t in ts}

    def run(head: str, b_text: str) -> list[ScanTarget]:
        cache = slicecache.slice_cache(tmp_path / "cache", workspace(repo, up, head, tmp_path),
                                    upstream)
        assert cache is not None
        ts = [target("a.py", series_a), target("b.py", b_text)]
        return diffslice.slice_targets(ts, lambda _t: True, blame, cache)[0]

    first = run(head1, UP_A.replace("return 1", "return 3"))
    assert asked == ["a.py", "b.py"] and "os.getcwd" not in first[0].text
    asked.clear()
    second = run(head2, UP_A.replace("return 1", "return 4"))
    assert asked == ["b.py"]  # a.py's blobs are the same: its slice came from the cache
    assert second[0].text == first[0].text


def test_full_scope_is_never_sliced(tmp_path: Path) -> None:
    from auditor.scan.engine import _slice_for_diff

    t = target("vllm/x.py", CROSS_FUNCTION)

    class NoBlame:
        def blame(self, ts: object) -> None:
            raise AssertionError("full scope asked for blame")

        def changed_lines(self, t: object) -> None:
            raise AssertionError("full scope asked for blame")

    policy = load_policy(POLICIES_DIR / "default.toml")
    for config in (ScanConfig(scope=Scope.FULL, policy=policy),
                   ScanConfig(scope=Scope.DIFF, policy=policy, slice_diff=False)):
        out, tally = _slice_for_diff(None, [t], {t.path}, config, NoBlame())  # type: ignore[arg-type]
        assert out == [t] and out[0].text == CROSS_FUNCTION and tally.notes() == []
