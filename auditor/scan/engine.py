"""The scan engine: files in scope -> cached scanner runs -> attributed, policed findings.

1. Scope: the files the series changed (``diff``) or every bundle file (``full``); binaries and
   symlinks are the verify stage's, but a file is also scanned as the language of every link
   name that reaches it, and a link that changes its target's language is a finding
   (:mod:`auditor.scan.symlinks`); a file that cannot be read or decoded is not checked,
   nor one past the size and longest-line caps (:mod:`auditor.scan.limits`) when it needs rules.
2. Cache: each (file, scanner) pair is looked up by content; only misses are scanned, every
   scanner once, in parallel (semgrep and bandit are separate processes).
3. Attribution (after the cache): blame over the series range gives each finding the commit that
   introduced its first series line; in ``diff`` scope findings on upstream lines are dropped, in
   ``full`` scope findings upstream's copy also has are marked inherited.
4. Package sources: a ``*.package-source`` finding is named new, known or from a variable against
   upstream's tree and the engine profile (:mod:`auditor.scan.sources`).
5. Policy: the action per category/path/rule (at most ``review`` on a docs file), then waivers (an
   expired one is itself a finding).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from auditor.gitio import Git
from auditor.model import (
    Action,
    Category,
    Finding,
    Scope,
    Severity,
    SourceLine,
    StageResult,
    Workspace,
    status_for,
)
from auditor.policy import Policy, Waiver, apply_waivers
from auditor.provenance.blame import Blamed, line_origins, walked
from auditor.provenance.bundlefiles import bundle_files
from auditor.redaction import changes_lines, cut, redacted_lines, split_redacted
from auditor.results.scan import CacheTally, ScanData
from auditor.scan import derived as derived_mod
from auditor.scan import docs, pool, symlinks
from auditor.scan import plan as plan_mod
from auditor.scan.cache import CacheEntry, ResultCache, cache_key
from auditor.scan.coverage import assess
from auditor.scan.diffslice import SliceTally, slice_targets
from auditor.scan.files import ReadResult, classify, family_of, split_lines
from auditor.scan.fingerprint import scan_fingerprint
from auditor.scan.interface import (
    FileError,
    Origin,
    RawFinding,
    Scanner,
    ScannerRun,
    ScanTarget,
    all_failed,
)
from auditor.scan.limits import oversize
from auditor.scan.merge import merge_same_concern
from auditor.scan.scope import attribute, changed_paths, read_blobs, upstream_blobs
from auditor.scan.slicecache import slice_cache
from auditor.scan.sources import SourceJudge, upstream_sources
from auditor.scratch import staging_dir

_SEVERITY_RANK = {s: n for n, s in enumerate(Severity)}  # critical first
SNIPPET_LINES = 5
SNIPPET_WIDTH = 200
# characters str.splitlines() breaks lines on besides "\n" (git and the scanners do not)
_ODD = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_ODD_BREAKS = str.maketrans({c: " " for c in _ODD})
_ODD_BREAK = re.compile(f"[{_ODD}]")
# from this many files on, their lines come from one walk of the series (git log), not one
# ``git blame`` each (auditor.provenance.serieswalk)
_WALK_FROM = 8


@dataclass(frozen=True)
class ScanConfig:
    scope: Scope
    policy: Policy
    waivers: tuple[Waiver, ...] = ()
    cache_dir: Path | None = None  # None: no cache
    jobs: int = 2
    today: dt.date | None = None
    package_indexes: tuple[str, ...] = ()  # the engine profile's known package sources
    # diff scope: modified Python files scanned as slices (auditor.scan.diffslice)
    slice_diff: bool = True
    # the reference runner's attribution: one ``git blame`` per file, never the series walk
    blame_each: bool = False
    # say per file which readings ran and why a rule did not read it (auditor.scan.plan)
    explain: bool = False
    # the scanners' staged copies on a RAM file system where there is room (auditor.scratch)
    ram_staging: bool = True


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
    in_scope, skipped = _scope(ws, config.scope, changed)
    progress(f"scan ({config.scope.value}): reading {len(in_scope)} file(s)")

    not_checked: dict[str, list[str]] = {}
    links, new_links = _links_in_scope(ws, config.scope, changed)
    # a link's target is read too (diff scope: also when only the link changed)
    extra = sorted({lk.target for lk in links if lk.target} - set(in_scope))
    bundle = _read_bundle(ws, sorted([*in_scope, *extra]), not_checked, skipped)
    # full scope: upstream's copy of each changed text file, to tell inherited findings apart
    baseline = _baseline(ws, bundle, changed, upstream) if config.scope is Scope.FULL else []

    # Attribution (blame over threads) is needed only where there are findings: the changed
    # files with findings are blamed once the scanners are done (a blame beside them takes a
    # core from them: the scanners keep every core busy), those with errors or unread changed
    # lines when coverage asks. In diff scope the slices have blamed the modified Python files.
    to_blame = [t for t in bundle if t.path in changed]
    blamer = _Blamer(ws, changed, jobs, progress, walk_from=None if config.blame_each
                     else _WALK_FROM)

    # derived readings (a Dockerfile's shell text, a Python file as the interpreter decodes it)
    # are scanned beside the files; their findings and errors belong to the file's path
    # (kept by content in the cache: deriving parses every Python file)
    try:
        tally = _Tally()
        versions: dict[str, str] = {}
        with pool.kept():  # processes the readings start are the slices' and taint views' too
            targets = derived_mod.expand(bundle + baseline,
                                         derived_mod.ReadingCache(config.cache_dir)
                                         if config.cache_dir is not None else None, jobs=jobs)
            readings, link_findings = _link_readings(links, bundle)
            targets += readings
            whole = {t.key: t.sha256 for t in targets}
            targets, sliced = _slice_for_diff(ws, targets, upstream, config, blamer)
            # only files that can have findings: those scanned now, and those with cached ones
            results = _run_scanners(scanners, targets, config, workdir, tally, versions,
                                    progress)
            ran = _explain(scanners, results, targets, whole, bundle) \
                if config.explain else None
        raw = _raw_by_file(scanners, results, targets, _owners(bundle + baseline, targets))
        blamer.blame([t for t in to_blame if raw.get(t.key)] + [t for t, _f in link_findings])
        judged = assess(bundle, [t for t in targets if t.origin is Origin.BUNDLE], scanners,
                        results, _gives, blamer.changed_lines)
        for path, reasons in judged.not_checked.items():
            not_checked.setdefault(path, []).extend(reasons)
        origins = blamer.origins()
    finally:
        blamer.close()

    attributed = _Attributed(scope=config.scope, changed=changed | new_links, origins=origins,
                             upstream_prints=_upstream_prints(baseline, raw),
                             judge=_LazyJudge(ws, config.package_indexes))
    findings = [f for t in bundle for f in _findings_of(t, raw.get(t.key, []), attributed)]
    findings += [f for t, rf in link_findings
                 for f in _findings_of(t, [(_LINK_SCANNER, rf)], attributed)]
    findings = config.policy.apply(findings)
    # docs are read, not run: an instruction in them is at most reviewed (auditor.scan.docs)
    findings = [f.with_action(docs.ceiling(f.path, f.action)) for f in findings]
    findings = apply_waivers(findings, config.waivers, today=config.today)
    findings = merge_same_concern(findings)  # after policy and waivers: each rule judged alone
    findings.sort(key=lambda f: (f.path, f.line, f.rule, f.fingerprint))
    nc_lines = tuple(f"{p}: {'; '.join(dict.fromkeys(rs))}" for p, rs in sorted(not_checked.items()))
    checked = sorted(t.path for t in bundle if t.path not in not_checked)
    ruleset = next((getattr(s, "ruleset", None) for s in scanners
                    if getattr(s, "ruleset", None)), None)
    data = ScanData(
        scope=config.scope, checked_files=tuple(checked), skipped=tuple(sorted(skipped)),
        scanners=dict(sorted(versions.items())), ruleset=ruleset,
        cache=CacheTally(hits=tally.hits, misses=tally.misses,
                         scanned=dict(sorted(tally.scanned.items()))),
        # which rule sets read each scanned file (auditor.scan.coverage)
        coverage={p: tuple(labels) for p, labels in sorted(judged.coverage.items())},
        uncovered=tuple(judged.uncovered), notes=tuple(judged.notes) + tuple(sliced.notes()),
        readings=ran)
    return StageResult(name="scan", status=status_for(findings, nc_lines, ()), data=data,
                       findings=tuple(findings), not_checked=nc_lines)


def _explain(scanners: Sequence[Scanner], results: Mapping[str, ScannerRun],
             targets: Sequence[ScanTarget], whole: Mapping[str, str],
             bundle: Sequence[ScanTarget]) -> dict[str, tuple[dict[str, object], ...]]:
    """Per bundle path, the readings the scan ran (:func:`auditor.scan.plan.of_run`)."""
    mine = [t for t in targets if t.origin is Origin.BUNDLE]
    sliced = [t.key for t in mine if whole.get(t.key, t.sha256) != t.sha256]
    owners = {t.key: (t.path, t.derived or "file") for t in mine}
    ran = plan_mod.explained(plan_mod.of_run(scanners, results, mine, sliced), owners)
    return {p: tuple(ran.get(p, ())) for p in sorted({t.path for t in bundle})}


class _LinkScanner(Scanner):
    """The name symlink findings carry (they are made here, not by a scanner run)."""

    name = "symlink"

    def version(self) -> str:
        return "1"

    def options_key(self) -> str:
        return ""

    def accepts(self, target: ScanTarget) -> bool:
        return False

    def scan(self, files: Sequence[ScanTarget], workdir: Path) -> ScannerRun:
        return ScannerRun(findings={}, errors={})


_LINK_SCANNER = _LinkScanner()


def _links_in_scope(ws: Workspace, scope: Scope,
                    changed: set[str]) -> tuple[list[symlinks.Link], set[str]]:
    """The bundle's symlinks the scan reads (every one in ``full`` scope; in ``diff`` scope those
    the series added or changed and those that reach a changed file), and the added or changed
    ones."""
    paths = [p for p, f in ws.manifest.items() if f.mode == symlinks.MODE_LINK]
    if not paths:
        return [], set()
    every = symlinks.links_of(ws.manifest, bundle_files(ws).read_entries, paths)
    upstream = {p: e.sha for p, e in Git(ws.upstream_repo).ls_tree(ws.upstream_tree).items()
                if e.mode == symlinks.MODE_LINK}
    new = {lk.path for lk in every if upstream.get(lk.path) != ws.manifest[lk.path].blob}
    if scope is Scope.FULL:
        return every, new
    return [lk for lk in every if lk.path in new or lk.target in changed], new


def _link_readings(links: Sequence[symlinks.Link], bundle: Sequence[ScanTarget],
                   ) -> tuple[list[ScanTarget], list[tuple[ScanTarget, RawFinding]]]:
    """For each link whose name gives its target another language: the target's text read as the
    link's language (findings at the target's lines), and the link's own finding (with the link
    as a one-line target, its text what git holds for it)."""
    by_path = {t.path: t for t in bundle}
    readings: list[ScanTarget] = []
    found: list[tuple[ScanTarget, RawFinding]] = []
    for lk in links:
        if lk.target is None:
            continue
        target = by_path.get(lk.target)
        head = target.text[:256] if target is not None else ""
        family = family_of(lk.path, head)
        own = target.family if target is not None else None
        if family is None or family == own:
            continue
        if target is not None:
            text = target.text
            sha = hashlib.sha256(f"link:{family}\0".encode() + text.encode("utf-8")).hexdigest()
            readings.append(ScanTarget(
                key=symlinks.link_reading_key(target.key, lk.path), path=target.path,
                origin=Origin.BUNDLE, sha256=sha, family=family, text=text,
                derived=f"symlink-{family}"))
        link_t = ScanTarget(key=f"l:{lk.path}", path=lk.path, origin=Origin.BUNDLE,
                            sha256="", family=None, text=lk.text)
        found.append((link_t, RawFinding(
            rule=symlinks.RULE, category=Category.OBFUSCATION, severity=Severity.HIGH, line=1,
            end_line=1, message=symlinks.describe(lk, family, own), help=symlinks.HELP)))
    return readings, found


def _scope(ws: Workspace, scope: Scope, changed: set[str]) -> tuple[list[str], list[str]]:
    """The paths to read, and the symlinks in scope that are left to the verify stage."""
    regular = sorted(p for p, f in ws.manifest.items() if f.mode != "120000")
    links = sorted(p for p, f in ws.manifest.items() if f.mode == "120000")
    in_scope = regular if scope is Scope.FULL else sorted(changed)
    skipped = [f"{p}: symlink (left to the verify stage)" for p in links
               if scope is Scope.FULL or p in changed]
    return in_scope, skipped


def _read_bundle(ws: Workspace, in_scope: Sequence[str], not_checked: dict[str, list[str]],
                 skipped: list[str]) -> list[ScanTarget]:
    """The bundle's text files in scope, from where verify says (the proven git objects or the
    unpacked copy); unreadable ones go to ``not_checked``, binaries and the like to ``skipped``."""
    got = bundle_files(ws).read(in_scope)
    bundle: list[ScanTarget] = []
    for path in in_scope:
        r = (classify(path, got.contents[path]) if path in got.contents
             else ReadResult(path, error=got.errors.get(path, "cannot be read")))
        big = (oversize(path, r.family, r.text, len(got.contents[path]))
               if r.text is not None else None)
        if r.error is not None:
            not_checked.setdefault(r.path, []).append(r.error)
        elif r.skipped is not None:
            skipped.append(f"{r.path}: {r.skipped}")
        elif big is not None:  # never given to a scanner: it would stall the scan
            if big.needs_rules:
                not_checked.setdefault(r.path, []).append(big.reason)
            else:
                skipped.append(f"{r.path}: {big.reason} (its kind needs no rules)")
        else:
            assert r.text is not None
            bundle.append(ScanTarget(key=f"b:{r.path}", path=r.path, origin=Origin.BUNDLE,
                                     sha256=r.sha256, family=r.family, text=r.text))
    return bundle


def _baseline(ws: Workspace, bundle: Sequence[ScanTarget], changed: set[str],
              upstream: dict[str, str]) -> list[ScanTarget]:
    """Upstream's copy of each changed bundle text file that upstream has."""
    want = {t.path: upstream[t.path] for t in bundle if t.path in changed and t.path in upstream}
    blobs = read_blobs(ws, list(want.values()))
    baseline: list[ScanTarget] = []
    for path, sha in sorted(want.items()):  # read_blobs raises on a missing object
        r = classify(path, blobs[sha])
        # past the caps: no baseline (the bundle's findings are then not taken for inherited)
        if r.text is not None and oversize(path, r.family, r.text, len(blobs[sha])) is None:
            baseline.append(ScanTarget(key=f"u:{path}", path=path, origin=Origin.UPSTREAM,
                                       sha256=r.sha256, family=r.family, text=r.text))
    return baseline


def _slice_for_diff(ws: Workspace, targets: list[ScanTarget], upstream: Mapping[str, str],
                    config: ScanConfig, blamer: _Blamer) -> tuple[list[ScanTarget], SliceTally]:
    """Diff scope: each modified Python file as a slice, untouched function bodies left out
    (:mod:`auditor.scan.diffslice`); the lines come from blame, started here for those files."""
    if config.scope is not Scope.DIFF or not config.slice_diff:
        return targets, SliceTally()

    def series_lines(ts: Sequence[ScanTarget]) -> Mapping[str, set[int]]:
        blamer.blame(ts)  # started for all; each file's lines waited for when read
        return _LinesOf(blamer, {t.key: t for t in ts})

    return slice_targets(targets, lambda t: t.path in upstream, series_lines,
                         slice_cache(config.cache_dir, ws, upstream))


class _LinesOf(Mapping[str, set[int]]):
    """The series' lines of each target (by key), waited for only when read."""

    def __init__(self, blamer: _Blamer, targets: dict[str, ScanTarget]) -> None:
        self._blamer = blamer
        self._targets = targets

    def __getitem__(self, key: str) -> set[int]:
        return self._blamer.changed_lines(self._targets[key]) or set()

    def __iter__(self) -> Iterator[str]:
        return iter(self._targets)

    def __len__(self) -> int:
        return len(self._targets)


class _Blamer:
    """Line origins of changed files, computed on a thread pool and each file at most once."""

    def __init__(self, ws: Workspace, changed: set[str], jobs: int,
                 progress: Callable[[str], None], walk_from: int | None = _WALK_FROM) -> None:
        self._ws = ws
        self._walk_from = walk_from  # None: one ``git blame`` per file, always
        self._changed = changed
        self._progress = progress
        self._pool = ThreadPoolExecutor(max_workers=jobs)
        self._pending: dict[str, Future[list[str | None]]] = {}

    def blame(self, targets: Sequence[ScanTarget]) -> None:
        fresh = [t for t in targets if t.path not in self._pending]
        if not fresh:
            return
        self._progress(f"scan: attributing lines of {len(fresh)} changed file(s)")
        # many files: one walk of the series first (taken first by the threads), then each file
        # from it, or blamed alone where the walk leaves it
        walk = (self._pool.submit(walked, self._ws, [t.path for t in fresh])
                if self._walk_from is not None and len(fresh) >= self._walk_from else None)
        for t in fresh:
            self._pending[t.path] = self._pool.submit(self._origins, t, walk)

    def _origins(self, t: ScanTarget,
                 walk: Future[dict[str, Blamed]] | None) -> list[str | None]:
        return line_origins(self._ws, t.path, _git_lines(t.text),
                            blamed=walk.result().get(t.path) if walk is not None else None)

    def changed_lines(self, t: ScanTarget) -> set[int] | None:
        """The lines of ``t`` the series wrote (None for a file the series did not change)."""
        if t.path not in self._changed:
            return None
        if t.path not in self._pending:
            self.blame([t])
        return {n for n, o in enumerate(self._pending[t.path].result(), start=1)
                if o is not None}

    def origins(self) -> dict[str, list[str | None]]:
        return {path: f.result() for path, f in self._pending.items()}

    def close(self) -> None:
        self._pool.shutdown(wait=True)


def _git_lines(text: str) -> str:
    """``text`` as its lines are compared with git's: split on newlines only, any other line
    break a blank (translated only when there is one: most files have none)."""
    joined = "\n".join(split_lines(text))
    return joined.translate(_ODD_BREAKS) if _ODD_BREAK.search(joined) else joined


def _owners(files: Sequence[ScanTarget], targets: Sequence[ScanTarget]) -> dict[str, ScanTarget]:
    """Each target's file: itself, or for a derived reading the file it was derived from."""
    owner = {t.key: t for t in files}
    for t in targets:
        if t.derived:
            owner[t.key] = owner[t.key.rsplit("#", 1)[0]]
    return owner


def _raw_by_file(scanners: Sequence[Scanner], results: dict[str, ScannerRun],
                 targets: Sequence[ScanTarget], owner: dict[str, ScanTarget],
                 ) -> dict[str, list[tuple[Scanner, RawFinding]]]:
    """Every scanner's findings, at their file's key and lines."""
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
    return raw


def _upstream_prints(baseline: Sequence[ScanTarget],
                     raw: dict[str, list[tuple[Scanner, RawFinding]]]) -> dict[str, set[str]]:
    """The fingerprints of the findings in upstream's copy of each file."""
    prints: dict[str, set[str]] = {}
    for t in baseline:
        lines = t.lines
        prints[t.path] = {_fingerprint(f.rule, t, lines, f, from_series=False)
                          for _s, f in raw.get(t.key, [])}
    return prints


class _LazyJudge:
    """Upstream's package sources, read once and only when a finding needs them."""

    def __init__(self, ws: Workspace, package_indexes: Sequence[str]) -> None:
        self._ws = ws
        self._indexes = package_indexes
        self._judge: SourceJudge | None = None

    def __call__(self) -> SourceJudge:
        if self._judge is None:
            known = upstream_sources(Git(self._ws.upstream_repo), self._ws.upstream_tree)
            self._judge = SourceJudge(known | set(self._indexes))
        return self._judge


@dataclass(frozen=True)
class _Attributed:
    """What turns a scanner's raw finding into an attributed one."""

    scope: Scope
    changed: set[str]
    origins: dict[str, list[str | None]]
    upstream_prints: dict[str, set[str]]
    judge: _LazyJudge


def _findings_of(t: ScanTarget, raw: Sequence[tuple[Scanner, RawFinding]],
                 ctx: _Attributed) -> list[Finding]:
    """The findings of bundle file ``t``: package sources judged, each tied to its commit (in
    ``diff`` scope, those on upstream's lines dropped; in ``full`` scope, upstream's marked
    inherited)."""
    findings: list[Finding] = []
    lines = t.lines
    for scanner, f in raw:
        code = _code(lines, f)
        rule, message = f.rule, f.message
        if SourceJudge.applies(rule):  # new, known or variable package source
            verdict = ctx.judge().judge(code, t.text)
            rule, message = f"{rule}.{verdict.suffix}", verdict.message
        origins = ctx.origins.get(t.path)
        att = attribute(origins, f.line, f.end_line)
        fp = _fingerprint(f.rule, t, lines, f, from_series=att.touches_series)
        inherited = False
        if ctx.scope is Scope.DIFF:
            if not att.touches_series:
                continue
        else:
            # upstream's: an unchanged file, or lines no series commit touched (by blame; without
            # blame, only a finding upstream's own copy has in the same context)
            inherited = t.path not in ctx.changed or (not att.touches_series and (
                origins is not None or fp in ctx.upstream_prints.get(t.path, set())))
        if att.unexplained and not inherited:
            message += " (on a line that no listed commit explains)"
        findings.append(Finding(
            rule=rule, category=f.category, severity=f.severity, action=Action.REVIEW,
            path=t.path, line=f.line, end_line=f.end_line,
            commit=None if inherited else att.commit, message=message,
            scanner=scanner.name,
            fingerprint=fp if rule == f.rule else _fingerprint(rule, t, lines, f,
                                                               from_series=att.touches_series),
            inherited=inherited,
            snippet=_snippet(code), help=f.help,
            context=source_context(lines, f.line, f.end_line, origins),
        ))
    return findings


def _run_scanners(scanners: Sequence[Scanner], targets: Sequence[ScanTarget],
                  config: ScanConfig, workdir: Path, tally: _Tally, versions: dict[str, str],
                  progress: Callable[[str], None]) -> dict[str, ScannerRun]:
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
        keys = {t.key: cache_key(t.path, t.sha256, s.name, version,
                                 options + s.target_options(t) + _derived_options(t))
                for t in mine}
        done[s.name], misses = _from_cache(cache, mine, keys, tally)
        if misses:
            pending[s.name] = (s, misses, keys)

    def work(name: str) -> ScannerRun:
        s, misses, keys = pending[name]
        progress(f"scan: {name} over {len(misses)} file(s)")
        started = time.monotonic()
        # the staged copies in RAM where the machine has room (auditor.scratch: only where they
        # live changes); a few copies of each file
        expected = 4 * sum(len(t.text) for t in misses)
        try:
            with staging_dir(workdir / f"scan-{name}", expected, ram=config.ram_staging) as d:
                run = s.scan(misses, d)
        except Exception as exc:  # a scanner crash is "not checked", never "clean"
            reason = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
            return all_failed(misses, f"{name} crashed: {reason}")
        progress(f"scan: {name} done in {time.monotonic() - started:.1f} s")
        missing = [t for t in misses if t.key not in run.findings and t.key not in run.errors]
        if missing:  # a scanner that forgot a file has not checked it
            extra = all_failed(missing, f"{name} returned no result for it")
            run = ScannerRun(findings=run.findings, errors={**run.errors, **extra.errors})
        if cache is not None:  # written now, while the other scanners may still run
            for t in misses:
                if t.sha256:
                    cache.put(keys[t.key], CacheEntry(findings=run.findings.get(t.key, ()),
                                                       error=run.errors.get(t.key)))
        return run

    names = sorted(pending, key=lambda n: [s.name for s in scanners].index(n))
    with ThreadPoolExecutor(max_workers=max(1, len(names))) as pool:
        fresh = dict(zip(names, pool.map(work, names), strict=True))
    for name, run in fresh.items():
        tally.scanned[name] = len(pending[name][1])
        merged = ScannerRun(findings={**done[name].findings, **run.findings},
                            errors={**done[name].errors, **run.errors})
        done[name] = merged
    return done


def _from_cache(cache: ResultCache | None, mine: Sequence[ScanTarget], keys: dict[str, str],
                tally: _Tally) -> tuple[ScannerRun, list[ScanTarget]]:
    """The cached results of one scanner over its targets, and the targets it must still scan."""
    findings: dict[str, tuple[RawFinding, ...]] = {}
    errors: dict[str, FileError] = {}
    misses: list[ScanTarget] = []
    for t in mine:
        entry = cache.get(keys[t.key]) if cache is not None else None
        if entry is None:
            misses.append(t)
            tally.misses += 1
            continue
        tally.hits += 1
        findings[t.key] = entry.findings  # with an error: what the partial parse found
        if entry.error is not None:
            errors[t.key] = entry.error
    return ScannerRun(findings=findings, errors=errors), misses


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


def _fingerprint(rule: str, t: ScanTarget, lines: Sequence[str], f: RawFinding, *,
                 from_series: bool) -> str:
    return scan_fingerprint(rule, t.path, _code(lines, f), lines, f.line, f.end_line,
                            python=t.family == "python", from_series=from_series)


def _code(lines: Sequence[str], f: RawFinding) -> str:
    return "\n".join(lines[max(0, f.line - 1):max(f.line, f.end_line)])


#: lines of the file shown before and after a finding's lines (the reports' diff view)
CONTEXT_LINES = 3


def source_context(lines: Sequence[str], line: int, end_line: int,
                   origins: Sequence[str | None] | None) -> tuple[SourceLine, ...]:
    """The finding's lines (at most :data:`SNIPPET_LINES`) with :data:`CONTEXT_LINES` around
    them, each marked added when the series wrote it (``origins``: per line, None for
    upstream's; None for a file upstream's unchanged). Empty without a line, or when the file
    holds a secret spanning lines (a private key: line by line its body would not be redacted;
    the snippet alone is shown then)."""
    if line < 1 or line > len(lines):
        return ()
    if changes_lines(lines):
        return ()
    last = min(max(line, end_line), len(lines))
    shown_end = min(last, line + SNIPPET_LINES - 1)
    start = max(1, line - CONTEXT_LINES)
    stop = min(len(lines), shown_end + CONTEXT_LINES) if shown_end == last else shown_end
    raw = [lines[n - 1] for n in range(start, stop + 1)]
    texts = redacted_lines(raw)  # redacted whole, then cut: no secret is cut in half
    if texts is None:
        return ()
    texts = [cut(t, SNIPPET_WIDTH, "…") for t in texts]
    return tuple(SourceLine(line=n, text=text, added=origins is not None and n - 1 < len(origins)
                            and origins[n - 1] is not None)
                 for n, text in zip(range(start, stop + 1), texts, strict=True))


def _snippet(code: str) -> str:
    rows = split_redacted(code)  # redacted whole (a private key's lines), then each row cut
    shown = [cut(r, SNIPPET_WIDTH, "…") for r in rows[:SNIPPET_LINES]]
    if len(rows) > SNIPPET_LINES:
        shown.append("…")
    return "\n".join(shown)

