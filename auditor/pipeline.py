"""Runs the stages in order, computes the verdict and writes the audit directory atomically."""

from __future__ import annotations

import importlib
import os
import shutil
import tempfile
import traceback
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from auditor import __version__
from auditor.errors import AuditError, InputError, ToolError
from auditor.model import (
    AUDIT_SCHEMA,
    STAGES,
    AuditResult,
    StageResult,
    StageStatus,
    compute_verdict,
)
from auditor.outputs import check_out_dir, write_marker
from auditor.results import Crashed
from auditor.spec import Spec
from auditor.stage import Context, Options, Stage

# Where each stage lives; imported lazily so one stage's heavy imports do not slow the others.
STAGE_CLASSES: dict[str, str] = {
    "verify": "auditor.provenance.stage:VerifyStage",
    "scan": "auditor.scan.stage:ScanStage",
    "deps": "auditor.deps.stage:DepsStage",
    "build": "auditor.rebuild.stage:BuildStage",
    "sbom": "auditor.sbom.stage:SbomStage",
    "unit": "auditor.service.stage:UnitStage",
    "review": "auditor.review.stage:ReviewStage",
}


def load_stage(name: str) -> Stage:
    module, _, cls = STAGE_CLASSES[name].partition(":")
    stage = getattr(importlib.import_module(module), cls)()
    assert isinstance(stage, Stage)
    return stage


def closure(wanted: Iterable[str]) -> list[str]:
    """The wanted stages plus everything they need, in pipeline order."""
    todo = set(wanted)
    changed = True
    while changed:
        changed = False
        for name in list(todo):
            stage = load_stage(name)
            for dep in (*stage.needs, *stage.wants):
                if dep not in todo:
                    todo.add(dep)
                    changed = True
    return [s for s in STAGES if s in todo]


def run_stage(stage: Stage, ctx: Context) -> StageResult:
    """Run one stage; "could not check" becomes incomplete (fail closed); secrets are redacted
    from every finding before anything (audit.json, reports, --json) sees it."""
    from dataclasses import replace

    from auditor.report.view import clean_finding

    result = _run_stage(stage, ctx)
    return replace(result, findings=tuple(clean_finding(f) for f in result.findings))


def _run_stage(stage: Stage, ctx: Context) -> StageResult:
    missing = [d for d in stage.needs
               if d not in ctx.results or ctx.results[d].status is StageStatus.NOT_REQUESTED]
    if "verify" in stage.needs and ctx.workspace is None:
        missing.append("verify (no verified workspace)")
    if missing:
        return StageResult(stage.name, StageStatus.INCOMPLETE,
                           not_checked=(f"needs {', '.join(missing)}, which did not run",))
    try:
        return stage.run(ctx)
    except ToolError as exc:
        return StageResult(stage.name, StageStatus.INCOMPLETE, Crashed(exc.message),
                           not_checked=(exc.diagnostics(),))
    except AuditError:
        raise
    except Exception as exc:  # a crash is "not checked", never "clean"
        if ctx.options.verbose:
            traceback.print_exc()
        return StageResult(stage.name, StageStatus.INCOMPLETE,
                           Crashed(f"{type(exc).__name__}: {exc}"),
                           not_checked=(f"stage crashed: {type(exc).__name__}: {exc}",))


def run_pipeline(spec: Spec, options: Options, wanted: Iterable[str], ctx_out: Path,
                 workdir: Path) -> tuple[AuditResult, Context]:
    """Run ``wanted`` (and what they need); stages the spec leaves out are not-requested."""
    ctx = Context(spec=spec, options=options, workdir=workdir, out_dir=ctx_out)
    wanted = list(wanted)
    for name in closure(wanted):  # bad inputs (exit 2) before any stage runs
        checker = load_stage(name)
        if checker.requested(spec):
            checker.check_inputs(spec)
    stages = [load_stage(name) for name in closure(wanted)]
    prepared: set[str] = set()
    for stage in stages:
        name = stage.name
        if not stage.requested(spec):
            ctx.results[name] = StageResult.not_requested(name)
            continue
        ctx.console.print(f"[bold]{name}[/bold] …")
        result = run_stage(stage, ctx)
        ctx.results[name] = result
        ctx.console.print(f"[bold]{name}[/bold] {_status_word(result)}")
        _prepare_ready(stages, ctx, prepared)
    results = {name: ctx.results.get(name, StageResult.not_requested(name)) for name in STAGES}
    considered = [results[n] for n in STAGES if n in ctx.results]
    verdict, reasons = compute_verdict(considered)
    audit = AuditResult(verdict=verdict, reasons=reasons, stages=results,
                        tool=tool_info(), inputs=inputs_info(spec))
    return audit, ctx


def _prepare_ready(stages: Iterable[Stage], ctx: Context, prepared: set[str]) -> None:
    """:meth:`Stage.prepare` of each stage yet to run whose needs have all run (once each)."""
    for stage in stages:
        if (stage.name in prepared or stage.name in ctx.results
                or not all(d in ctx.results for d in stage.needs)
                or not stage.requested(ctx.spec)):
            continue
        prepared.add(stage.name)
        try:
            stage.prepare(ctx)
        except Exception:  # noqa: BLE001 - only a head start is lost; run() does the work
            if ctx.options.verbose:
                traceback.print_exc()


def _status_word(result: StageResult) -> str:
    colour = {"ok": "green", "failed": "red", "incomplete": "yellow"}.get(result.status.value, "")
    n = len([f for f in result.findings if f.counts])
    extra = f" ({n} finding{'s' if n != 1 else ''})" if n else ""
    return f"[{colour}]{result.status.value}[/{colour}]{extra}" if colour else result.status.value


def tool_info() -> dict[str, Any]:
    return {"name": "auditor", "version": __version__}


def inputs_info(spec: Spec) -> dict[str, Any]:
    return {
        "spec": str(spec.path),
        "engine": {"profile": spec.profile.name, "package": spec.profile.package,
                   "version": spec.engine.version, "target": spec.engine.target},
        "upstream": {"repo": str(spec.upstream.repo), "ref": spec.upstream.ref,
                     "commit": spec.upstream.commit},
        "patches": {"repo": str(spec.patches.repo), "ref": spec.patches.ref,
                    "commits": list(spec.patches.commits)},
        "bundle": str(spec.bundle.path),
    }


class AuditDirectory:
    """An audit directory written atomically: a sibling temporary folder renamed into place.

    The target is checked first (:func:`auditor.outputs.check_out_dir`): only a new folder, an
    empty one or one an earlier audit wrote (it holds the marker) is ever replaced.
    """

    def __init__(self, target: Path, *, spec: Spec | None = None, inputs: Iterable[Path] = (),
                 schema: str = AUDIT_SCHEMA) -> None:
        self.schema = schema
        self.shown = target
        self.target = check_out_dir(target, spec=spec, inputs=inputs, schema=schema)
        try:
            self.target.parent.mkdir(parents=True, exist_ok=True)
            self.tmp = Path(tempfile.mkdtemp(prefix=f".{self.target.name}.",
                                             dir=self.target.parent))
        except OSError as exc:
            raise InputError(f"--out {target}: cannot be created: {exc.strerror or exc}") from None
        try:
            write_marker(self.tmp, schema)
        except OSError as exc:
            self.abort()
            raise InputError(f"--out {target}: cannot be written: {exc.strerror or exc}") from None

    def commit(self) -> Path:
        # checked again: something may have moved in while the audit ran
        check_out_dir(self.target, schema=self.schema)
        old = None
        if self.target.exists():
            old = self.target.with_name(f".{self.target.name}.old-{os.getpid()}")
            os.rename(self.target, old)
        os.rename(self.tmp, self.target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return self.target

    def abort(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


def write_json(path: Path, data: Any) -> None:
    """A JSON document of the audit directory, through the one redacting writer."""
    from auditor.textsafe import dump_json

    path.write_text(dump_json(data), encoding="utf-8")


def audit(spec: Spec, options: Options, out: Path, *, inputs: Iterable[Path] = ()) -> AuditResult:
    """Every stage; the audit directory appears complete or not at all.

    ``out`` is checked before anything runs (``inputs``: more files it must not hold, such as a
    gate's baseline); a write that fails (read-only, full) is an InputError and leaves nothing.
    """
    from auditor.report import write_reports
    from auditor.results.audit_file import check_before_writing

    directory = AuditDirectory(out, spec=spec, inputs=inputs)
    try:
        with tempfile.TemporaryDirectory(prefix="auditor-") as work:
            result, ctx = run_pipeline(spec, options, STAGES, directory.tmp, Path(work))
            data = result.to_json()
            check_before_writing(data)  # a result that breaks the contract is a bug: exit 3
            try:
                write_json(directory.tmp / "audit.json", data)
                write_reports(result, directory.tmp, ctx)
                directory.commit()
            except OSError as exc:
                raise InputError(f"--out {out}: cannot be written: "
                                 f"{exc.strerror or exc}") from None
    except BaseException:
        directory.abort()
        raise
    return result


def run_single(spec: Spec, options: Options, name: str) -> tuple[StageResult, Context, Path]:
    """One stage (and what it needs) outside an audit directory; returns the live context.

    The caller owns the returned temporary folder (``ctx.workdir``'s parent) and removes it.
    """
    base = Path(tempfile.mkdtemp(prefix="auditor-"))
    try:
        (base / "out").mkdir()
        (base / "work").mkdir()
        _, ctx = run_pipeline(spec, options, [name], base / "out", base / "work")
    except BaseException:  # an error, or SIGTERM: the folder is the caller's only on success
        shutil.rmtree(base, ignore_errors=True)
        raise
    return ctx.results[name], ctx, base
