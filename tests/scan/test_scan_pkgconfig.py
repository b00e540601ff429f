"""Package sources and launch environment in configuration files (the builtin scanner's part):
pip.conf, uv.toml, pyproject, condarc, requirements, env files and systemd units, with the real
shapes those tools read."""

from __future__ import annotations

import pytest

from auditor.scan.builtin import BuiltinScanner
from auditor.scan.files import classify
from auditor.scan.interface import Origin, ScanTarget

SRC, TLS, LAUNCH = ("dependency.builtin.package-source", "dependency.builtin.index-tls-off",
                    "process-exec.builtin.launch-environment")


def scan(path: str, text: str) -> list[tuple[int, str]]:
    r = classify(path, text.encode())
    assert r.text is not None
    target = ScanTarget(key="b:" + path, path=path, origin=Origin.BUNDLE, sha256=r.sha256,
                        family=r.family, text=r.text)
    scanner = BuiltinScanner((), {})
    assert scanner.accepts(target)
    run = scanner.scan([target], None)  # type: ignore[arg-type]
    return [(f.line, f.rule) for f in run.findings[target.key]
            if f.rule.startswith(("dependency.", "process-exec."))]


@pytest.mark.parametrize("path, text, want", [
    ("etc/pip.conf",
     "[global]\ntimeout = 60\nindex-url = https://pypi.mirror.example.org/simple\n"
     "extra-index-url =\n    https://wheels.sm86-kernels.example/simple\n"
     "trusted-host = wheels.sm86-kernels.example\n",
     [(3, SRC), (5, SRC), (6, TLS)]),
    ("uv.toml",
     '[[index]]\nname = "sm86"\nurl = "https://wheels.sm86-kernels.example/simple"\n\n'
     'allow-insecure-host = ["wheels.sm86-kernels.example"]\n',
     [(3, SRC), (5, TLS)]),
    ("pyproject.toml",
     '[project]\nname = "x"\nurls = { Homepage = "https://example.org" }\n'
     '[tool.uv]\nextra-index-url = [\n  "https://wheels.sm86-kernels.example/simple",\n]\n'
     '[[tool.uv.index]]\nname = "pytorch-cu128"\nurl = "https://download.pytorch.org/whl/cu128"\n',
     [(6, SRC), (10, SRC)]),
    (".condarc", "channels:\n  - sm86-kernels\n  - defaults\nssl_verify: false\n",
     [(2, SRC), (4, TLS)]),
    ("requirements/cuda.txt",
     "--extra-index-url https://wheels.sm86-kernels.example/simple\n"
     "--index-url https://pypi.org/simple\ntorch==2.7.1\n--trusted-host wheels.example\n",
     [(1, SRC), (4, TLS)]),
    ("deploy/vllm.service",
     '[Service]\nEnvironment="PIP_EXTRA_INDEX_URL=https://wheels.sm86-kernels.example/simple"\n'
     "Environment=LD_PRELOAD=/opt/nccl/lib/libnccl.so.2\nEnvironment=PYTHONPATH=/opt/vllm\n"
     "ExecStart=/opt/vllm/bin/vllm serve /srv/m --host 127.0.0.1 --trust-remote-code\n"
     "Environment=LD_LIBRARY_PATH=/usr/local/cuda/lib64\n",
     [(2, SRC), (3, LAUNCH), (4, LAUNCH), (5, LAUNCH)]),
    ("deploy/vllm.env", "VLLM_NO_USAGE_STATS=1\nPIP_INDEX_URL=\n"
                        "UV_INDEX_URL=https://packages.example.net/simple\n", [(3, SRC)]),
])
def test_config_file_findings(path: str, text: str, want: list[tuple[int, str]]) -> None:
    assert sorted(scan(path, text)) == want


@pytest.mark.parametrize("path, text", [
    ("requirements/common.txt", "-r common.txt\ntorch==2.7.1 --hash=sha256:" + "a" * 64 + "\n"),
    ("etc/pip.conf", "[global]\nno-cache-dir = true\n# index-url = https://mirror.example.org\n"),
    ("deploy/vllm.service", "[Service]\nEnvironment=LD_PRELOAD=/usr/lib/x86_64-linux-gnu/"
                            "libtcmalloc_minimal.so.4\nEnvironment=PYTHONPATH=..\n"),
    (".condarc", "channels: []\nssl_verify: true\n"),
])
def test_benign_config_files(path: str, text: str) -> None:
    assert scan(path, text) == []
