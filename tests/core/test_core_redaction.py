"""One redaction pass: the detectors on a labelled set, and every output of a real audit."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from redaction_corpus import LOOKALIKES, SECRETS
from support import export_tree, simple_case, write_spec

from auditor.redaction import REDACTED, dump_json, is_secret_name, looks_random, redact, redact_tree


@pytest.mark.parametrize(("line", "secrets"), SECRETS, ids=[s[0][:40] for s in SECRETS])
def test_every_labelled_secret_is_redacted(line: str, secrets: tuple[str, ...]) -> None:
    out = redact(line)
    for secret in secrets:
        assert secret not in out, out
    assert REDACTED in out or "REDACTED@" in out


@pytest.mark.parametrize("line", LOOKALIKES)
def test_lookalikes_stay_byte_for_byte(line: str) -> None:
    assert redact(line) == line


def test_precision_and_recall_on_the_labelled_set() -> None:
    found = sum(s not in redact(line) for line, secrets in SECRETS for s in secrets)
    total = sum(len(secrets) for _, secrets in SECRETS)
    false_alarms = sum(redact(line) != line for line in LOOKALIKES)
    assert total >= 50 and len(LOOKALIKES) >= 50
    assert found / total == 1.0 and found / (found + false_alarms) == 1.0


def test_redaction_is_idempotent_and_keeps_the_code_readable() -> None:
    for line, _ in SECRETS:
        once = redact(line)
        assert redact(once) == once
    assert redact('aws_secret_access_key = "9SkpXz9w3QlY7Zkuvqdt7s8Stqcbnr3yBdGBLEPH"') == \
        'aws_secret_access_key = "[REDACTED]"'
    assert redact("https://ci:Pa55w0rdX@pypi.example/simple") == \
        "https://ci:REDACTED@pypi.example/simple"


def test_long_texts_are_redacted_every_time_and_their_redaction_is_remembered() -> None:
    """A long text (a diff, a file) is not memoised, only what redaction gave back: the same
    secret-bearing text is redacted on every call, and the redacted text comes back as it is."""
    from auditor import redaction

    filler = "\n".join(f"x_{n} = {n}" for n in range(400))
    for line, _ in SECRETS:
        text = f"{filler}\n{line}\n{filler}"
        once = redact(text)
        assert once != text and once.startswith(filler[:2000])
        assert redact(text) == once  # asked again: redacted again, not taken as clean
        assert redact(once) == once == redaction._redact(once)
    assert len(redaction._REDACTED_LONG) <= redaction._MEMO_MAX_LONG


def test_names_that_count_tokens_are_not_credentials() -> None:
    assert is_secret_name("aws_secret_access_key") and is_secret_name("HF_TOKEN")
    assert is_secret_name("authToken") and is_secret_name("OPENAI_API_KEY")
    for name in ("MAX_TOKENS", "token_ids", "VLLM_SM86_SPARSE_TOKEN_THRESHOLD", "api_key_file",
                 "num_tokens", "TOKENIZER", "NEURON_TOKEN_GEN_BUCKETS", "PASS_KEY"):
        assert not is_secret_name(name), name


def test_digests_and_shas_are_never_random_looking() -> None:
    assert not looks_random("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    assert not looks_random("39a91d1f0e3c2b7a8d6e5f4c3b2a190817263544")
    assert looks_random("xezy3Lex7BWr2drgd1QsO7jprBGumXxY")


def test_redact_tree_walks_keys_and_nested_values() -> None:
    tree = {"a": ["password = hunter22x", {"token: ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d": 1}],
            "n": 3, "sha": "39a91d1f0e3c2b7a8d6e5f4c3b2a190817263544"}
    text = dump_json(tree)
    assert "hunter22x" not in text and "ghp_u8jz" not in text
    assert json.loads(text)["sha"] == tree["sha"] and json.loads(text)["n"] == 3
    assert redact_tree(("x",)) == ["x"]


# ---------------------------------------------------------------- through the real CLI

SECRET = "9SkpXz9w3QlY7Zkuvqdt7s8Stqcbnr3yBdGBLEPH"


def _auditor(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "auditor", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def leaky_case(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A series whose last commit carries an AWS secret in its message and in a file."""
    tmp = tmp_path_factory.mktemp("leaky")
    case = simple_case(tmp)
    repo = case["repo"]
    sha = repo.commit(f'add s3 upload (aws_secret_access_key = "{SECRET}")\n\n'
                      f"AWS_SECRET_ACCESS_KEY={SECRET}\n",
                      files={"engine/s3.py": f'aws_secret_access_key = "{SECRET}"\n'},
                      author="Fork Author <fork@community.example>")
    shutil.rmtree(case["bundle"])
    export_tree(repo, "series", case["bundle"])
    case["spec"]["patches"]["commits"].append(sha)
    return write_spec(tmp / "audit.toml", case["spec"])


def test_no_output_of_an_audit_holds_the_secret(leaky_case: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = _auditor("audit", str(leaky_case), "--out", str(out), cwd=tmp_path)
    assert res.returncode in (0, 1), res.stderr
    written = sorted(p.name for p in out.iterdir())
    assert {"audit.json", "sbom.cdx.json", "report.md", "report.html"} <= set(written)
    for p in out.iterdir():
        assert SECRET not in p.read_text(encoding="utf-8"), p.name
    assert SECRET not in res.stdout + res.stderr
    sbom = json.loads((out / "sbom.cdx.json").read_text())
    assert REDACTED in json.dumps(sbom)  # the embedded diff kept its shape, value redacted
    for fmt in ("json", "md", "html", "sarif", "github"):
        rep = _auditor("report", str(out / "audit.json"), "--format", fmt, cwd=tmp_path)
        assert rep.returncode == 0 and SECRET not in rep.stdout + rep.stderr, fmt


def test_verify_json_redacts_commit_messages(leaky_case: Path, tmp_path: Path) -> None:
    res = _auditor("verify", str(leaky_case), "--json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert SECRET not in res.stdout
    assert "aws_secret_access_key" in res.stdout and REDACTED in res.stdout
    assert data["status"] == "ok"
