"""``--out`` never deletes foreign data, unusable outputs are exit 2 before work starts, and no
temporary folder survives an error or SIGTERM.

Through the real command (subprocess), on real folders: the spec's folder, foreign folders, a path
under a file, /proc, read-only and full tmpfs mounts (skipped, with the reason, where mounting is not
allowed), and a SIGTERM sent to a running audit.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import simple_case, write_spec

from auditor.outputs import MARKER_NAME


def cli(*args: str, cwd: Path | None = None, timeout: float = 120,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "auditor", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd,
                          env={**os.environ, "COLUMNS": "1000", **(env or {})})


def listing(folder: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None)
            for p in sorted(folder.rglob("*")) if ".git" not in p.parts}


def refused(res: subprocess.CompletedProcess[str], *words: str) -> str:
    err = " ".join(res.stderr.split())
    assert res.returncode == 2, err
    assert "Traceback" not in res.stderr
    for w in words:
        assert w in err, err
    return err


@pytest.fixture
def case(tmp_path: Path) -> dict[str, object]:
    c = simple_case(tmp_path)
    c["spec_path"] = write_spec(tmp_path / "audit.toml", c["spec"])
    return c


def test_out_dot_in_the_spec_folder_deletes_nothing(tmp_path, case):
    before = listing(tmp_path)
    res = cli("audit", "audit.toml", "--out", ".", cwd=tmp_path)
    refused(res, "nothing was changed")
    assert listing(tmp_path) == before


def test_foreign_folders_files_and_root_are_refused(tmp_path, case):
    spec = str(case["spec_path"])
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("years of work")
    refused(cli("audit", spec, "--out", str(foreign)), "not written by auditor", MARKER_NAME)
    assert (foreign / "thesis.tex").read_text() == "years of work"
    a_file = tmp_path / "notes.txt"
    a_file.write_text("keep")
    refused(cli("audit", spec, "--out", str(a_file)), "not a folder")
    assert a_file.read_text() == "keep"
    refused(cli("audit", spec, "--out", "/"), "root folder")
    # a folder with a forged or foreign marker is still foreign
    (foreign / MARKER_NAME).write_text(json.dumps({"tool": "other", "schema": "x"}))
    refused(cli("audit", spec, "--out", str(foreign)), "not written by auditor")


def test_folders_holding_or_inside_an_input_are_refused(tmp_path, case):
    spec = str(case["spec_path"])
    bundle = Path(str(case["bundle"]))
    refused(cli("audit", spec, "--out", str(bundle / "audit")), "lies inside the input")
    assert not (bundle / "audit").exists()
    # an earlier audit folder (it has the marker) that someone moved an input into
    data = tmp_path / "data"
    data.mkdir()
    (data / MARKER_NAME).write_text(json.dumps({"tool": "auditor",
                                                "schema": "auditor/audit/v1"}))
    (data / "policy.toml").write_text("[actions]\n")
    spec2 = write_spec(tmp_path / "b.toml", dict(case["spec"], scan={
        "policy": str(data / "policy.toml")}))
    refused(cli("audit", str(spec2), "--out", str(data)), "holds the input")
    assert (data / "policy.toml").is_file()


def test_an_earlier_audit_folder_is_replaced_and_marked(tmp_path, case):
    out = tmp_path / "audit-out"
    first = cli("audit", str(case["spec_path"]), "--out", str(out))
    assert first.returncode == 0, first.stderr
    marker = json.loads((out / MARKER_NAME).read_text())
    assert marker == {"tool": "auditor", "schema": "auditor/audit/v1"}
    (out / "stale.txt").write_text("from the first run")
    again = cli("audit", str(case["spec_path"]), "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert not (out / "stale.txt").exists() and (out / "audit.json").is_file()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".audit-out")] == []


def test_gate_out_must_not_hold_its_baseline(tmp_path, case):
    out = tmp_path / "gate-out"
    assert cli("audit", str(case["spec_path"]), "--out", str(out)).returncode == 0
    res = cli("gate", str(case["spec_path"]), "--baseline", str(out / "audit.json"), "--out",
              str(out))
    refused(res, "holds the input", "audit.json")
    assert (out / "audit.json").is_file()


def test_demo_out_refuses_a_foreign_folder(tmp_path):
    foreign = tmp_path / "case"
    foreign.mkdir()
    (foreign / "audit.toml").write_text("# a real case, not a demo\n")
    refused(cli("demo", "--out", str(foreign)), "not written by auditor")
    assert (foreign / "audit.toml").read_text() == "# a real case, not a demo\n"


def test_unwritable_out_is_exit_2_before_work(tmp_path, case):
    spec = str(case["spec_path"])
    a_file = tmp_path / "file"
    a_file.write_text("x")
    refused(cli("audit", spec, "--out", str(a_file / "out")), "cannot be created")
    refused(cli("audit", spec, "--out", "/proc/auditor-out"), "--out")
    # report -o and unit render -o: checked before rendering, written without a traceback
    audit_json = tmp_path / "a" / "audit.json"
    assert cli("audit", spec, "--out", str(audit_json.parent)).returncode == 0
    refused(cli("report", str(audit_json), "-o", str(a_file / "r.md")), "does not exist")
    refused(cli("report", str(audit_json), "-o", str(tmp_path)), "is a directory")
    refused(cli("report", str(audit_json), "-o", "/proc/auditor-report.md"), "cannot be written")
    refused(cli("sbom", spec, "-o", str(a_file / "s.json")), "does not exist")


@pytest.fixture
def mount(tmp_path: Path) -> Iterator[object]:
    mounted: list[Path] = []

    def make(options: str) -> Path:
        where = tmp_path / f"mnt{len(mounted)}"
        where.mkdir()
        res = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
                             capture_output=True, text=True)
        if res.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here ({res.stderr.strip()}): needs root and "
                        f"CAP_SYS_ADMIN; chmod does not stop root, so there is no honest stand-in")
        mounted.append(where)
        return where

    yield make
    for where in mounted:
        subprocess.run(["umount", str(where)], check=False)


def test_read_only_and_full_out(tmp_path, case, mount):
    spec = str(case["spec_path"])
    ro = mount("ro,size=1m")
    refused(cli("audit", spec, "--out", str(ro / "out")), "Read-only file system")
    full = mount("size=12k")  # room for the folder and the marker, not for the reports
    res = cli("audit", spec, "--out", str(full / "out"))
    refused(res, "cannot be written", "No space left on device")
    assert list(full.iterdir()) == []  # the half-written audit was removed


def _wait_for(predicate, timeout: float = 90) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_sigterm_mid_audit_removes_every_temporary_folder(tmp_path, case):
    """A cancelled CI job: SIGTERM while the bundle is unpacked and the audit folder half made."""
    private = tmp_path / "tmp"
    private.mkdir()
    # a bundle big enough that unpacking and hashing take a moment
    bundle = Path(str(case["bundle"]))
    for i in range(3000):
        (bundle / f"data/f{i}.txt").parent.mkdir(exist_ok=True)
        (bundle / f"data/f{i}.txt").write_text(f"{i}\n" * 50)
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "auditor", "audit", str(case["spec_path"]),
                             "--out", str(out)], env={**os.environ, "TMPDIR": str(private)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        started = _wait_for(lambda: any(private.glob("auditor-*/bundle-*/data")))
        assert started, "the audit never unpacked the bundle"
        assert any(tmp_path.glob(".out.*"))  # the half-made audit folder exists now
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err and "terminated" in err
    assert list(private.iterdir()) == []
    assert not out.exists() and list(tmp_path.glob(".out.*")) == []


def test_single_stage_errors_leave_no_temporary_folder(tmp_path, case):
    private = tmp_path / "tmp"
    private.mkdir()
    poly = tmp_path / "poly.tar"
    poly.write_bytes(b"\0" * 100 + b"not an archive")
    spec = write_spec(tmp_path / "bad.toml", dict(case["spec"], bundle={"path": str(poly)}))
    for command in ("verify", "scan", "deps", "sbom"):
        res = cli(command, str(spec), env={"TMPDIR": str(private)})
        refused(res, str(poly))
        assert list(private.iterdir()) == [], command
