"""``-o FILE``, ``--sarif FILE`` and ``--summary FILE`` write only regular files (issue 30 item 14).

A FIFO, a character device, a socket, a symbolic link (to a regular file, to /proc/self/fd/1, or
dangling) and a directory are refused with exit 2 before any work, nothing written: neither the
special file replaced nor a sidecar (an SBOM's provenance, a unit's env example) beside it. The
device case uses a node made in the test's own folder, never the system's /dev/null.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from support import simple_case, write_spec
from typer.testing import CliRunner

from auditor.cli import app
from auditor.errors import InputError
from auditor.outputs import append_output_text, check_output_file, write_output_file
from auditor.redaction import redacted_text

sys.path.insert(0, str(Path(__file__).parents[1] / "report"))
from reportcases import rich_audit  # noqa: E402

runner = CliRunner()


def _fifo(p: Path) -> None:
    os.mkfifo(p)


def _symlink_to_file(p: Path) -> None:
    target = p.with_name("victim.txt")
    target.write_text("keep me\n")
    p.symlink_to(target)


def _symlink_to_stdout(p: Path) -> None:
    p.symlink_to("/proc/self/fd/1")


def _dangling(p: Path) -> None:
    p.symlink_to(p.with_name("nowhere-yet"))


def _directory(p: Path) -> None:
    p.mkdir()


def _socket(p: Path) -> None:
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(p))
    s.close()


def _char_device(p: Path) -> None:
    try:
        os.mknod(p, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a null device of our own
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot make a device node here: {exc}")


SPECIAL: dict[str, Callable[[Path], None]] = {
    "fifo": _fifo, "symlink-to-file": _symlink_to_file, "symlink-to-stdout": _symlink_to_stdout,
    "dangling-symlink": _dangling, "directory": _directory, "socket": _socket,
    "char-device": _char_device,
}


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (os.lstat(p).st_mode, os.lstat(p).st_ino) for p in folder.iterdir()}


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("special-out")
    case = simple_case(tmp / "case")
    doc = {k: dict(v) for k, v in case["spec"].items()}
    doc["engine"]["profile"] = "vllm"
    doc["service"] = {"name": "vllm", "user": "vllm", "model": "/srv/models/qwen",
                      "api_key_file": "/etc/vllm/vllm.env"}
    return write_spec(tmp / "audit.toml", doc)


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("saved") / "audit.json"
    path.write_text(json.dumps(rich_audit().to_json()))
    return path


def _commands(spec: Path, saved: Path, target: Path) -> dict[str, list[str]]:
    return {
        "report -o": ["report", str(saved), "-o", str(target)],
        "report --summary": ["report", str(saved), "--summary", str(target)],
        "scan --sarif": ["scan", str(spec), "--sarif", str(target)],
        "sbom -o": ["sbom", str(spec), "-o", str(target)],
        "unit render -o": ["unit", "render", str(spec), "-o", str(target)],
        "series -o": ["series", str(spec), "--range", "v1.0.0..series", "-o", str(target)],
    }


COMMANDS = ["report -o", "report --summary", "scan --sarif", "sbom -o", "unit render -o",
            "series -o"]


@pytest.mark.parametrize("kind", sorted(SPECIAL))
@pytest.mark.parametrize("command", COMMANDS)
def test_a_special_output_is_refused_and_left_alone(kind, command, spec, saved, tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    target = folder / "target.out"
    SPECIAL[kind](target)
    before = _snapshot(folder)
    res = runner.invoke(app, _commands(spec, saved, target)[command])
    err = " ".join(res.stderr.split())
    assert res.exit_code == 2, (res.exit_code, err)
    assert "not a regular file" in err or "is a directory" in err, err
    assert "Traceback" not in err
    assert _snapshot(folder) == before  # the node itself kept, no sidecar beside it
    if kind == "symlink-to-file":
        assert (folder / "victim.txt").read_text() == "keep me\n"
    assert res.stdout == ""  # no work, nothing printed


@pytest.mark.parametrize(("command", "sidecar"), [("unit render -o", "target.env.example"),
                                                  ("sbom -o", "target.intoto.json")])
@pytest.mark.parametrize("kind", ["fifo", "symlink-to-stdout", "directory"])
def test_a_special_sidecar_is_refused_and_nothing_is_written(command, sidecar, kind, spec, saved,
                                                             tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    SPECIAL[kind](folder / sidecar)
    before = _snapshot(folder)
    res = runner.invoke(app, _commands(spec, saved, folder / "target.json")[command]
                        if command == "sbom -o" else
                        _commands(spec, saved, folder / "target.service")[command])
    assert res.exit_code == 2, res.stderr
    assert sidecar in res.stderr.replace("\n", "")
    assert _snapshot(folder) == before


def test_regular_files_and_stdout_are_still_written(saved, tmp_path):
    old = tmp_path / "old.md"
    old.write_text("old\n")
    old.chmod(0o640)
    assert runner.invoke(app, ["report", str(saved), "-o", str(old)]).exit_code == 0
    assert not old.read_text().startswith("old") and stat.S_IMODE(old.stat().st_mode) == 0o640
    new = tmp_path / "new.md"
    assert runner.invoke(app, ["report", str(saved), "-o", str(new)]).exit_code == 0
    assert new.is_file() and not new.is_symlink()
    res = runner.invoke(app, ["report", str(saved), "-o", "-"])
    assert res.exit_code == 0 and res.stdout
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n")
    assert runner.invoke(app, ["report", str(saved), "--summary", str(summary)]).exit_code == 0
    assert summary.read_text().startswith("# earlier step\n") and len(summary.read_text()) > 20


@pytest.mark.parametrize("kind", sorted(SPECIAL))
def test_the_writers_refuse_a_special_file_that_appears_after_the_check(kind, tmp_path):
    target = tmp_path / "late.txt"
    check_output_file(target)  # new: fine
    SPECIAL[kind](target)
    before = _snapshot(tmp_path)
    with pytest.raises(InputError):
        write_output_file(target, redacted_text("text"))
    with pytest.raises(InputError):
        append_output_text(target, redacted_text("text"), "--summary")
    assert _snapshot(tmp_path) == before
