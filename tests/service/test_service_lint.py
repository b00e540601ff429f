"""The unit linter: one bad unit per rule (each finding on its line), and a good unit with none."""

from dataclasses import replace

import pytest

from auditor.errors import InputError
from auditor.model import Action, Category
from auditor.service.lint import RULES, lint_unit
from auditor.service.unitfile import parse_unit
from auditor.spec import load_profile

VLLM = load_profile("vllm")
LLAMA = load_profile("llama.cpp")

GOOD = """\
[Unit]
Description=vLLM, written by hand
StartLimitIntervalSec=1h
StartLimitBurst=3

[Service]
User=vllm
ExecStart=/opt/vllm/bin/vllm serve /srv/models/qwen \\
    --host 127.0.0.1 --port 8000
EnvironmentFile=/etc/vllm/vllm.env
Environment=VLLM_NO_USAGE_STATS=1 VLLM_DO_NOT_TRACK=1 DO_NOT_TRACK=1
Environment=HF_HUB_DISABLE_TELEMETRY=1 HF_HUB_OFFLINE=1
StateDirectory=vllm
StateDirectoryMode=0700
CacheDirectory=vllm
CacheDirectoryMode=0700
UMask=0077
Restart=on-failure
RestartSec=30s
NoNewPrivileges=yes
ProtectSystem=strict
ProtectHome=yes
PrivateTmp=yes
TemporaryFileSystem=/dev/shm:rw,nosuid,nodev,noexec,mode=1777
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
RestrictNamespaces=yes
RestrictSUIDSGID=yes
LockPersonality=yes
CapabilityBoundingSet=
SystemCallFilter=@system-service
SystemCallArchitectures=native
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6
DevicePolicy=closed
DeviceAllow=char-nvidia-frontend rw
IPAddressDeny=any
IPAddressAllow=localhost

[Install]
WantedBy=multi-user.target
"""


def _lint(text, profile=VLLM):
    return lint_unit(parse_unit(text, "x.service"), profile)


def _edit(old, new):
    assert old in GOOD, old
    return GOOD.replace(old, new, 1)


def _line_of(text, needle):
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_the_good_unit_has_no_finding():
    assert _lint(GOOD) == []


SERVICE_LINE = 6
HOST = "--host 127.0.0.1 --port 8000"

# (rule, bad unit, the line the finding must point at, its action)
BAD = [
    ("service.key-on-command-line",
     _edit("--port 8000", "--port 8000 --api-key sk-abcdefghijklmnopqrstu"), 8, Action.BLOCK),
    ("service.key-on-command-line",
     _edit("--port 8000", "--port 8000 --api-key ${VLLM_API_KEY}"), 8, Action.BLOCK),
    ("service.key-on-command-line",
     _edit("--port 8000", "--port 8000 $VLLM_API_KEY"), 8, Action.BLOCK),
    ("service.key-on-command-line",
     _edit("ExecStart=/opt/vllm/bin/vllm serve /srv/models/qwen \\",
           "ExecStart=/bin/sh -c 'exec /opt/vllm/bin/vllm serve --api-key \"$$K\" \"$$@\"' x"
           " /srv/models/qwen \\"), 8, Action.BLOCK),
    ("service.key-in-unit",
     _edit("Environment=HF_HUB_DISABLE_TELEMETRY=1 HF_HUB_OFFLINE=1",
           "Environment=HF_HUB_DISABLE_TELEMETRY=1 HF_HUB_OFFLINE=1 VLLM_API_KEY=hunter2hunter"),
     12, Action.BLOCK),
    ("service.key-in-unit", _edit("User=vllm", "User=vllm\nSetCredential=k:hunter2"), 8,
     Action.BLOCK),
    ("service.key-in-unit", _edit("Environment=HF_HUB_DISABLE_TELEMETRY=1 HF_HUB_OFFLINE=1",
                                  "Environment=HF_HUB_DISABLE_TELEMETRY=1 HF_HUB_OFFLINE=1 "
                                  "MY_TOKEN=hunter2"), 12, Action.BLOCK),
    ("service.key-on-command-line", _edit("--port 8000", "--port 8000 --hf-token=hunter2"), 8,
     Action.BLOCK),
    ("service.exposed-without-key",
     _edit("EnvironmentFile=/etc/vllm/vllm.env\n", "").replace(
         HOST, "--host 10.0.0.5 --port 8000"), 8, Action.BLOCK),
    ("service.bind-all", _edit(HOST, "--host 0.0.0.0 --port 8000"), 8, Action.REVIEW),
    ("service.bind-all", _edit(HOST, "--port 8000"), SERVICE_LINE, Action.REVIEW),
    ("service.bind-all", _edit("ExecStart=/opt/vllm/bin/vllm serve /srv/models/qwen \\\n    " + HOST,
                               "ExecStart=/bin/sh -c 'exec vllm serve /srv/models/qwen --host "
                               "0.0.0.0'"), 8, Action.REVIEW),
    ("service.root-user", _edit("User=vllm", "User=root"), 7, Action.REVIEW),
    ("service.root-user", _edit("User=vllm\n", ""), SERVICE_LINE, Action.REVIEW),
    ("service.umask", _edit("UMask=0077", "UMask=0022"), 17, Action.REVIEW),
    ("service.umask", _edit("UMask=0077\n", ""), SERVICE_LINE, Action.REVIEW),
    ("service.telemetry", _edit(" VLLM_DO_NOT_TRACK=1", ""), 12, Action.REVIEW),
    ("service.request-logging", _edit("--port 8000", "--port 8000 --enable-log-requests"), 8,
     Action.REVIEW),
    ("service.restart", _edit("Restart=on-failure", "Restart=no"), 18, Action.REVIEW),
    ("service.restart", _edit("Restart=on-failure\n", ""), SERVICE_LINE, Action.REVIEW),
    ("service.directory-mode", _edit("StateDirectoryMode=0700", "StateDirectoryMode=0755"), 14,
     Action.REVIEW),
    ("service.directory-mode", _edit("CacheDirectoryMode=0700\n", ""), 15, Action.REVIEW),
    ("service.dev-shm", _edit("TemporaryFileSystem=/dev/shm:rw,nosuid,nodev,noexec,mode=1777\n",
                              ""), SERVICE_LINE, Action.REVIEW),
    ("service.hardening", _edit("ProtectSystem=strict", "ProtectSystem=full"), 21,
     Action.REVIEW),
    ("service.hardening", _edit("NoNewPrivileges=yes\n", ""), SERVICE_LINE, Action.REVIEW),
    ("service.hardening", _edit("CapabilityBoundingSet=\n", "CapabilityBoundingSet=CAP_SYS_ADMIN\n"),
     32, Action.REVIEW),
    ("service.hardening", _edit("IPAddressDeny=any\n", ""), SERVICE_LINE, Action.REVIEW),
    ("service.hardening", _edit("SystemCallFilter=@system-service",
                                "SystemCallFilter=~@mount"), 33, Action.REVIEW),
    # launch flags and loaders that run someone else's code
    ("service.trust-remote-code", _edit("--port 8000", "--port 8000 --trust-remote-code"), 8,
     Action.REVIEW),
    ("service.code-from-writable",
     _edit("--port 8000", "--port 8000 --chat-template /var/lib/vllm/t.jinja"), 8, Action.BLOCK),
    ("service.code-from-writable",
     _edit("--port 8000", "--port 8000 --tool-parser-plugin=plugins/p.py"), 8, Action.BLOCK),
    ("service.code-from-writable",
     _edit("ExecStart=/opt/vllm/bin/vllm serve /srv/models/qwen \\\n    " + HOST,
           "ExecStart=/bin/sh -c 'exec vllm serve /srv/models/qwen --host 127.0.0.1 "
           "--chat-template /tmp/t.jinja'"), 8, Action.BLOCK),
    ("service.plugin",
     _edit("--port 8000", "--port 8000 --tool-parser-plugin /opt/site/parser.py"), 8,
     Action.REVIEW),
    ("service.preload", _edit("UMask=0077", "UMask=0077\nEnvironment=\"LD_PRELOAD=/opt/nccl/lib/"
                              "libnccl.so.2\""), 18, Action.BLOCK),
    ("service.preload", _edit("UMask=0077", "UMask=0077\nEnvironment=PYTHONPATH=/opt/vllm"), 18,
     Action.BLOCK),
    ("service.preload", _edit("ExecStart=/opt/vllm/bin/vllm", "ExecStart=/usr/bin/env "
                              "LD_LIBRARY_PATH=/srv/lib /opt/vllm/bin/vllm"), 8, Action.BLOCK),
    ("service.preload",
     _edit("ExecStart=/opt/vllm/bin/vllm serve /srv/models/qwen \\\n    " + HOST,
           "ExecStart=/bin/sh -c 'PYTHONPATH=/home/me/patches exec vllm serve /srv/models/qwen "
           "--host 127.0.0.1'"), 8, Action.BLOCK),
] + [
    # issue 30 item 25: any device beyond the GPU's nodes (line 38, after the GPU's DeviceAllow=)
    ("service.device-raw", _edit("IPAddressDeny=any", f"DeviceAllow={dev}\nIPAddressDeny=any"),
     38, Action.BLOCK)
    for dev in ("/dev/mem rw", "/dev/kmem", "/dev/port r", "/dev/sda rw", "/dev/nvme0n1 r",
                "block-sd rw", "char-mem rw", "char-* rw", "/dev/nvidia* rw", "/dev/mapper/root",
                "/dev/../dev/mem", "/dev/disk/by-id/x", "/dev/kvm", "mem rw", '"/dev/mem" rw')
] + [
    ("service.device-allow", _edit("IPAddressDeny=any", f"DeviceAllow={dev}\nIPAddressDeny=any"),
     38, Action.REVIEW)
    for dev in ("/dev/infiniband/uverbs0 rw", "char-input r", "/dev/snd/pcmC0D0p")
] + [
    ("service.bind-all", _edit(HOST, f"--host {host} --port 8000"), 8, Action.REVIEW)
    for host in ("0", "0.0", "0x0", "000.0.0", "::0", "[::]", "0:0:0:0:0:0:0:0", "::ffff:0.0.0.0",
                 "0.0.0.0", '""', "*")
]


@pytest.mark.parametrize("rule, text, line, action", BAD,
                         ids=[f"{r}-{i}" for i, (r, *_) in enumerate(BAD)])
def test_each_bad_unit_gives_its_rule_on_its_line(rule, text, line, action):
    findings = _lint(text)
    assert [f.rule for f in findings] == [rule], [f.message for f in findings]
    (f,) = findings
    assert f.line == line and f.action is action
    assert f.path == "x.service" and f.commit is None and f.scanner == "unit-lint"
    assert "hunter2" not in f.message + f.snippet
    assert "abcdefghijklmnopqrstu" not in f.message + f.snippet


def test_every_lint_rule_has_a_bad_unit():
    tested = {r for r, *_ in BAD}
    lint_rules = {r.id for r in RULES} - {"service.exposure-score", "service.verify",
                                          "service.no-key-loopback"}
    assert lint_rules <= tested


@pytest.mark.parametrize("host", ["127.1", "0x7f.1", "[::1]", "::ffff:127.0.0.1", "localhost",
                                  "127.0.0.1"])
def test_loopback_in_other_spellings_is_loopback(host):
    text = _edit("EnvironmentFile=/etc/vllm/vllm.env\n", "").replace(HOST, f"--host {host}")
    assert [f.rule for f in _lint(text)] == ["service.no-key-loopback"]


def test_system_libraries_and_fixed_templates_are_not_flagged():
    text = _edit("UMask=0077", "UMask=0077\nEnvironment=LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu")
    text = text.replace("--port 8000", "--port 8000 --chat-template /etc/vllm/chat.jinja")
    assert _lint(text) == []


def test_no_key_on_loopback_is_only_information():
    text = _edit("EnvironmentFile=/etc/vllm/vllm.env\n", "")
    (f,) = _lint(text)
    assert f.rule == "service.no-key-loopback" and f.action is Action.INFO
    assert f.category is Category.API_EXPOSURE


def test_vllm_without_host_binds_everywhere_but_llama_cpp_does_not():
    text = _edit(HOST, "--port 8000").replace("EnvironmentFile=/etc/vllm/vllm.env\n", "")
    assert {f.rule for f in _lint(text)} == {"service.exposed-without-key", "service.bind-all"}
    llama = text.replace("vllm serve /srv/models/qwen", "llama-server --model /srv/m.gguf")
    llama = llama.replace("VLLM_NO_USAGE_STATS=1 VLLM_DO_NOT_TRACK=1 ", "")
    assert [f.rule for f in _lint(llama, LLAMA)] == ["service.no-key-loopback"]


def test_key_file_flag_counts_as_a_key_and_is_not_a_key_on_argv():
    text = _edit("EnvironmentFile=/etc/vllm/vllm.env\n",
                 "LoadCredential=api_key:/etc/credstore/k\n").replace(
        HOST, "--host 10.0.0.5 --port 8000 --api-key-file %d/api_key")
    assert _lint(text, replace(LLAMA, telemetry_env={})) == []


def test_repeated_and_reset_settings_are_read_like_systemd():
    # the last User= wins; an empty SystemCallFilter= resets the allow-list
    text = _edit("User=vllm", "User=root\nUser=vllm")
    assert _lint(text) == []
    reset = _edit("SystemCallFilter=@system-service",
                  "SystemCallFilter=@system-service\nSystemCallFilter=")
    assert [f.rule for f in _lint(reset)] == ["service.hardening"]


def test_a_file_without_service_section_is_refused():
    with pytest.raises(InputError, match="not a service unit"):
        _lint("[Unit]\nDescription=x\n")
