"""Repositories as the SBOM and provenance name them: the spec's ``[upstream] url`` /
``[patches] url`` (or a ``repo`` written as a URL), else the mirror's spec-relative path."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support import simple_case, write_spec

from auditor.errors import SpecError, SpecErrors
from auditor.sbom.locator import locator
from auditor.spec import load_spec

UP = "https://github.com/example/engine.git"
FORK = "https://git.community.example/fork/engine.git"


def test_the_spec_urls_are_used_and_the_mirror_is_spec_relative(tmp_path):
    case = simple_case(tmp_path)
    spec = {**case["spec"], "upstream": {**case["spec"]["upstream"], "url": UP}}
    loaded = load_spec(write_spec(tmp_path / "audit.toml", spec))
    up, fork = locator(loaded, "upstream"), locator(loaded, "patches")
    assert (up.url, up.path) == (UP, "engine")
    assert (fork.url, fork.path) == (UP, "engine")  # the fork lives in upstream's repository
    assert up.vcs_url("ab" * 20) == f"git+{UP}@{'ab' * 20}"
    spec["patches"] = {**spec["patches"], "url": FORK}
    loaded = load_spec(write_spec(tmp_path / "audit.toml", spec))
    assert locator(loaded, "patches").url == FORK
    plain = load_spec(write_spec(tmp_path / "audit.toml", case["spec"]))
    assert locator(plain, "upstream").url is None and locator(plain, "upstream").shown == "engine"


@pytest.mark.parametrize("bad", ["engine.git", "https://", "https://host/a b", "/abs/path"])
def test_a_url_that_is_not_one_is_a_spec_error_naming_the_key(tmp_path, bad):
    case = simple_case(tmp_path)
    spec = {**case["spec"], "upstream": {**case["spec"]["upstream"], "url": bad}}
    with pytest.raises((SpecError, SpecErrors)) as info:
        load_spec(write_spec(tmp_path / "audit.toml", spec))
    assert "upstream.url" in str(info.value.diagnostics())


def test_the_sbom_names_the_published_urls_in_purls_and_references(tmp_path):
    case = simple_case(tmp_path)
    spec = {**case["spec"], "upstream": {**case["spec"]["upstream"], "url": UP},
            "patches": {**case["spec"]["patches"], "url": FORK}}
    path = write_spec(tmp_path / "audit.toml", spec)
    target = tmp_path / "out.cdx.json"
    res = subprocess.run([sys.executable, "-m", "auditor", "sbom", str(path), "-o", str(target)],
                         capture_output=True, text=True, timeout=600)
    assert target.is_file(), res.stderr[-2000:]
    text = target.read_text()
    assert str(tmp_path) not in text and "file://" not in text
    ancestors = {a["bom-ref"]: a
                 for a in json.loads(text)["metadata"]["component"]["pedigree"]["ancestors"]}
    up = ancestors["auditor:upstream"]
    assert "vcs_url=git%2Bhttps://github.com/example/engine.git%40" in up["purl"]
    assert up["externalReferences"][0]["url"] == UP
    fork = ancestors["auditor:fork-source"]
    assert fork["externalReferences"][0]["url"] == FORK
    assert f"vcs_url=git%2B{FORK}%40{case['commits'][-1]}" in fork["purl"]


def test_provenance_names_a_commit_by_its_url_or_by_digest_and_relative_path():
    from auditor.sbom.intoto import _git_dependency
    from auditor.sbom.locator import Locator

    sha = "cd" * 20
    with_url = _git_dependency("upstream", Locator(UP, "mirrors/up.git"), sha, {"ref": "v1"})
    assert with_url == {"name": "upstream", "digest": {"gitCommit": sha},
                        "uri": f"git+{UP}@{sha}", "annotations": {"ref": "v1"}}
    local = _git_dependency("upstream", Locator(None, "mirrors/up.git"), sha, {"ref": "v1"})
    assert local == {"name": "upstream", "digest": {"gitCommit": sha},
                     "annotations": {"ref": "v1", "repository": "mirrors/up.git"}}
