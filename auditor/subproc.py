"""The one subprocess wrapper: git, semgrep, bandit, nvcc, systemd-analyze all run through :func:`run`.

:func:`run` raises :class:`~auditor.errors.ToolMissing` when the program is absent and
:class:`~auditor.errors.ToolError` (carrying stderr) when it fails and ``check`` is set. Its
:class:`Completed` holds stdout as ``str`` (``text=True``, the default) or ``bytes``
(``text=False``); stderr is always text.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import AnyStr, Generic, Literal, overload

from auditor.errors import ToolError, ToolMissing


@dataclass(frozen=True)
class Completed(Generic[AnyStr]):
    args: tuple[str, ...]
    returncode: int
    stdout: AnyStr
    stderr: str


def which(program: str) -> str | None:
    return shutil.which(program)


@overload
def run(args: Sequence[str | os.PathLike[str]], *, cwd: str | os.PathLike[str] | None = ...,
        env: Mapping[str, str] | None = ..., extra_env: Mapping[str, str] | None = ...,
        input: str | bytes | None = ..., timeout: float | None = ..., check: bool = ...,
        text: Literal[True] = ..., niceness: int = ...) -> Completed[str]: ...


@overload
def run(args: Sequence[str | os.PathLike[str]], *, cwd: str | os.PathLike[str] | None = ...,
        env: Mapping[str, str] | None = ..., extra_env: Mapping[str, str] | None = ...,
        input: str | bytes | None = ..., timeout: float | None = ..., check: bool = ...,
        text: Literal[False], niceness: int = ...) -> Completed[bytes]: ...


@overload
def run(args: Sequence[str | os.PathLike[str]], *, cwd: str | os.PathLike[str] | None = ...,
        env: Mapping[str, str] | None = ..., extra_env: Mapping[str, str] | None = ...,
        input: str | bytes | None = ..., timeout: float | None = ..., check: bool = ...,
        text: bool, niceness: int = ...) -> Completed[str] | Completed[bytes]: ...


def run(
    args: Sequence[str | os.PathLike[str]],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    extra_env: Mapping[str, str] | None = None,
    input: str | bytes | None = None,
    timeout: float | None = None,
    check: bool = True,
    text: bool = True,
    niceness: int = 0,
) -> Completed[str] | Completed[bytes]:
    """Run a program; ``env`` replaces the environment, ``extra_env`` adds to it. ``niceness``
    above 0 runs it at that lower priority (through ``nice``, where the machine has it): work that
    runs beside the run's critical path gives way to it."""
    argv = [os.fspath(a) for a in args]
    if which(argv[0]) is None and not os.path.isfile(argv[0]):
        raise ToolMissing(f"{argv[0]} is not installed on this machine", cmd=argv)
    full_env = dict(os.environ if env is None else env)
    if extra_env:
        full_env.update(extra_env)
    launch = argv
    if niceness > 0 and which("nice") is not None:
        launch = ["nice", "-n", str(niceness), *argv]
    try:
        proc = subprocess.run(
            launch, cwd=cwd, env=full_env, input=input, capture_output=True,
            timeout=timeout, text=text, check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise ToolError(f"{argv[0]} timed out after {timeout} s", cmd=argv) from exc
    except OSError as exc:
        raise ToolError(f"{argv[0]} could not be started: {exc}", cmd=argv) from exc
    err = proc.stderr if text else proc.stderr.decode("utf-8", "replace")
    if check and proc.returncode != 0:
        raise ToolError(
            f"{' '.join(argv[:3])} failed with exit code {proc.returncode}",
            cmd=argv, returncode=proc.returncode, stderr=err,
        )
    if text:
        return Completed[str](tuple(argv), proc.returncode, proc.stdout, err)
    return Completed[bytes](tuple(argv), proc.returncode, proc.stdout, err)
