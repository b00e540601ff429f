"""``--host`` read as the resolver reads it: every spelling of "all interfaces" is all of them."""

from __future__ import annotations

import ipaddress
import socket

import pytest
from support import simple_case, write_spec
from typer.testing import CliRunner
from unitcase import HAS_ANALYZE

from auditor.cli import app
from auditor.service.address import bind_address, inet_aton
from auditor.service.unitfile import commands, parse_unit

EVERYWHERE = ["0", "0.0", "0x0", "0.0.0.0", "00", "0x0.0", "0x00000000", "000.0.0", "::", "::0", "[::]",
              "0:0:0:0:0:0:0:0", "::ffff:0.0.0.0", "[::ffff:0.0.0.0]", "", "*"]
LOOPBACK = ["127.1", "0x7f.1", "0177.0.0.1", "2130706433", "127.0.0.1", "::1", "[::1]",
            "::ffff:127.0.0.1", "localhost", "LOCALHOST."]
OTHER = ["10.0.0.5", "10.5", "fe80::1%eth0", "gpu-node-1.example", "0.0.0.1", "1"]


@pytest.mark.parametrize("host", EVERYWHERE)
def test_every_spelling_of_all_interfaces(host: str) -> None:
    b = bind_address(host)
    assert b.everywhere and not b.loopback and b.canonical in ("0.0.0.0", "::")


@pytest.mark.parametrize("host", LOOPBACK)
def test_loopback_spellings(host: str) -> None:
    assert bind_address(host).loopback and not bind_address(host).everywhere


@pytest.mark.parametrize("host", OTHER)
def test_other_hosts(host: str) -> None:
    b = bind_address(host)
    assert not b.everywhere and not b.loopback


@pytest.mark.parametrize("text", ["0", "0.0", "0x0", "127.1", "0x7f.1", "0177.0.0.1", "10.5",
                                  "2130706433", "1.2.3", "0xffffffff", "255.255.255.255",
                                  "1.2.3.4.5", "256.1.1.1", "08", "0x", "1..2", "", "a.b",
                                  "1.2.3.0x100", "4294967296"])
def test_inet_aton_agrees_with_the_c_library(text: str) -> None:
    try:
        expected = ipaddress.IPv4Address(socket.inet_aton(text)) if text.strip() == text else None
    except OSError:
        expected = None
    assert inet_aton(text) == expected


@pytest.mark.parametrize(("host", "written"), [("0", "0.0.0.0"), ("0x0", "0.0.0.0"),
                                               ("[::]", "::"), ("::ffff:0.0.0.0", "0.0.0.0"),
                                               ("", "0.0.0.0")])
def test_render_reads_and_writes_all_interfaces(tmp_path, host: str, written: str) -> None:
    case = simple_case(tmp_path)
    spec = {k: dict(v) for k, v in case["spec"].items()}
    spec["engine"]["profile"] = "vllm"
    spec["service"] = {"name": "vllm", "user": "vllm", "model": "/srv/models/qwen", "host": host,
                       "api_key_file": "/etc/vllm/vllm.env"}
    path = write_spec(tmp_path / "audit.toml", spec)
    out = tmp_path / "u.service"
    res = CliRunner().invoke(app, ["unit", "render", str(path), "-o", str(out)])
    # every interface needs the client networks named (IPAddressDeny=any would drop the clients)
    assert res.exit_code == 2 and "[service.client_networks]" in " ".join(res.stderr.split())
    spec["service"]["client_networks"] = ["10.0.0.0/24"]
    path = write_spec(tmp_path / "audit.toml", spec)
    res = CliRunner().invoke(app, ["unit", "render", str(path), "-o", str(out), "--json"])
    assert res.exit_code in ((0, 1) if HAS_ANALYZE else (1, 3)), res.stderr
    (start,) = [c for c in commands(parse_unit(out.read_text(), "u.service"))
                if c.directive.key == "ExecStart"]
    argv = list(start.argv)
    assert argv[argv.index("--host") + 1] == written
    assert '"service.bind-all"' in res.stdout
