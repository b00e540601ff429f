"""What ``auditor review plan|sign|status`` do, apart from parsing and printing (that is cli.py).

``plan`` reads the series from git, splits it (:mod:`auditor.review.plan`) and writes the packets;
with ``scan`` it first runs the scan stage (verify + scan: seconds to minutes on a real series) so
the packets show the findings on each hunk — without it the packets say that no scan ran. ``sign``
resolves hunk ids against the series as it is now and appends to the reviews file. ``status``
computes the coverage.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from auditor.errors import InputError, SpecError
from auditor.inputs import MAX_LIST_BYTES, read_input_text
from auditor.model import StageStatus
from auditor.results.scan import ScanData
from auditor.review.coverage import Coverage, compute, refs_of
from auditor.review.hunks import Hunk
from auditor.review.packets import (
    SHORT,
    Findings,
    attach_findings,
    unchecked_paths,
    write_packets,
)
from auditor.review.plan import Plan, check_reviewer, make_plan, reviewer_names
from auditor.review.series import ReviewSeries, series_of_spec
from auditor.review.signoffs import (
    ReviewVerdict,
    SignOff,
    append_signoffs,
    load_signoffs,
    now_utc,
)
from auditor.spec import ReviewSpec, Spec
from auditor.stage import Options

DEFAULT_PACKETS = Path("review-packets")


def review_spec(spec: Spec) -> ReviewSpec:
    if spec.review is None:
        raise SpecError("the spec has no [review] section (file = \"reviews.toml\")",
                        file=str(spec.path), key="review")
    return spec.review


# ---------------------------------------------------------------- plan


def scan_findings(spec: Spec, options: Options, series: ReviewSeries) -> Findings:
    """Run the scan stage (and verify) and attach its findings to the hunks."""
    from auditor.pipeline import run_single

    if spec.scan is None:
        return Findings({}, "not scanned: the spec has no [scan] section")
    result, _ctx, base = run_single(spec, options, "scan")
    shutil.rmtree(base, ignore_errors=True)
    data = result.data_as(ScanData)
    scanners = data.scanners if data is not None else {}
    scope = data.scope.value if data is not None else "?"
    what = f"from a scan of the series (scope {scope}; scanners: " \
           f"{', '.join(f'{k} {v}' for k, v in scanners.items()) or 'none'}); " \
           f"{len(result.findings)} finding(s) in all"
    if result.status is StageStatus.INCOMPLETE:
        what += f"; INCOMPLETE: {len(result.not_checked)} thing(s) not checked"
        marked = unchecked_paths(series.hunks, result.not_checked)
        rest = [x for x in result.not_checked if not any(x.startswith(p + ": ") for p in marked)]
        what += (" (marked on the hunks)" if marked else "") + "".join(
            f"; {x[:SHORT]}" for x in rest[:3])
    elif result.status is StageStatus.FAILED:
        what += "; the scan's stage failed: " + "; ".join(r[:SHORT] for r in result.reasons[:3])
    found = attach_findings(series.hunks, result.findings, what)
    return replace(found, unchecked=unchecked_paths(series.hunks, result.not_checked))


def plan(spec: Spec, reviewers: Sequence[str] | int, out: Path | None, *, scan: bool,
         options: Options, write: bool = True) -> tuple[Plan, list[Path]]:
    """The plan and its packets. ``reviewers``: names, or a count (``--reviewers N``), which is
    capped at the series' hunk count; no counted reviewer gets an empty packet. Without ``write``
    nothing is written (``--json`` without ``--out``: the plan goes to stdout only)."""
    series = series_of_spec(spec)
    counted = isinstance(reviewers, int)
    if isinstance(reviewers, int):
        reviewers = reviewer_names(reviewers, (), hunks=len(series.hunks))
    p = make_plan(series, reviewers)
    if counted:  # small hunks may share a piece: reviewers left without one get no packet
        p = replace(p, packets=tuple(x for x in p.packets if x.hunks) or p.packets[:1])
    found = (scan_findings(spec, options, series) if scan
             else Findings({}, "not scanned (--no-scan): run `auditor review plan` without "
                           "--no-scan, or `auditor scan`, to see the findings on these hunks"))
    written = write_packets(p, out or DEFAULT_PACKETS, found, spec.path.name) if write else []
    return p, written


# ---------------------------------------------------------------- sign


def resolve_hunk(series: ReviewSeries, given: str) -> Hunk:
    """A hunk by its id, a unique prefix of it (at least 8 hex digits) or its full digest."""
    key = given.strip().lower()
    if len(key) < 8 or any(c not in "0123456789abcdef" for c in key):
        raise InputError(f"--hunk {given!r}: give a hunk id (16 hex digits, or a unique prefix of "
                         "at least 8)")
    found = {h.digest: h for h in series.hunks
             if h.digest.startswith(key) or h.id.startswith(key)}
    if not found:
        raise InputError(f"no hunk of the series has id {given!r}",
                         hint="ids name a hunk's content: an edited hunk has a new id; see "
                              "`auditor review plan`")
    if len(found) > 1:
        raise InputError(f"--hunk {given!r} matches {len(found)} hunks; give more digits")
    return next(iter(found.values()))


def packet_digests(plan_file: Path, name: str) -> list[str]:
    """The hunk digests of reviewer ``name``'s packet in a plan.json written by ``review plan``."""
    try:
        doc = json.loads(read_input_text(plan_file, "plan", MAX_LIST_BYTES))
    except FileNotFoundError:
        raise InputError(f"{plan_file}: no plan here",
                         hint="write one with `auditor review plan SPEC --reviewers N --out DIR`, "
                              "or name it with --plan") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise InputError(f"{plan_file}: not a readable plan: {exc}") from None
    reviewers = doc.get("reviewers") if isinstance(doc, dict) else None
    if not isinstance(reviewers, list):
        raise InputError(f"{plan_file}: not a plan written by `auditor review plan`")
    for r in reviewers:
        if isinstance(r, dict) and r.get("name") == name:
            hunks = r.get("hunks")
            if not isinstance(hunks, list):
                break
            return [str(h.get("digest")) for h in hunks if isinstance(h, dict)]
    raise InputError(f"{plan_file}: no packet for reviewer {name!r}")


@dataclass(frozen=True)
class Signed:
    file: Path
    signoffs: tuple[SignOff, ...]
    skipped: tuple[str, ...]  # packet hunks that are no longer in the series


def sign(spec: Spec, reviewer: str, hunk_ids: Sequence[str], all_of: str | None,
         verdict: ReviewVerdict, note: str, plan_file: Path | None) -> Signed:
    rs = review_spec(spec)
    check_reviewer(reviewer)
    load_signoffs(rs.file, folder=rs.folder)  # a bad reviews file: exit 2 before anything
    if bool(hunk_ids) == bool(all_of):
        raise InputError("give --hunk ID (repeatable) or --all-of NAME")
    series = series_of_spec(spec)
    chosen: list[Hunk] = []
    skipped: list[str] = []
    if all_of:
        by_digest = {h.digest: h for h in series.hunks}
        for d in packet_digests(plan_file or DEFAULT_PACKETS / "plan.json", all_of):
            if d in by_digest:
                chosen.append(by_digest[d])
            else:
                skipped.append(d[:16])
    else:
        chosen = [resolve_hunk(series, h) for h in hunk_ids]
    unique = list({h.digest: h for h in chosen}.values())
    date = now_utc()
    new = tuple(SignOff(reviewer=reviewer, hunk=h.id, digest=h.digest, verdict=verdict,
                        date=date, path=h.path, note=note) for h in unique)
    if not new:
        raise InputError("nothing to sign: no hunk of that packet is in the series any more")
    file = append_signoffs(rs.file, reviewer, new, folder=rs.folder)
    return Signed(file, new, tuple(skipped))


# ---------------------------------------------------------------- status


def status(spec: Spec) -> tuple[Coverage, ReviewSeries]:
    rs = review_spec(spec)
    signoffs = load_signoffs(rs.file, folder=rs.folder)
    series = series_of_spec(spec)
    return compute(refs_of(series), series.areas, signoffs), series


def status_json(cov: Coverage, series: ReviewSeries, spec: Spec) -> dict[str, Any]:
    rs = review_spec(spec)
    return {"required": rs.required, "file": str(rs.file), **cov.to_json(),
            "warnings": list(series.warnings)}
