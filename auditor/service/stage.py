"""The unit stage (``auditor unit render``) and the unit check (``auditor unit check``).

The stage renders ``<name>.service`` and ``<name>.env.example`` into the audit directory, lints the
unit with :mod:`auditor.service.lint` and asks systemd about it (:mod:`auditor.service.analyze`).
Its result (:class:`~auditor.results.unit.UnitData`): ``unit`` and ``env_example`` (file names in
the audit directory), ``profile``, ``key_mode``, ``exposure`` (``{score, label}`` or null when it
could not be measured), ``exposure_threshold`` and ``verify`` (``{ok, warnings}`` or null). An exposure above the
threshold is a finding; systemd-analyze missing leaves that check in ``not_checked`` (incomplete),
and the lint still runs.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditor import __version__
from auditor.errors import InputError, ToolError
from auditor.fsutil import atomic_write_text
from auditor.inputs import read_input_text
from auditor.model import Finding, StageResult, fingerprint_of, status_for
from auditor.outputs import check_output_file, write_output_file, write_stdout
from auditor.redaction import redacted_text
from auditor.results.unit import ExposureScore, UnitData, UnitVerify
from auditor.service import analyze
from auditor.service.lint import EXPOSURE_RULE, VERIFY_RULE, lint_unit
from auditor.service.render import render_unit
from auditor.service.unitfile import UnitFile, parse_unit
from auditor.spec import EngineProfile, Spec, load_profile
from auditor.stage import Context, Stage


class UnitStage(Stage):
    name = "unit"
    needs = ()

    def requested(self, spec: Spec) -> bool:
        return spec.service is not None

    def run(self, ctx: Context) -> StageResult:
        service = ctx.spec.service
        assert service is not None
        rendered = render_unit(service, ctx.spec.profile, spec_file=str(ctx.spec.path),
                               tool_version=__version__)
        ctx.out_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(ctx.out_dir / rendered.unit_name, rendered.text, mode=0o644)
        atomic_write_text(ctx.out_dir / rendered.env_example_name, rendered.env_example_text,
                          mode=0o600)
        ctx.progress(f"wrote {rendered.unit_name} and {rendered.env_example_name}")
        unit = parse_unit(rendered.text, rendered.unit_name)
        return check_unit(unit, ctx.spec.profile, ctx.workdir / "unit-check",
                          Rendered(unit=rendered.unit_name, env_example=rendered.env_example_name,
                                   key_mode=rendered.key_mode.value))


@dataclass(frozen=True)
class Rendered:
    """The unit checked: its name (or path), its example environment file, its key mode."""

    unit: str
    env_example: str | None = None
    key_mode: str | None = None


def check_unit(unit: UnitFile, profile: EngineProfile, workdir: Path,
               rendered: Rendered) -> StageResult:
    """Lint + systemd-analyze verify + security; what could not run goes to not_checked."""
    findings = lint_unit(unit, profile)
    not_checked: list[str] = []
    copy = analyze.checkable_copy(unit, workdir)
    verified = None
    try:
        result = analyze.verify(copy, unit.path)
        verified = UnitVerify(ok=result.ok, warnings=tuple(str(w) for w in result.warnings))
        for w in result.warnings:
            findings.append(_finding(VERIFY_RULE, unit.path, w.line or 0,
                                     f"systemd-analyze verify: {w.message}", w.message))
    except ToolError as exc:
        not_checked.append(f"systemd-analyze verify of {unit.path}: {exc.message}")
    exposure_score = None
    try:
        exposure = analyze.security(copy)
        exposure_score = ExposureScore(score=exposure.score, label=exposure.label)
        if exposure.score > analyze.EXPOSURE_THRESHOLD:
            findings.append(_finding(
                EXPOSURE_RULE, unit.path, 0,
                f"systemd-analyze security scores the unit {exposure.score:.1f} {exposure.label}, "
                f"above {analyze.EXPOSURE_THRESHOLD:.1f}: harden it (see the other findings)",
                "exposure"))
    except ToolError as exc:
        not_checked.append(f"systemd-analyze security (exposure score) of {unit.path}: "
                           f"{exc.message}")
    data = UnitData(unit=rendered.unit, env_example=rendered.env_example,
                    key_mode=rendered.key_mode, profile=profile.name, exposure=exposure_score,
                    exposure_threshold=analyze.EXPOSURE_THRESHOLD, verify=verified)
    return StageResult(name="unit", status=status_for(findings, not_checked, ()), data=data,
                       findings=tuple(findings), not_checked=tuple(not_checked))


def _finding(rule: Any, path: str, line: int, message: str, code: str) -> Finding:
    return Finding(rule=rule.id, category=rule.category, severity=rule.severity,
                   action=rule.action, path=path, line=line, commit=None, message=message,
                   scanner="systemd-analyze", fingerprint=fingerprint_of(rule.id, path, code))


def check_unit_file(path: Path, profile: str) -> StageResult:
    """``auditor unit check FILE``: the same checks on a unit someone already has."""
    prof = load_profile(profile)
    try:
        text = read_input_text(path, "unit file")  # a regular file under a cap, checked first
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a unit file") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text, not a unit file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read: {exc.strerror}") from None
    unit = parse_unit(text, str(path))
    with tempfile.TemporaryDirectory(prefix="auditor-unit-") as work:
        return check_unit(unit, prof, Path(work), Rendered(unit=str(path)))


def env_example_path(output: Path) -> Path:
    """The example environment file written beside the unit file ``output``."""
    return output.with_name(f"{output.stem}.env.example")


def export_unit(result: StageResult, ctx: Context, output: Path) -> None:
    """Copy the rendered unit to ``output`` and the example environment file next to it.

    ``output`` is a regular file (new or replaced) or ``-`` (the unit on stdout, no example file);
    anything else is refused (:func:`auditor.outputs.check_output_file`).
    """
    data = result.data_as(UnitData)
    if data is None or not data.unit:
        return  # nothing was rendered; the stage's status says why
    text = (ctx.out_dir / data.unit).read_text(encoding="utf-8")
    if str(output) == "-":
        write_stdout(redacted_text(text))
        return
    env_name = data.env_example
    sidecar = env_example_path(output)
    check_output_file(output, "--output", sidecars=[sidecar] if env_name else [])
    write_output_file(output, redacted_text(text), "--output", mode=0o644)
    if env_name:
        env_text = (ctx.out_dir / env_name).read_text(encoding="utf-8")
        write_output_file(sidecar, redacted_text(env_text), "--output", mode=0o600)
