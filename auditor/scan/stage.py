"""The scan stage: static scans of the verified bundle, findings attributed to commits.

Requested when the spec has a ``[scan]`` section; needs the verify stage's workspace. The scope is
``--scope``, else ``[scan] scope``; the policy and waivers come from ``[scan]``. Its ``--json``
object: ``scope``, ``checked_files``, ``skipped``, ``scanners`` (name -> version), ``ruleset``,
``cache`` (hits, misses, files scanned per scanner), ``coverage`` (path -> the rule sets that read
it), ``uncovered`` (changed lines no rule set for their language read), ``notes`` (parse failures
whose lines other readings covered), with ``--explain`` ``readings`` (per path, the readings of
the scan plan that ran: :mod:`auditor.scan.plan`) plus the findings and ``not_checked``. With
``--reference`` the scan goes through the reference runner (:mod:`auditor.scan.reference`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from auditor.errors import InputError, SpecError
from auditor.model import StageResult
from auditor.policy import policy_of, waivers_of
from auditor.scan.bandit import BanditScanner
from auditor.scan.builtin import BuiltinScanner
from auditor.scan.cmake import CMakeScanner
from auditor.scan.docs import DocsScanner
from auditor.scan.engine import ScanConfig, run_scan
from auditor.scan.interface import Scanner
from auditor.scan.pycoding import CodingScanner
from auditor.scan.pysyntax import PythonSyntaxScanner
from auditor.scan.semgrep import SemgrepScanner
from auditor.spec import ENGINES_DIR, Spec
from auditor.stage import Context, Stage


def default_scanners(spec: Spec, *, jobs: int, rules_dir: Path | None = None,
                     waiting: Callable[[], None] = lambda: None) -> list[Scanner]:
    """semgrep (the rule set), bandit (Python), builtin (encoded literals, engine switches),
    coding (Python coding declarations), cmake (what the build fetches and runs), docs (shell
    blocks of docs files that cannot be read). ``waiting`` is called when semgrep is about to
    wait on its processes (the run's ``Context.background.waiting``)."""
    timeout = spec.scan.timeout if spec.scan is not None else 600
    return [
        # a semgrep process per core, each over a share of the files and on one core of its
        # own (semgrep's --jobs=2 cost ~40 % more CPU than two processes: benchmarks/RESULTS.md);
        # bandit the same, at a lower priority: it takes what they leave
        SemgrepScanner(rules_dir, timeout=timeout, jobs=1, processes=max(1, jobs),
                       waiting=waiting),
        BuiltinScanner(spec.profile.request_logging_flags, spec.profile.telemetry_env),
        BanditScanner(timeout=timeout, processes=max(1, jobs)),
        CodingScanner(),
        CMakeScanner(),
        DocsScanner(),
        PythonSyntaxScanner(),
    ]


def package_indexes(spec: Spec) -> tuple[str, ...]:
    """The engine profile's known package sources (``[extra.scan] package_indexes``)."""
    scan = spec.profile.extra.get("scan", {})
    value = scan.get("package_indexes", []) if isinstance(scan, dict) else None
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise SpecError("expected a list of host names",
                        file=str(ENGINES_DIR / f"{spec.profile.name}.toml"),
                        key="extra.scan.package_indexes")
    return tuple(value)


class ScanStage(Stage):
    name = "scan"
    needs = ("verify",)

    def __init__(self, rules_dir: Path | None = None, *, ram_staging: bool = True) -> None:
        self.rules_dir = rules_dir  # None: policies/semgrep/rules
        self.ram_staging = ram_staging  # auditor.scratch (the tests compare both ways)

    def requested(self, spec: Spec) -> bool:
        return spec.scan is not None

    def run(self, ctx: Context) -> StageResult:
        spec = ctx.spec
        assert spec.scan is not None
        ws = ctx.workspace
        if ws is None:
            raise InputError("the scan needs the verified workspace of the verify stage")
        config = ScanConfig(
            scope=ctx.options.scope or spec.scan.scope,
            policy=policy_of(spec),
            waivers=waivers_of(spec),
            cache_dir=ctx.cache_dir,
            jobs=ctx.options.jobs,
            package_indexes=package_indexes(spec),
            ram_staging=self.ram_staging,
        )
        scanners = default_scanners(spec, jobs=ctx.options.jobs, rules_dir=self.rules_dir,
                                    waiting=ctx.background.waiting)
        if ctx.options.explain:
            config = replace(config, explain=True)
        if ctx.options.reference:  # the plain twin of every shortcut (auditor.scan.reference)
            from auditor.scan.reference import reference_config, reference_scanners

            config, scanners = reference_config(config), reference_scanners(scanners)
        workdir = ctx.workdir / "scan"
        workdir.mkdir(parents=True, exist_ok=True)
        return run_scan(ws, scanners, config, workdir, progress=ctx.progress)
