"""Errors about a file's content never echo the content (issue 30 item 11): a commits file or a
``[deps] lock`` that is really /proc/self/environ, an environment dump, or a file of secrets gives
an error naming the file and the problem, with at most a short, redacted excerpt."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import simple_case, write_spec

from auditor.deps.lock import read_lock
from auditor.errors import SpecError
from auditor.textsafe import EXCERPT_MAX, excerpt

TOKEN = "ghp_" + "Zq8Lm2Xv9Rt4Wn6Yp3Ks7Hd1Fg5Jc0Bv2Nx"  # fake, GitHub-shaped
SECRETS = [
    TOKEN,
    "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENGbPxRfiCYzz0KEYqq",
    "sk-live0123456789abcdefghijKLMN",
    "password: Tr0ub4dor&3-correct-horse-battery",
    "x7Kp2Qm9Lw4Zr8Tn3Vb6Yc1Hd5Fg0Js",  # random-looking, no known shape
    "-----BEGIN OPENSSH PRIVATE KEY-----",
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ9sQ8xY2",
]
#: pieces of each secret that must never show (the parts after any name)
LEAKS = [TOKEN[4:], "wJalrXUtnFEMI", "0123456789abcdef", "correct-horse", "x7Kp2Qm9Lw4Zr8T",
         "b3BlbnNzaC1rZXktdjEAAAAA"]
PLANTED = "ghp_" + "Pl4nt3dT0k3nInTh3Envir0nm3ntXyZw"
PLAIN = "plain-marker-value-ab12"  # not a secret, but environ content all the same


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "auditor", *args], capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, "COLUMNS": "1000", **(env or {})})


def _spec(tmp: Path, commits_file: str) -> Path:
    case = simple_case(tmp / "case")
    doc = {k: dict(v) for k, v in case["spec"].items()}
    doc["patches"] = {"ref": "series", "commits_file": commits_file}
    return write_spec(tmp / "audit.toml", doc)


def _assert_clean(text: str, *extra: str) -> None:
    for piece in LEAKS + list(extra):
        assert piece not in text, piece
    assert "Traceback" not in text


def test_a_commits_file_of_secrets(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets.txt"
    secrets.write_text("\n".join(SECRETS) + "\n")
    res = cli("verify", str(_spec(tmp_path, str(secrets))))
    err = " ".join(res.stderr.split())
    assert res.returncode == 2
    assert "secrets.txt" in err and "commits_file" in err and "line 1" in err
    _assert_clean(res.stderr + res.stdout)
    assert err.count("line ") <= 4  # the first bad lines, then a count


def test_an_environment_dump_as_commits_file(tmp_path: Path) -> None:
    dump = tmp_path / "environ"
    dump.write_bytes(b"\0".join(f"VAR{i}={s}".encode() for i, s in enumerate(SECRETS))
                     + f"\0PLAIN={PLAIN}\0".encode())
    res = cli("verify", str(_spec(tmp_path, str(dump))))
    assert res.returncode == 2 and "NUL" in res.stderr and "environ" in res.stderr
    _assert_clean(res.stderr + res.stdout, PLAIN)


def test_the_real_proc_self_environ(tmp_path: Path) -> None:
    res = cli("verify", str(_spec(tmp_path, "/proc/self/environ")),
              env={"AUDITOR_TEST_TOKEN": PLANTED, "AUDITOR_TEST_PLAIN": PLAIN})
    assert res.returncode == 2 and "/proc/self/environ" in res.stderr
    _assert_clean(res.stderr + res.stdout, PLANTED, PLANTED[4:], PLAIN, "AUDITOR_TEST_PLAIN",
                  "HOME=", "PATH=")


@pytest.mark.parametrize("first", SECRETS)
def test_a_lock_whose_first_line_is_a_secret(tmp_path: Path, first: str) -> None:
    lock = tmp_path / "private.lock"
    lock.write_text(first + "\nfastapi==0.110.0\n")
    with pytest.raises(SpecError) as exc:
        read_lock(lock)
    text = str(exc.value) + " ".join(exc.value.diagnostic_lines())
    assert "private.lock" in text and "line 1" in text
    _assert_clean(text)


def test_a_lock_that_is_an_environment_dump(tmp_path: Path) -> None:
    lock = tmp_path / "env.txt"
    lock.write_bytes(f"AUDITOR_TOKEN={PLANTED}\0PLAIN={PLAIN}\0".encode())
    with pytest.raises(SpecError) as exc:
        read_lock(lock)
    _assert_clean(" ".join(exc.value.diagnostic_lines()), PLANTED[4:], PLAIN)


def test_a_pylock_with_secrets_in_its_values(tmp_path: Path) -> None:
    lock = tmp_path / "pylock.toml"
    lock.write_text(f'lock-version = "{TOKEN}"\n')
    with pytest.raises(SpecError) as exc:
        read_lock(lock)
    _assert_clean(" ".join(exc.value.diagnostic_lines()))
    lock.write_text('lock-version = "1.0"\n[[packages]]\nname = "x"\nversion = "1"\n'
                    f'marker = "python_version >= {SECRETS[1]}"\n')
    with pytest.raises(SpecError) as exc:
        read_lock(lock)
    _assert_clean(" ".join(exc.value.diagnostic_lines()))


def test_a_spec_value_is_excerpted_too(tmp_path: Path) -> None:
    case = simple_case(tmp_path / "case")
    doc = {k: dict(v) for k, v in case["spec"].items()}
    doc["patches"] = {"ref": "series", "commits": ["0" * 40, SECRETS[1] + " " + PLAIN]}
    res = cli("verify", str(write_spec(tmp_path / "audit.toml", doc)))
    assert res.returncode == 2 and "commits[1]" in res.stderr
    _assert_clean(res.stderr, PLAIN)


def test_excerpt_is_short_redacted_and_one_line() -> None:
    assert excerpt("abc") == "'abc'"
    shown = excerpt("AUDITOR_TOKEN=" + PLANTED + "\0NEXT=1")
    assert PLANTED[4:] not in shown and "NEXT" not in shown and "characters" in shown
    long = excerpt("a" * 1000)
    assert len(long) < EXCERPT_MAX + 30 and "(1000 characters)" in long
    assert "\x1b" not in excerpt("\x1b[31mred")
