"""A bundle whose compression is whole but whose tar stops inside a member (what a `git archive`
that died half way writes) is bad input, exit 2 naming it: never a crashed stage."""

from __future__ import annotations

import gzip
import io
import subprocess
import sys
import tarfile

import pytest
from support import simple_case, write_spec


@pytest.mark.parametrize("compress", [gzip.compress, lambda b: b])
def test_a_tar_cut_inside_a_member_is_exit_2(tmp_path, compress):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        data = b"x = 1\n" * 1000
        info = tarfile.TarInfo("b/engine/big.py")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    bundle = tmp_path / "cut.tar.gz"
    bundle.write_bytes(compress(buf.getvalue()[:512 + 2048]))
    # the real tar agrees that it is cut short
    res = subprocess.run(["tar", "-tzf" if compress is gzip.compress else "-tf", str(bundle)],
                         capture_output=True, text=True)
    assert res.returncode != 0
    case = simple_case(tmp_path)
    spec = {**case["spec"], "bundle": {"path": str(bundle), "strip_components": 1}}
    res = subprocess.run([sys.executable, "-m", "auditor", "verify",
                          str(write_spec(tmp_path / "audit.toml", spec))],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 2, res.stderr
    assert "cut.tar.gz" in res.stderr and "crashed" not in res.stderr
