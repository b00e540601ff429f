"""The Stage interface and the per-run Context that stages share.

A stage is a function of the spec and of earlier stages' results to a frozen
:class:`~auditor.model.StageResult`. Later stages read earlier ones' typed results from
``Context.results``, and the verified :class:`~auditor.model.Workspace` (in memory only, not in
audit.json) from ``Context.workspace``, which the verify stage sets; stages write files into
``Context.out_dir`` (the audit directory being built).
"""

from __future__ import annotations

import contextlib
import os
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from rich.console import Console

from auditor.background import Background
from auditor.model import FailOn, Scope, StageResult, Workspace
from auditor.spec import Spec


@dataclass(frozen=True)
class Options:
    online: bool = False
    scope: Scope | None = None  # overrides [scan] scope
    repro: bool | None = None  # overrides [build] repro
    reproducible: bool = False  # drop timestamps and serials from written documents
    fail_on: FailOn = FailOn.REVIEW
    cache: Path | None = None  # overrides [scan] cache
    jobs: int = max(1, os.cpu_count() or 1)
    verbose: bool = False
    reference: bool = False  # scan through the reference runner (auditor.scan.reference)
    explain: bool = False  # the scan says per file which readings ran (auditor.scan.plan)
    build_from: Path | None = None  # import the build from this folder (auditor.rebuild.imported)


def stderr_console() -> Console:
    """The console for progress and summaries (stderr). Without a terminal (a CI log) lines are not
    wrapped at an assumed width, so paths and finding lines stay whole and searchable."""
    import sys

    return Console(stderr=True, highlight=False, emoji=False, soft_wrap=not sys.stderr.isatty())


def cache_root(spec: Spec, given: Path | None = None) -> Path:
    """Where the cache is: ``--cache``, else ``$AUDITOR_CACHE``, else ``[scan] cache``, else
    ``~/.cache/auditor``."""
    if given is not None:
        return given
    env = os.environ.get("AUDITOR_CACHE")
    if env:
        return Path(env)
    if spec.scan is not None:
        return spec.scan.cache
    return Path.home() / ".cache" / "auditor"


@dataclass
class Context:
    spec: Spec
    options: Options
    workdir: Path  # private temporary folder for this run, removed at the end
    out_dir: Path  # the audit directory being written (a temporary folder until the end)
    console: Console = field(default_factory=lambda: stderr_console())
    results: dict[str, StageResult] = field(default_factory=dict)
    workspace: Workspace | None = None  # set by the verify stage once git and the bundle were read
    # work the stages register to run while this run waits on a program (auditor.background)
    background: Background = field(default_factory=Background)

    @property
    def cache_dir(self) -> Path:
        return cache_root(self.spec, self.options.cache)

    def progress(self, message: str) -> None:
        """One progress line on stderr (never stdout: stdout is for requested output)."""
        self.console.print(f"[dim]·[/dim] {escape_markup(message)}")

    @contextlib.contextmanager
    def status(self, message: str) -> Iterator[None]:
        """A spinner for a long step; plain line when stderr is not a terminal."""
        if self.console.is_terminal:
            with self.console.status(escape_markup(message)):
                yield
        else:
            self.progress(message)
            yield


def escape_markup(text: str) -> str:
    """Progress text for the console: redacted, control characters escaped, markup literal."""
    from auditor.textsafe import console_safe

    return console_safe(text)


class Stage(ABC):
    """One step of the pipeline."""

    name: ClassVar[str]
    #: stages that must have run first (their results or the workspace are read)
    needs: ClassVar[tuple[str, ...]] = ()
    #: stages whose results it uses when the spec requests them (run first, not required)
    wants: ClassVar[tuple[str, ...]] = ()

    def requested(self, spec: Spec) -> bool:
        """Whether the spec asks for this stage (a stage it leaves out is not-requested)."""
        return True

    def check_inputs(self, spec: Spec) -> None:
        """Raise an AuditError (exit 2) for an unusable input before any stage runs."""
        return None

    def prepare(self, ctx: Context) -> None:
        """Called once the stages it needs have run, before the next stage runs: it may register
        work that reads what :meth:`run` will need while others' programs run
        (``ctx.background.when_waiting``, :mod:`auditor.background`). Must not raise; ``run``
        works without it."""
        return None

    @abstractmethod
    def run(self, ctx: Context) -> StageResult:
        """Run the stage. Raise ToolError when a tool is missing/crashed (stage -> incomplete)."""
