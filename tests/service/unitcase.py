"""Helpers for the service tests: service specs, and systemd's own reading of a unit file."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from auditor.service.unitfile import split_words
from auditor.spec import ServiceSpec

HAS_ANALYZE = shutil.which("systemd-analyze") is not None
needs_analyze = pytest.mark.skipif(not HAS_ANALYZE,
                                   reason="systemd-analyze is not installed on this machine")

BASE = ServiceSpec(name="vllm", user="vllm", model="/srv/models/qwen", host="127.0.0.1",
                   port=8000, devices=(), extra_args=(), api_key_file="/etc/vllm/vllm.env",
                   api_key_credential=None, loopback_only=False, client_networks=(),
                   exec_path="/opt/vllm/bin/vllm", gpu="nvidia")


def service(**changes: Any) -> ServiceSpec:
    return replace(BASE, **changes)


def systemd_view(unit: Path) -> dict[str, list[str]]:
    """What systemd parsed: the unit's dump from ``systemd-analyze verify`` at debug level.

    Returns setting -> values, and ``<ExecKey>`` -> command lines (each as systemd prints it).
    """
    env = {**os.environ, "SYSTEMD_LOG_LEVEL": "debug", "SYSTEMD_COLORS": "0"}
    res = subprocess.run(["systemd-analyze", "verify", str(unit)], env=env, capture_output=True,
                         text=True, timeout=120)
    lines = res.stdout.split("\n")  # the dump goes to stdout; only \n ends its lines
    start = next(i for i, line in enumerate(lines) if line.strip() == f"-> Unit {unit.name}:")
    view: dict[str, list[str]] = {}
    section = None
    for line in lines[start + 1:]:
        if not line.startswith("\t\t"):
            break
        body = line.strip()
        m = re.match(r"-> (\w+):$", body)
        if m:
            section = m.group(1)
            view.setdefault(section, [])
            continue
        key, _, value = body.partition(": ")
        if key == "Command Line" and section:
            view[section].append(value)
        elif line.startswith("\t\t") and not line.startswith("\t\t\t"):
            section = None
            view.setdefault(key, []).append(value)
    return view


def argv_of(command_line: str) -> list[str]:
    """A command line as systemd's dump prints it, split into its words."""
    return [w.text for w in split_words(command_line)]
