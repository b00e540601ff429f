"""The scan engine: files in scope -> cached scanner runs -> attributed, policed findings.

1. Scope: the files the series changed (``diff``) or every bundle file (``full``); binaries and
   symlinks are left to the verify stage; a file that cannot be read or decoded is not checked.
2. Cache: each (file, scanner) pair is looked up by content; only misses are scanned, every
   scanner once, in parallel (semgrep and bandit are separate processes).
3. Attribution (after the cache): blame over the series range gives each finding the commit that
   introduced its first series line; in ``diff`` scope findings on upstream lines are dropped, in
   ``full`` scope findings upstream's copy also has are marked inherited.
4. Package sources: a ``*.package-source`` finding is named new, known or from a variable against
   upstream's tree and the engine profile (:mod:`auditor.scan.sources`).
5. Policy: the action per category/path/rule, then waivers (an expired one is itself a finding).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from auditor.gitio import Git
from auditor.model import (
    Action,
    Finding,
    Scope,
    Severity,
    StageResult,
    Workspace,
    fingerprint_of,
    status_for,
)
from auditor.policy import Policy, Waiver, apply_waivers
from auditor.provenance.blame import line_origins
from auditor.scan import derived as derived_mod
from auditor.scan.cache import CacheEntry, ResultCache, cache_key
from auditor.scan.coverage import assess
from auditor.scan.files import ReadResult, classify, split_lines
from auditor.scan.interface import (
    FileError,
    Origin,
    RawFinding,
    Scanner,
    ScannerRun,
    ScanTarget,
    all_failed,
)
from auditor.scan.merge import merge_same_concern
from auditor.scan.scope import attribute, changed_paths, read_blobs, upstream_blobs
from auditor.scan.slicing import SliceTally, slice_cache, slice_targets
from auditor.scan.sources import SourceJudge, upstream_sources
from auditor.textsafe import redact

_SEVERITY_RANK = {s: n for n, s in enumerate(Severity)}  # critical first
SNIPPET_LINES = 5
SNIPPET_WIDTH = 200
# characters str.splitlines() breaks lines on besides "\n" (git and the scanners do not)
_ODD_BREAKS = str.maketrans({c: " " for c in "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"})


@dataclass(frozen=True)
class ScanConfig:
    scope: Scope
    policy: Policy
    waivers: tuple[Waiver, ...] = ()
    cache_dir: Path | None = None  # None: no cache
    jobs: int = 2
    today: dt.date | None = None
    package_indexes: tuple[str, ...] = ()  # the engine profile's known package sources
    # diff scope: modified Python files scanned as slices (auditor.scan.slicing)
    slice_diff: bool = True


@dataclass
class _Tally:
    hits: int = 0
    misses: int = 0
    scanned: dict[str, int] = field(default_factory=dict)


def run_scan(ws: Workspace, scanners: Sequence[Scanner], config: ScanConfig, workdir: Path,
             progress: Callable[[str], None] = lambda _m: None) -> StageResult:
    jobs = max(1, config.jobs)
    upstream = upstream_blobs(ws)
    changed = changed_paths(ws, upstream)
    regular = sorted(p for p, f in ws.manifest.items() if f.mode != "120000")
    links = sorted(p for p, f in ws.manifest.items() if f.mode == "120000")
    in_scope = regular if config.scope is Scope.FULL else sorted(changed)
    skipped = [f"{p}: symlink (left to the verify stage)" for p in links
               if config.scope is Scope.FULL or p in changed]
    progress(f"scan ({config.scope.value}): reading {len(in_scope)} file(s)")

    not_checked: dict[str, list[str]] = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        reads = list(pool.map(lambda p: _read(ws.bundle_root, p), in_scope))
    bundle: list[ScanTarget] = []
    for r in reads:
        if r.error is not None:
            not_checked.setdefault(r.path, []).append(r.error)
        elif r.skipped is not None:
            skipped.append(f"{r.path}: {r.skipped}")
        else:
            assert r.text is not None
            bundle.append(ScanTarget(key=f"b:{r.path}", path=r.path, origin=Origin.BUNDLE,
                                     sha256=r.sha256, family=r.family, text=r.text))

    # full scope: upstream's copy of each changed text file, to tell inherited findings apart
    baseline: list[ScanTarget] = []
    if config.scope is Scope.FULL:
        want = {t.path: upstream[t.path] for t in bundle if t.path in changed and t.path in upstream}
        blobs = read_blobs(ws, list(want.values()))
        for path, sha in sorted(want.items()):  # read_blobs raises on a missing object
            r = classify(path, blobs[sha])
            if r.text is not None:
                baseline.append(ScanTarget(key=f"u:{path}", path=path, origin=Origin.UPSTREAM,
                                           sha256=r.sha256, family=r.family, text=r.text))

    # Attribution (blame over threads) is needed only where there are findings. While scanners
    # run over cache misses, every changed text file is blamed alongside them (git and the
    # scanners are separate processes, so it costs no wall time); when every result came from
    # the cache, only the files with findings are blamed.
    to_blame = [t for t in bundle if t.path in changed]
    blame_pool = ThreadPoolExecutor(max_workers=jobs)
    pending: dict[str, Future[list[str | None]]] = {}

    def blame(targets: Sequence[ScanTarget]) -> None:
        fresh = [t for t in targets if t.path not in pending]
        if fresh:
            progress(f"scan: attributing lines of {len(fresh)} changed file(s)")
        for t in fresh:
            pending[t.path] = blame_pool.submit(
                line_origins, ws, t.path, "\n".join(split_lines(t.text)).translate(_ODD_BREAKS))

    # derived readings (a Dockerfile's shell text, a Python file as the interpreter decodes it)
    # are scanned beside the files; their findings and errors belong to the file's path
    targets = derived_mod.expand(bundle + baseline)
    owner = {t.key: t for t in bundle + baseline}
    for t in targets:
        if t.derived:
            owner[t.key] = owner[t.key.rsplit("#", 1)[0]]
    try:
        targets, sliced = _slice_for_diff(ws, targets, set(upstream), config, blame, pending)
        tally = _Tally()
        versions: dict[str, str] = {}
        results = _run_scanners(scanners, targets, config, workdir, tally, versions,
                                progress, before_scanning=lambda: blame(to_blame))

        by_key = {t.key: t for t in targets}
        raw: dict[str, list[tuple[Scanner, RawFinding]]] = {}
        for s in scanners:
            run = results[s.name]
            for key, found in run.findings.items():
                t = by_key[key]
                mapped = [_to_source(t, f) for f in found]
                # on one line, the most severe first (merge_same_concern later keeps the weightiest)
                ordered = sorted(mapped, key=lambda f: (f.line, _SEVERITY_RANK[f.severity],
                                                        f.end_line, f.rule, f.message))
                raw.setdefault(owner[key].key, []).extend((s, f) for f in ordered)

        blame([t for t in to_blame if raw.get(t.key)])

        def changed_lines(t: ScanTarget) -> set[int] | None:
            if t.path not in changed:
                return None
            if t.path not in pending:
                blame([t])
            return {n for n, o in enumerate(pending[t.path].result(), start=1) if o is not None}

        judged = assess(bundle, [t for t in targets if t.origin is Origin.BUNDLE], scanners,
                        results, _gives, changed_lines)
        for path, reasons in judged.not_checked.items():
            not_checked.setdefault(path, []).extend(reasons)
        origins = {path: f.result() for path, f in pending.items()}
    finally:
        blame_pool.shutdown(wait=True)

    upstream_prints: dict[str, set[str]] = {}
    for t in baseline:
        lines = t.lines
        upstream_prints[t.path] = {fingerprint_of(f.rule, t.path, _code(lines, f))
                                   for _s, f in raw.get(t.key, [])}

    judges: list[SourceJudge] = []

    def judge() -> SourceJudge:  # upstream's package sources, read once and only when needed
        if not judges:
            known = upstream_sources(Git(ws.upstream_repo), ws.upstream_tree)
            judges.append(SourceJudge(known | set(config.package_indexes)))
        return judges[0]

    findings: list[Finding] = []
    for t in bundle:
        lines = t.lines
        for scanner, f in raw.get(t.key, []):
            code = _code(lines, f)
            fp = fingerprint_of(f.rule, t.path, code)
            rule, message = f.rule, f.message
            if SourceJudge.applies(rule):  # new, known or variable package source
                verdict = judge().judge(code, t.text)
                rule, message = f"{rule}.{verdict.suffix}", verdict.message
            att = attribute(origins.get(t.path), f.line, f.end_line)
            inherited = False
            if config.scope is Scope.DIFF:
                if not att.touches_series:
                    continue
            else:
                inherited = t.path not in changed or fp in upstream_prints.get(t.path, set())
            if att.unexplained and not inherited:
                message += " (on a line that no listed commit explains)"
            findings.append(Finding(
                rule=rule, category=f.category, severity=f.severity, action=Action.REVIEW,
                path=t.path, line=f.line, end_line=f.end_line,
                commit=None if inherited else att.commit, message=message,
                scanner=scanner.name,
                fingerprint=fp if rule == f.rule else fingerprint_of(rule, t.path, code),
                inherited=inherited,
                snippet=_snippet(code), help=f.help,
            ))

    findings = config.policy.apply(findings)
    findings = apply_waivers(findings, config.waivers, today=config.today)
    findings = merge_same_concern(findings)  # after policy and waivers: each rule judged alone
    findings.sort(key=lambda f: (f.path, f.line, f.rule, f.fingerprint))
    nc_lines = tuple(f"{p}: {'; '.join(dict.fromkeys(rs))}" for p, rs in sorted(not_checked.items()))
    checked = sorted(t.path for t in bundle if t.path not in not_checked)
    ruleset = next((getattr(s, "ruleset", None) for s in scanners
                    if getattr(s, "ruleset", None)), None)
    details = {
        "scope": config.scope.value,
        "checked_files": checked,
        "skipped": sorted(skipped),
        "scanners": dict(sorted(versions.items())),
        "ruleset": ruleset,
        "cache": {"hits": tally.hits, "misses": tally.misses,
                  "scanned": dict(sorted(tally.scanned.items()))},
        # which rule sets read each scanned file (auditor.scan.coverage)
        "coverage": {p: list(labels) for p, labels in sorted(judged.coverage.items())},
        "uncovered": list(judged.uncovered),
        "notes": list(judged.notes) + sliced.notes(),
    }
    return StageResult(name="scan", status=status_for(findings, nc_lines, ()), details=details,
                       findings=tuple(findings), not_checked=nc_lines)


def _slice_for_diff(ws: Workspace, targets: list[ScanTarget], upstream: set[str],
                    config: ScanConfig, blame: Callable[[Sequence[ScanTarget]], None],
                    pending: dict[str, Future[list[str | None]]]
                    ) -> tuple[list[ScanTarget], SliceTally]:
    """Diff scope: each modified Python file as a slice, untouched function bodies left out
    (:mod:`auditor.scan.slicing`); the lines come from blame, started here for those files."""
    if config.scope is not Scope.DIFF or not config.slice_diff:
        return targets, SliceTally()

    def series_lines(ts: Sequence[ScanTarget]) -> dict[str, set[int]]:
        blame(ts)
        return {t.key: {n for n, o in enumerate(pending[t.path].result(), start=1)
                        if o is not None} for t in ts}

    return slice_targets(targets, lambda t: t.path in upstream, series_lines,
                         slice_cache(config.cache_dir, ws))


def _read(root: Path, path: str) -> ReadResult:
    p = root / path
    try:
        if p.is_symlink() or not p.is_file():
            return ReadResult(path, error="not a regular file in the bundle copy")
        data = p.read_bytes()
    except OSError as exc:
        return ReadResult(path, error=f"cannot be read: {exc.strerror or exc}")
    return classify(path, data)


def _run_scanners(scanners: Sequence[Scanner], targets: Sequence[ScanTarget],
                  config: ScanConfig, workdir: Path, tally: _Tally, versions: dict[str, str],
                  progress: Callable[[str], None],
                  before_scanning: Callable[[], None] = lambda: None) -> dict[str, ScannerRun]:
    """Each scanner over the targets it accepts: cached results, then one run over the misses."""
    cache = ResultCache(config.cache_dir) if config.cache_dir is not None else None
    done: dict[str, ScannerRun] = {}
    pending: dict[str, tuple[Scanner, list[ScanTarget], dict[str, str]]] = {}
    for s in scanners:
        mine = [t for t in targets if _gives(s, t)]
        try:
            version = s.version()
            options = s.options_key()
        except Exception as exc:  # missing or broken tool: its files are not checked
            reason = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
            versions[s.name] = "unavailable"
            done[s.name] = all_failed(mine, f"{s.name}: {reason}")
            continue
        versions[s.name] = version
        findings: dict[str, tuple[RawFinding, ...]] = {}
        errors: dict[str, FileError] = {}
        misses: list[ScanTarget] = []
        keys: dict[str, str] = {}
        for t in mine:
            key = cache_key(t.path, t.sha256, s.name, version,
                            options + s.target_options(t) + _derived_options(t))
            keys[t.key] = key
            entry = cache.get(key) if cache is not None else None
            if entry is None:
                misses.append(t)
                tally.misses += 1
                continue
            tally.hits += 1
            findings[t.key] = entry.findings  # with an error: what the partial parse found
            if entry.error is not None:
                errors[t.key] = entry.error
        done[s.name] = ScannerRun(findings=findings, errors=errors)
        if misses:
            pending[s.name] = (s, misses, keys)

    def work(name: str) -> ScannerRun:
        s, misses, _keys = pending[name]
        progress(f"scan: {name} over {len(misses)} file(s)")
        try:
            run = s.scan(misses, workdir / f"scan-{name}")
        except Exception as exc:  # a scanner crash is "not checked", never "clean"
            reason = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
            return all_failed(misses, f"{name} crashed: {reason}")
        missing = [t for t in misses if t.key not in run.findings and t.key not in run.errors]
        if missing:  # a scanner that forgot a file has not checked it
            extra = all_failed(missing, f"{name} returned no result for it")
            run = ScannerRun(findings=run.findings, errors={**run.errors, **extra.errors})
        return run

    names = sorted(pending, key=lambda n: [s.name for s in scanners].index(n))
    if names:
        before_scanning()
    with ThreadPoolExecutor(max_workers=max(1, len(names))) as pool:
        fresh = dict(zip(names, pool.map(work, names), strict=True))
    for name, run in fresh.items():
        s, misses, keys = pending[name]
        tally.scanned[name] = len(misses)
        for t in misses:
            err = run.errors.get(t.key)
            entry = CacheEntry(findings=run.findings.get(t.key, ()), error=err)
            if cache is not None and t.sha256:
                cache.put(keys[t.key], entry)
        merged = ScannerRun(findings={**done[name].findings, **run.findings},
                            errors={**done[name].errors, **run.errors})
        done[name] = merged
    return done


def _gives(s: Scanner, t: ScanTarget) -> bool:
    """Whether scanner ``s`` reads target ``t`` (a superseded text only by raw readers)."""
    return (s.reads_raw or not t.superseded) and s.accepts(t)


def _derived_options(t: ScanTarget) -> str:
    return f"|derived={t.derived}:{derived_mod.DIGEST}" if t.derived else ""


def _to_source(t: ScanTarget, f: RawFinding) -> RawFinding:
    """A derived target's finding at the bundle file's lines."""
    if not t.line_map:
        return f
    line = t.source_line(f.line)
    return replace(f, line=line, end_line=max(line, t.source_line(f.end_line)))


def _code(lines: Sequence[str], f: RawFinding) -> str:
    return "\n".join(lines[max(0, f.line - 1):max(f.line, f.end_line)])


def _snippet(code: str) -> str:
    rows = code.split("\n")
    cut = [r if len(r) <= SNIPPET_WIDTH else r[:SNIPPET_WIDTH] + "…" for r in rows[:SNIPPET_LINES]]
    if len(rows) > SNIPPET_LINES:
        cut.append("…")
    return redact("\n".join(cut))

