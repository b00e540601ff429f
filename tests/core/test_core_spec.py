"""The spec loader: every bad spec is a one-line error naming the key, exit 2, no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support import simple_case, write_spec

from auditor.errors import SpecError
from auditor.model import Scope
from auditor.spec import POLICIES_DIR, available_profiles, load_spec


@pytest.fixture()
def case(tmp_path: Path) -> dict:
    return simple_case(tmp_path)


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "auditor", *args], capture_output=True, text=True,
                          cwd=cwd)


def test_valid_spec_resolves_relative_paths_and_defaults(tmp_path: Path, case: dict) -> None:
    spec_dict = case["spec"]
    spec_dict["bundle"] = {"path": "bundle"}  # relative to the spec's folder
    spec_dict["scan"] = {}
    spec_dict["service"] = {"model": "/srv/m", "loopback_only": True}
    spec_dict["engine"]["profile"] = "vllm"
    spec = load_spec(write_spec(tmp_path / "audit.toml", spec_dict))
    assert spec.bundle.path == tmp_path / "bundle"
    assert spec.patches.repo == spec.upstream.repo  # patches.repo defaults to upstream.repo
    assert spec.scan is not None and spec.scan.scope is Scope.DIFF
    assert spec.scan.policy == POLICIES_DIR / "default.toml"
    assert spec.deps is None and spec.build is None
    assert spec.service is not None and spec.service.host == "127.0.0.1"
    assert spec.profile.api_key_env == "VLLM_API_KEY"
    assert spec.profile.telemetry_env["VLLM_NO_USAGE_STATS"] == "1"


def test_profiles_are_data() -> None:
    assert {"vllm", "llama.cpp", "generic"} <= set(available_profiles())


def test_commits_file_with_comments(tmp_path: Path, case: dict) -> None:
    c1, c2 = case["commits"]
    (tmp_path / "series.txt").write_text(f"# published series\n{c1} first\n\n{c2} second\n")
    spec_dict = case["spec"]
    spec_dict["patches"] = {"ref": "series", "commits_file": "series.txt"}
    spec = load_spec(write_spec(tmp_path / "audit.toml", spec_dict))
    assert spec.patches.commits == (c1, c2)


BAD = [
    ("malformed", None, "malformed TOML"),
    ("unknown-top", ("extra", {"x": 1}), "[extra]: unknown key"),
    ("unknown-key", ("bundle", {"pathh": "x"}), "[bundle.path"),
    ("wrong-type", ("bundle", {"path": 3}), "[bundle.path]: expected a path, got int"),
    ("missing-file", ("bundle", {"path": "nope.tar.gz"}), "[bundle.path]: 'nope.tar.gz' does not exist"),
    ("bad-scope", ("scan", {"scope": "everything"}), '[scan.scope]: expected "diff" or "full"'),
    ("bad-profile", ("engine", {"profile": "tgi", "version": "1"}), "unknown engine profile 'tgi'"),
    ("bad-pin", ("upstream", {"repo": ".", "ref": "v1", "commit": "abc"}),
     "[upstream.commit]: expected a full 40-hex commit sha"),
    ("bool-for-int", ("bundle", {"path": ".", "strip_components": True}),
     "[bundle.strip_components]: expected an integer"),
    ("root-user", ("service", {"model": "m", "user": "root"}), "[service.user]: expected a non-root"),
    ("both-commit-forms", ("patches", {"ref": "s", "commits": ["abcd"], "commits_file": "audit.toml"}),
     "[patches.commits]: give either commits or commits_file"),
]


@pytest.mark.parametrize(("name", "change", "expected"), BAD, ids=[b[0] for b in BAD])
def test_bad_specs_name_the_key(tmp_path: Path, case: dict, name: str, change, expected: str) -> None:
    spec_path = tmp_path / "audit.toml"
    if change is None:
        spec_path.write_text("[engine\nprofile = 'vllm'\n")
    else:
        section, keys = change
        spec_dict = dict(case["spec"])
        spec_dict[section] = keys
        write_spec(spec_path, spec_dict)
    with pytest.raises(SpecError) as info:
        load_spec(spec_path)
    assert expected in info.value.diagnostics()
    assert str(spec_path) in info.value.diagnostics()


def test_bad_spec_through_the_cli_is_one_line_exit_2(tmp_path: Path, case: dict) -> None:
    spec_dict = case["spec"]
    spec_dict["bundle"] = {"path": str(case["bundle"]), "colour": "red"}
    spec_path = write_spec(tmp_path / "audit.toml", spec_dict)
    res = _cli("verify", str(spec_path))
    assert res.returncode == 2
    assert "[bundle.colour]: unknown key" in res.stderr
    assert "Traceback" not in res.stderr and res.stdout == ""


def test_missing_spec_file_exit_2(tmp_path: Path) -> None:
    res = _cli("audit", str(tmp_path / "nope.toml"), "--out", str(tmp_path / "out"))
    assert res.returncode == 2
    assert "file not found" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "out").exists()


def test_every_problem_of_a_spec_is_reported_in_one_run(tmp_path: Path) -> None:
    import subprocess
    import sys

    spec = tmp_path / "audit.toml"
    spec.write_text('[engine]\nprofile = "vllm"\nverison = "1"\n\n'
                    '[upstream]\nrepo = "."\ncomit = "abc"\n\n'
                    '[patches]\nref = "x"\ncommits = ["zz"]\n\n'
                    '[bundle]\npath = "."\nstrip_components = -1\n\n'
                    '[service]\nmodel = "/m\\u0000x"\n\n[extras]\n')
    with pytest.raises(SpecError) as info:
        load_spec(spec)
    keys = [p.key for p in getattr(info.value, "problems", ())]
    # a typo of a required key is one problem, reported on the typo (issue 33 item 4)
    assert keys == ["extras", "engine.verison", "upstream.ref",
                    "upstream.comit", "patches.commits[0]", "bundle.strip_components",
                    "service.model"]
    res = subprocess.run([sys.executable, "-m", "auditor", "verify", str(spec)],
                         capture_output=True, text=True, env={"COLUMNS": "200", "PATH": ""})
    assert res.returncode == 2
    for key in keys:
        assert f"[{key}]" in res.stderr
    assert "7 problems" in res.stderr and "Traceback" not in res.stderr
    assert "[engine.verison]: unknown key; did you mean version?" in res.stderr
