"""Rendering the hardened unit: what it contains, what it refuses, and that spec values stay inert."""

import os
import subprocess
import sys

import pytest
from unitcase import argv_of, needs_analyze, service, systemd_view

from auditor.errors import SpecError
from auditor.service.analyze import checkable_copy
from auditor.service.lint import lint_unit
from auditor.service.render import KeyMode, render_unit
from auditor.service.unitfile import commands, parse_unit, split_words, systemd_dollars
from auditor.spec import load_profile

VLLM = load_profile("vllm")
LLAMA = load_profile("llama.cpp")
GENERIC = load_profile("generic")


def _parsed(rendered):
    return parse_unit(rendered.text, rendered.unit_name)


def _env(unit):
    out = {}
    for d in unit.effective_list("Service", "Environment"):
        for w in split_words(d.value):
            k, _, v = w.text.partition("=")
            out[k] = v
    return out


def _value(unit, key):
    d = unit.last("Service", key)
    return d.value if d is not None else None


def test_vllm_unit_with_environment_file():
    r = render_unit(service(), VLLM)
    unit = _parsed(r)
    assert r.unit_name == "vllm.service" and r.key_mode is KeyMode.ENVIRONMENT_FILE
    assert _value(unit, "User") == "vllm"
    assert _value(unit, "EnvironmentFile") == "/etc/vllm/vllm.env"
    assert _value(unit, "UMask") == "0077"
    for kind in ("State", "Cache", "Runtime"):
        assert _value(unit, f"{kind}Directory") == "vllm"
        assert _value(unit, f"{kind}DirectoryMode") == "0700"
    env = _env(unit)
    for k in ("VLLM_NO_USAGE_STATS", "VLLM_DO_NOT_TRACK", "DO_NOT_TRACK",
              "HF_HUB_DISABLE_TELEMETRY", "HF_HUB_OFFLINE"):
        assert env[k] == "1"
    # compile caches on persistent storage (the CacheDirectory), not in a private /tmp
    assert env["VLLM_CACHE_ROOT"].startswith("%C/vllm")
    assert env["TORCHINDUCTOR_CACHE_DIR"].startswith("%C/vllm")
    assert env["TRITON_CACHE_DIR"].startswith("%C/vllm")
    assert "VLLM_API_KEY" not in env
    (start,) = [c for c in commands(unit) if c.directive.key == "ExecStart"]
    assert start.argv == ("/opt/vllm/bin/vllm", "serve", "/srv/models/qwen", "--host",
                          "127.0.0.1", "--port", "8000")
    assert _value(unit, "Restart") == "on-failure"
    assert _value(unit, "RestartSec") and unit.last("Unit", "StartLimitBurst") is not None
    assert _value(unit, "TimeoutStartSec") == "20min"
    assert _value(unit, "TemporaryFileSystem").startswith("/dev/shm:")
    assert _value(unit, "DevicePolicy") == "closed"
    assert any("nvidia" in d.value for d in unit.all("Service", "DeviceAllow"))
    assert _value(unit, "IPAddressDeny") == "any"
    assert _value(unit, "IPAddressAllow") == "localhost"
    assert _value(unit, "CapabilityBoundingSet") == ""
    for key in ("NoNewPrivileges", "PrivateTmp", "ProtectKernelTunables", "ProtectKernelModules",
                "ProtectKernelLogs", "ProtectControlGroups", "RestrictNamespaces",
                "RestrictSUIDSGID", "LockPersonality"):
        assert _value(unit, key) == "yes", key
    assert _value(unit, "ProtectSystem") == "strict"
    assert "VLLM_API_KEY=" in r.env_example_text
    assert lint_unit(unit, VLLM) == []


def test_vllm_credential_wrapper_keeps_the_key_off_argv():
    r = render_unit(service(api_key_file=None, api_key_credential="/etc/credstore/vllm.key"),
                    VLLM)
    unit = _parsed(r)
    assert _value(unit, "LoadCredential") == "api_key:/etc/credstore/vllm.key"
    (start,) = [c for c in commands(unit) if c.directive.key == "ExecStart"]
    assert start.argv[:2] == ("/bin/sh", "-c")
    # systemd would expand a single $: every $ of the script is doubled
    assert "$VLLM_API_KEY" not in start.directive.value.replace("$$", "")
    assert start.argv[4:] == ("/opt/vllm/bin/vllm", "serve", "/srv/models/qwen", "--host",
                              "127.0.0.1", "--port", "8000")
    assert lint_unit(unit, VLLM) == []


def test_the_credential_wrapper_really_hands_over_the_key(tmp_path):
    """Run the wrapper's argv (as systemd would, $$ -> $) with a fake server that reports."""
    r = render_unit(service(api_key_file=None, api_key_credential="/etc/credstore/vllm.key",
                            exec_path="/opt/vllm/bin/vllm"), VLLM)
    (start,) = [c for c in commands(_parsed(r)) if c.directive.key == "ExecStart"]
    argv = [systemd_dollars(a) for a in start.argv]
    report = tmp_path / "report"
    server = tmp_path / "server.py"
    server.write_text("import os, sys, json\n"
                      f"open({str(report)!r}, 'w').write(json.dumps("
                      "{'argv': sys.argv, 'key': os.environ.get('VLLM_API_KEY')}))\n")
    argv[argv.index("/opt/vllm/bin/vllm")] = str(server)
    argv.insert(argv.index(str(server)), sys.executable)
    creds = tmp_path / "creds"
    creds.mkdir()
    (creds / "api_key").write_text("s3cret-key-value\n")
    env = {"PATH": os.environ["PATH"], "CREDENTIALS_DIRECTORY": str(creds)}
    subprocess.run(argv, env=env, check=True, timeout=30)
    import json

    got = json.loads(report.read_text())
    assert got["key"] == "s3cret-key-value"
    assert not any("s3cret" in a for a in got["argv"])
    # an empty credential stops the start instead of serving without a key
    (creds / "api_key").write_text("")
    report.unlink()
    assert subprocess.run(argv, env=env, timeout=30).returncode != 0
    assert not report.exists()


def test_llama_cpp_uses_its_key_file_flag_and_its_variable():
    cred = render_unit(service(name="llama", api_key_file=None, model="/srv/m.gguf",
                               api_key_credential="/etc/credstore/llama.key",
                               exec_path="/opt/llama/bin/llama-server"), LLAMA)
    unit = _parsed(cred)
    (start,) = [c for c in commands(unit) if c.directive.key == "ExecStart"]
    assert start.argv[0] == "/opt/llama/bin/llama-server"
    assert start.argv[-2:] == ("--api-key-file", "%d/api_key")  # a path on argv, not the key
    assert "--model" in start.argv
    assert lint_unit(unit, LLAMA) == []
    envfile = render_unit(service(name="llama", model="/srv/m.gguf",
                                  api_key_file="/etc/llama/llama.env"), LLAMA)
    assert "LLAMA_API_KEY=" in envfile.env_example_text
    assert "LLAMA_CACHE" in _env(_parsed(envfile))
    assert lint_unit(_parsed(envfile), LLAMA) == []


def test_loopback_only_without_key_renders_and_says_so():
    r = render_unit(service(api_key_file=None, loopback_only=True), VLLM)
    assert r.key_mode is KeyMode.NONE
    findings = lint_unit(_parsed(r), VLLM)
    assert [f.rule for f in findings] == ["service.no-key-loopback"]
    assert findings[0].action.value == "info"


@pytest.mark.parametrize("changes, key, message", [
    ({"api_key_file": None}, "service.api_key_file", "without a key is refused"),
    ({"api_key_credential": "/etc/k"}, "service.api_key_credential", "not both"),
    ({"api_key_file": None, "loopback_only": True, "host": "0.0.0.0"}, "service.host",
     "loopback_only"),
    ({"host": "0.0.0.0"}, "service.client_networks", "drop every client"),
    ({"host": "10.0.0.5", "client_networks": ("0.0.0.0/0",)}, "service.client_networks[0]",
     "every address"),
    ({"host": "10.0.0.5", "client_networks": ("10.0.0.0/33",)}, "service.client_networks[0]",
     "CIDR"),
    ({"extra_args": ("--api-key", "x")}, "service.extra_args[0]", "never goes on the command"),
    ({"extra_args": ("--api-key=x",)}, "service.extra_args[0]", "never goes on the command"),
    ({"extra_args": ("${VLLM_API_KEY}",)}, "service.extra_args[0]", "never goes on the"),
    ({"host": "evil host"}, "service.host", "IP address or a host name"),
    ({"port": 70000}, "service.port", "1-65535"),
    ({"api_key_file": "relative/key.env"}, "service.api_key_file", "absolute"),
    ({"api_key_file": "/etc/key\nExecStartPre=/bin/evil"}, "service.api_key_file", "control"),
    ({"exec_path": "vllm"}, "service.exec", "absolute"),
    ({"devices": ("gpu0",)}, "service.devices[0]", "GPU index"),
    ({"name": "vllm\nUser=root"}, "service.name", "unit name"),
    ({"user": "vllm\nUser=root"}, "service.user", "control"),
])
def test_unsafe_specs_are_refused(changes, key, message):
    with pytest.raises(SpecError) as info:
        render_unit(service(**changes), VLLM, spec_file="audit.toml")
    assert f"[{key}]" in str(info.value) and message in str(info.value)


def test_a_profile_without_a_key_variable_cannot_take_a_key():
    with pytest.raises(SpecError, match="names no API key variable"):
        render_unit(service(), GENERIC)


def test_network_host_gets_client_networks_and_its_own_address():
    r = render_unit(service(host="10.1.2.3", client_networks=("192.168.7.0/24",)), VLLM)
    unit = _parsed(r)
    assert _value(unit, "IPAddressAllow") == "localhost 192.168.7.0/24 10.1.2.3/32"
    # reachable from the network, with a key: a finding only for nothing; no bind-all
    assert lint_unit(unit, VLLM) == []


def test_gpu_indices_and_intel_and_cpu_only():
    unit = _parsed(render_unit(service(devices=("0", "2")), VLLM))
    allowed = [d.value for d in unit.all("Service", "DeviceAllow")]
    assert "/dev/nvidia0 rw" in allowed and "/dev/nvidia2 rw" in allowed
    assert _env(unit)["CUDA_VISIBLE_DEVICES"] == "0,2"
    intel = _parsed(render_unit(service(gpu="intel"), VLLM))
    assert [d.value for d in intel.all("Service", "DeviceAllow")] == ["char-drm rw"]
    cpu = _parsed(render_unit(service(gpu="none"), VLLM))
    assert cpu.all("Service", "DeviceAllow") == [] and _value(cpu, "PrivateDevices") == "yes"


def test_a_model_under_home_is_bound_read_only():
    unit = _parsed(render_unit(service(model="/home/ml/models/qwen"), VLLM))
    assert _value(unit, "ProtectHome") == "tmpfs"
    assert _value(unit, "BindReadOnlyPaths") == "/home/ml/models/qwen"


def test_a_hub_model_id_is_not_forced_offline():
    unit = _parsed(render_unit(service(model="Qwen/Qwen3-8B"), VLLM))
    assert "HF_HUB_OFFLINE" not in _env(unit)
    assert "HF_HOME" in _env(unit)


INJECTION = '/srv/m\nExecStartPre=/bin/evil %h $HOME "q" \\ \x85\u2028;'


def test_injection_in_a_spec_value_stays_one_argument():
    r = render_unit(service(model=INJECTION, extra_args=(";", "--served-model-name", "%n")),
                    VLLM)
    unit = _parsed(r)
    assert [d.key for d in unit.directives].count("ExecStartPre") == 0
    assert len(r.text.splitlines()) == len(r.text.split("\n")) - 1  # no stray line breaks
    (start,) = [c for c in commands(unit) if c.directive.key == "ExecStart"]
    assert [systemd_dollars(a) for a in start.argv[2:3]] == [INJECTION]
    assert start.argv[-3:] == (";", "--served-model-name", "%n")


@needs_analyze
def test_systemd_reads_the_injection_attempt_as_one_argument(tmp_path):
    r = render_unit(service(model=INJECTION, extra_args=(";", "%n"), api_key_file=None,
                            api_key_credential="/etc/credstore/vllm.key"), VLLM)
    unit = parse_unit(r.text, r.unit_name)
    view = systemd_view(checkable_copy(unit, tmp_path))
    assert "ExecStartPre" not in view
    (line,) = view["ExecStart"]
    argv = argv_of(line)
    assert [systemd_dollars(a) for a in argv[-8:]] == [
        "serve", INJECTION, "--host", "127.0.0.1", "--port", "8000", ";", "%n"]
    assert view["User"] == ["vllm"]
