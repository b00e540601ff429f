"""The command line: parse, call, render. The audit's logic lives in the stage packages; what is
here is glue: option handling, output paths, exit codes and the one place errors are caught."""

from __future__ import annotations

import shutil
import sys
import traceback
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from auditor.errors import EXIT_INCOMPLETE, EXIT_USAGE, AuditError, InputError
from auditor.model import FailOn, Scope, StageResult, StageStatus, compute_verdict, exit_code_for
from auditor.outputs import write_stdout
from auditor.redaction import redacted_text
from auditor.report.formats import ReportFormat
from auditor.stage import Options, stderr_console
from auditor.textsafe import dump_json

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Supply-chain audit and reproducible builds for patched LLM inference engines.")
unit_app = typer.Typer(no_args_is_help=True, help="Render a hardened systemd unit, or lint one.")
app.add_typer(unit_app, name="unit")

err = stderr_console()
_state: dict[str, Any] = {"verbose": False, "cache": None}


def _lit(text: str) -> str:
    """Help text shown as written: typer reads help as rich markup, which would swallow a spec
    table's name such as ``[scan]``."""
    from rich.markup import escape

    return escape(text)


SpecArg = Annotated[Path, typer.Argument(help="the audit spec (audit.toml)")]
JsonOpt = Annotated[bool, typer.Option("--json", help="print the stage result as JSON on stdout")]
OnlineOpt = Annotated[bool, typer.Option("--online", help="allow network access (off by default)")]
KeyOpt = Annotated[Path | None, typer.Option("--key", metavar="KEY", help=(
    "sign the provenance, SBOM and verification summary with this private key (default: "
    "$AUDITOR_SIGNING_KEY, else the spec's attest key)"))]
BuildFromOpt = Annotated[Path | None, typer.Option(
    "--build-from", metavar="DIR", file_okay=False, help=_lit(
        "import the build stage from the folder `auditor build SPEC --out DIR` wrote on the CUDA "
        "host (checked: same bundle tree, recipe sha256, changed modules, every file's sha256)"))]
CacheOpt = Annotated[Path | None, typer.Option(
    "--cache", metavar="DIR", file_okay=False, help=_lit(
        "the cache folder (default: $AUDITOR_CACHE, else [scan] cache, else ~/.cache/auditor)"))]


def _show_version(value: bool) -> None:
    if value:
        from auditor import __version__

        sys.stdout.write(f"auditor {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _main(verbose: Annotated[bool, typer.Option("--verbose", "-v",
                                                help="show tracebacks")] = False,
          cache: CacheOpt = None,
          version: Annotated[bool, typer.Option("--version", callback=_show_version,
                                                is_eager=True, help="print auditor's version "
                                                "and exit")] = False) -> None:
    _state["verbose"] = verbose
    _state["cache"] = cache


def _fail(exc: AuditError) -> NoReturn:
    if _state["verbose"]:
        traceback.print_exc()
    lines = [_escape(line) for line in exc.diagnostic_lines()]
    err.print("[red]error:[/red] " + "\n".join(lines))
    raise typer.Exit(exc.exit_code)


def _escape(text: str) -> str:
    from auditor.textsafe import console_safe

    return console_safe(text)


def _check_output(output: Path | None, what: str = "--output",
                  sidecars: tuple[Path, ...] = ()) -> None:
    """An output file that cannot be created, or is not a regular file, stops the command before
    any work (exit 2)."""
    from auditor.outputs import check_output_file

    if output is not None:
        try:
            check_output_file(output, what, sidecars=sidecars)
        except AuditError as exc:
            _fail(exc)


def _options(**kw: Any) -> Options:
    """The stage options; ``cache`` given on the command wins over the global ``--cache``."""
    kw.setdefault("cache", None)
    kw["cache"] = kw["cache"] or _state["cache"]
    return Options(verbose=_state["verbose"], **{k: v for k, v in kw.items() if v is not None})


def _load(spec: Path, *, writing_series: bool = False) -> Any:
    from auditor.spec import load_spec

    loaded = load_spec(spec, writing_series=writing_series)
    if loaded.deps is not None and loaded.deps.lock is not None:
        from auditor.deps.lock import read_lock  # the lock is untrusted: read it before any work

        read_lock(loaded.deps.lock)
    return loaded


def _stage_command(spec_path: Path, name: str, options: Options, as_json: bool,
                   after: Any = None) -> NoReturn:
    from auditor.pipeline import run_single

    try:
        spec = _load(spec_path)
        result, ctx, base = run_single(spec, options, name)
        try:
            if after is not None:
                after(result, ctx)
        except OSError as exc:  # the output could not be written: a usage error
            raise InputError(f"cannot write the output: {exc}") from None
        finally:
            shutil.rmtree(base, ignore_errors=True)
    except AuditError as exc:
        _fail(exc)
    _emit_stage(result, as_json, options)


def _emit_stage(result: StageResult, as_json: bool, options: Options) -> NoReturn:
    from auditor.report.console import print_stage

    if as_json:
        write_stdout(dump_json(result.to_json()))
    print_stage(err, result)
    if result.status is StageStatus.NOT_REQUESTED:
        err.print(f"[yellow]the spec has no section for {result.name}: nothing was checked[/yellow]")
        raise typer.Exit(EXIT_USAGE)
    verdict, _ = compute_verdict([result])
    raise typer.Exit(exit_code_for(verdict, options.fail_on))


@app.command()
def verify(spec: SpecArg, as_json: JsonOpt = False, cache: CacheOpt = None) -> None:
    """The tree-hash proof: bundle == upstream ref + the listed commits."""
    _stage_command(spec, "verify", _options(cache=cache), as_json)


@app.command(help=_lit("Write the commits file ([patches] commits_file) for a range."))
def series(
    spec: SpecArg,
    rng: Annotated[str | None, typer.Option("--range", help="the commits A..B (revisions of "
                                            "the patches repository; default: the spec's "
                                            "upstream commit (or ref)..its patches ref)")] = None,
    model: Annotated[str | None, typer.Option(help="merge: every commit, merges included, "
                                              "parents first; rebase: the non-merge commits "
                                              "(default: the spec's patches model)")] = None,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="the commits file "
                                                "(default: standard output)")] = None,
) -> None:
    from auditor.outputs import write_output_text, write_stdout
    from auditor.provenance.seriesfile import series_text
    from auditor.redaction import redacted_text

    _check_output(output)
    try:
        loaded = _load(spec, writing_series=True)
        if rng is None:
            rng = f"{loaded.upstream.commit or loaded.upstream.ref}..{loaded.patches.ref}"
        text = series_text(loaded, rng, model or loaded.patches.model)
        if output is None:
            write_stdout(redacted_text(text))
        else:
            write_output_text(output, redacted_text(text))
    except AuditError as exc:
        _fail(exc)


@app.command()
def scan(
    spec: SpecArg,
    scope: Annotated[Scope | None, typer.Option(help="diff: what the series changed; "
                                                "full: the whole tree")] = None,
    as_json: JsonOpt = False,
    sarif: Annotated[Path | None, typer.Option(help="also write SARIF 2.1.0 to FILE")] = None,
    cache: CacheOpt = None,
    reference: Annotated[bool, typer.Option(
        "--reference", help="the plain runner: plain semgrep and bandit over whole files, "
        "one git blame per file, no cache (the twin every shortcut is tested against)")] = False,
    explain: Annotated[bool, typer.Option(
        "--explain", help="say per file which readings ran and why a rule did not read it "
        "(the readings field of --json)")] = False,
) -> None:
    """Static scans of the verified bundle, findings attributed to commits."""

    def write_sarif(result: StageResult, ctx: Any) -> None:
        if sarif is not None:
            from auditor.report.sarif import write_stage_sarif

            write_stage_sarif(result, sarif)

    _check_output(sarif, "--sarif")
    _stage_command(spec, "scan", _options(scope=scope, cache=cache, reference=reference or None,
                                           explain=explain or None), as_json, write_sarif)


@app.command()
def deps(spec: SpecArg, as_json: JsonOpt = False, online: OnlineOpt = False,
         cache: CacheOpt = None) -> None:
    """Dependency diff and known vulnerabilities (offline OSV snapshot by default)."""
    _stage_command(spec, "deps", _options(online=online, cache=cache), as_json)


@app.command()
def build(
    spec: SpecArg,
    recipe: Annotated[Path | None, typer.Argument(
        help="with `build prepare RECIPE`: the recipe whose toolchain folder to fill")] = None,
    repro: Annotated[bool | None, typer.Option("--repro/--no-repro",
                                               help="build twice and compare")] = None,
    as_json: JsonOpt = False,
    online: OnlineOpt = False,
    cache: CacheOpt = None,
    folder: Annotated[Path | None, typer.Option("--dir", metavar="DIR", file_okay=False, help=_lit(
        "with `build prepare`: the toolchain folder (default: the recipe's [toolchain] dir)"))
    ] = None,
    out: Annotated[Path | None, typer.Option("--out", metavar="DIR", file_okay=False, help=_lit(
        "write the build folder (build.json record, wheel, modules) for `auditor audit SPEC "
        "--build-from DIR` on another machine (default: only the wheel, into builds/out)"))
    ] = None,
) -> None:
    """Compile the changed CUDA modules from audited source and overlay the official wheel.
    `auditor build prepare RECIPE [--online] [--dir DIR]` fetches (--online) and checks the
    recipe's pinned toolchain packages."""
    if str(spec) == "prepare" or recipe is not None or folder is not None:
        if str(spec) != "prepare" or recipe is None:
            _fail(InputError("usage: auditor build SPEC, or auditor build prepare RECIPE "
                             "[--online] [--dir DIR]"))
        try:
            from auditor.rebuild.prepare import prepare, render
            from auditor.rebuild.recipe import load_recipe

            loaded = load_recipe(recipe)
            text = render(loaded, prepare(loaded, online=online, folder=folder,
                                          progress=lambda m: print(_escape(m), file=sys.stderr,
                                                                   flush=True)))
            write_stdout(redacted_text("".join(_escape(line) + "\n"
                                               for line in text.splitlines())))
        except AuditError as exc:
            _fail(exc)
        raise typer.Exit(0)

    if out is not None:  # an unusable --out is exit 2 before the build starts
        from auditor.outputs import check_out_dir
        from auditor.rebuild.imported import BUILD_DIR_SCHEMA

        try:
            check_out_dir(out, spec=_load(spec), schema=BUILD_DIR_SCHEMA)
        except AuditError as exc:
            _fail(exc)

    def copy_out(result: StageResult, ctx: Any) -> None:
        from auditor.rebuild.stage import export_build

        if out is not None:
            from auditor.rebuild.imported import write_build_dir

            if result.status is StageStatus.NOT_REQUESTED:
                return  # said below: the spec has no [build]

            written = write_build_dir(result, ctx, out)
            err.print(f"build folder: {_escape(str(out))}" if written is not None else
                      "[yellow]no build folder written: the bundle was not verified[/yellow]")
            return
        wheel = export_build(result, ctx, Path("builds/out"))
        if wheel is not None:
            err.print(f"wheel: {_escape(str(wheel))}")

    _stage_command(spec, "build", _options(repro=repro, online=online, cache=cache), as_json,
                   copy_out)


@app.command()
def sbom(
    spec: SpecArg,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="the SBOM file "
                                                "(default sboms/<name>-<version>.cdx.json)")] = None,
    reproducible: Annotated[bool, typer.Option(help="no timestamps or random serials")] = False,
    as_json: JsonOpt = False,
    cache: CacheOpt = None,
) -> None:
    """CycloneDX 1.6 JSON with the fork's pedigree."""

    from auditor.sbom.stage import export_sbom, provenance_path

    def copy_out(result: StageResult, ctx: Any) -> None:
        export_sbom(result, ctx, output)

    _check_output(output, sidecars=(provenance_path(output),) if output is not None else ())
    _stage_command(spec, "sbom", _options(reproducible=reproducible, cache=cache), as_json,
                   copy_out)


@unit_app.command("render", help=_lit(
    "Write the hardened unit (and an example environment file) for the spec's [service]."))
def unit_render(
    spec: SpecArg,
    output: Annotated[Path, typer.Option("-o", "--output", help="the unit file to write")],
    as_json: JsonOpt = False,
    cache: CacheOpt = None,
) -> None:
    from auditor.service.stage import env_example_path, export_unit

    def copy_out(result: StageResult, ctx: Any) -> None:
        export_unit(result, ctx, output)

    _check_output(output, sidecars=(env_example_path(output),))
    _stage_command(spec, "unit", _options(cache=cache), as_json, copy_out)


@unit_app.command("check")
def unit_check(
    unit: Annotated[Path, typer.Argument(help="a systemd unit file")],
    as_json: JsonOpt = False,
    profile: Annotated[str, typer.Option(help="engine profile")] = "vllm",
) -> None:
    """Lint an existing unit: key on the command line, 0.0.0.0, root, no UMask, telemetry, ..."""
    from auditor.service.stage import check_unit_file

    try:
        result = check_unit_file(unit, profile)
    except AuditError as exc:
        _fail(exc)
    _emit_stage(result, as_json, _options())


@app.command()
def audit(
    spec: SpecArg,
    out: Annotated[Path, typer.Option("--out", help="the audit directory")] = Path("audit-out"),
    online: OnlineOpt = False,
    scope: Annotated[Scope | None, typer.Option(help=_lit("override [scan] scope"))] = None,
    reproducible: Annotated[bool, typer.Option(help="no timestamps or random serials")] = False,
    fail_on: Annotated[FailOn, typer.Option(help="review: REVIEW exits 1; block: only FAIL "
                                            "does")] = FailOn.REVIEW,
    cache: CacheOpt = None,
    key: KeyOpt = None,
    build_from: BuildFromOpt = None,
) -> None:
    """Every stage; writes the audit directory (reports, SBOM, provenance, unit, wheel)."""
    from auditor.pipeline import audit as run_audit
    from auditor.report.console import print_summary

    options = _options(online=online, scope=scope, reproducible=reproducible, fail_on=fail_on,
                       cache=cache, build_from=build_from)
    try:
        result = run_audit(_load(spec), options, out, key_file=key)
    except AuditError as exc:
        _fail(exc)
    print_summary(err, result, out)
    raise typer.Exit(exit_code_for(result.verdict, options.fail_on))


@app.command()
def gate(
    spec: SpecArg,
    baseline: Annotated[Path, typer.Option(help="the approved audit.json of the previous version")],
    out: Annotated[Path, typer.Option("--out", help="the gate's audit directory")] = Path(
        "gate-out"),
    fail_on: Annotated[FailOn, typer.Option(help="review or block")] = FailOn.REVIEW,
    as_json: JsonOpt = False,
    cache: CacheOpt = None,
    key: KeyOpt = None,
    build_from: BuildFromOpt = None,
) -> None:
    """Decide an engine upgrade against the last approved audit."""
    from auditor.gate import run_gate

    try:
        code = run_gate(_load(spec), baseline, out,
                        _options(fail_on=fail_on, cache=cache, build_from=build_from),
                        as_json, key_file=key)
    except AuditError as exc:
        _fail(exc)
    raise typer.Exit(code)


@app.command()
def report(
    audit_json: Annotated[Path, typer.Argument(help="an audit.json written by `auditor audit`")],
    fmt: Annotated[ReportFormat, typer.Option("--format", help="md, html, sarif, json, or github "
                                              "(workflow-command annotations)")
                   ] = ReportFormat.MARKDOWN,
    output: Annotated[Path | None, typer.Option("-o", "--output",
                                                help="write to FILE (default: stdout)")] = None,
    summary: Annotated[Path | None, typer.Option(help="also append the Markdown step summary to "
                                                 "FILE, e.g. $GITHUB_STEP_SUMMARY")] = None,
    key: Annotated[Path | None, typer.Option("--key", help="the public key to check the signed "
                                             "companion (vsa.intoto.jsonl) with")] = None,
) -> None:
    """Render a saved audit again, in any format (made from audit.json; nothing is re-run)."""
    from auditor.outputs import append_output_text, write_output_text
    from auditor.report import check_signed, formatter_for, load_saved
    from auditor.report.github import step_summary

    _check_output(output)
    _check_output(summary, "--summary")
    try:
        saved = load_saved(audit_json)  # read, checked and redacted once for every output
        signed = check_signed(audit_json, key)
        note = saved.note
        text = formatter_for(fmt).render(saved.audit)
        if fmt is ReportFormat.GITHUB:  # its last notice names the report.md beside audit.json
            from auditor.report.github import annotations_text, report_md_beside

            text = annotations_text(saved.audit, report_md_beside(audit_json))
        if summary is not None:
            append_output_text(summary, step_summary(saved.audit), "--summary")
        if output is not None and str(output) != "-":
            write_output_text(output, text)
    except AuditError as exc:
        _fail(exc)
    except OSError as exc:
        err.print(f"[red]error:[/red] {_escape(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from None
    if note is not None:
        err.print(f"[bold red]warning:[/bold red] {_escape(note)}")
    if signed is not None:
        err.print(_escape(signed))
    if output is None or str(output) == "-":
        write_stdout(text)


@app.command()
def waive(
    audit_json: Annotated[Path, typer.Argument(help="an audit.json written by `auditor audit`")],
    finding: Annotated[list[str], typer.Option("--finding", metavar="FINGERPRINT",
                                               help="a finding's fingerprint (or a unique prefix "
                                               "of 8+ characters); repeat for more")],
    reason: Annotated[str, typer.Option(help="why the finding is accepted")],
    owner: Annotated[str, typer.Option(help="who answers for the waiver")],
    expires: Annotated[str, typer.Option(metavar="YYYY-MM-DD", help="the last day it applies")],
    output: Annotated[Path | None, typer.Option("-o", "--output", help="append to this waivers "
                                                "file (default: stdout)")] = None,
) -> None:
    r"""Write waiver stanzas for findings of a saved audit (the \[scan] waivers file's format)."""
    from auditor.outputs import write_stdout
    from auditor.redaction import redacted_text
    from auditor.waive import WaiverRequest, parse_expires
    from auditor.waive import waive as write_waivers

    _check_output(output, "-o")
    try:
        req = WaiverRequest(fingerprints=tuple(finding), reason=reason, owner=owner,
                            expires=parse_expires(expires))
        text = write_waivers(audit_json, req, output)
    except AuditError as exc:
        _fail(exc)
    if output is None or str(output) == "-":
        write_stdout(redacted_text(text))
    else:
        err.print(f"waiver stanza(s) appended to {_escape(str(output))}")


keys_app = typer.Typer(no_args_is_help=True, help="Local signing keys (offline).")
app.add_typer(keys_app, name="keys")
attest_app = typer.Typer(no_args_is_help=True, help="Signed attestations (DSSE envelopes).")
app.add_typer(attest_app, name="attest")


@keys_app.command("generate")
def keys_generate(
    out: Annotated[Path, typer.Option("--out", help="the folder for audit.key (0600) and "
                                      "audit.pub")],
    algorithm: Annotated[str, typer.Option(help="ed25519 or ecdsa-p256")] = "ed25519",
) -> None:
    """Make a signing key pair: audit.key (private, mode 0600) and audit.pub."""
    from auditor.attest.keys import Algorithm, generate

    try:
        try:
            chosen = Algorithm(algorithm)
        except ValueError:
            raise InputError(f"--algorithm {algorithm!r}: expected ed25519 or "
                             "ecdsa-p256") from None
        made = generate(out, chosen)
    except AuditError as exc:
        _fail(exc)
    err.print(f"{made.algorithm.value} key {made.keyid}\n  private: {_escape(str(made.private))}"
              f" (0600; keep it secret)\n  public:  {_escape(str(made.public))}")


@attest_app.command("verify")
def attest_verify(
    file: Annotated[Path, typer.Argument(help="a *.intoto.jsonl envelope")],
    key: Annotated[Path, typer.Option("--key", help="the public key (audit.pub)")],
    subject: Annotated[Path | None, typer.Option(help="the file (or folder) the statement must "
                                                 "be about")] = None,
    spec: Annotated[Path | None, typer.Option(help="for a verification summary: the spec whose "
                                              "policy files it must have been judged by")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the verified statement")] = False,
) -> None:
    """Verify a signed attestation: signature, payload type, subject digest, VSA policy."""
    from auditor.attest.keys import load_verifying_key
    from auditor.attest.verify import verify_file

    try:
        public = load_verifying_key(key)
        loaded = _load(spec) if spec is not None else None
        done = verify_file(file, public, subject=subject, spec=loaded)
    except AuditError as exc:
        _fail(exc)
    if as_json:
        write_stdout(dump_json(done.statement))
    err.print(f"[green]verified[/green]: {_escape(str(file))} signed by key {done.keyid}; "
              f"{_escape(done.predicate_type)}")
    for line in (*(f"subject {s}" for s in done.subjects), *done.checked):
        err.print(f"  {_escape(line)}")


osv_app = typer.Typer(no_args_is_help=True, help="Offline vulnerability data (OSV).")
app.add_typer(osv_app, name="osv")


@osv_app.command("fetch")
def osv_fetch(
    out: Annotated[Path, typer.Option("--out", help="where the zip goes (plus FILE.meta.json)")],
    ecosystem: Annotated[str, typer.Option(help="OSV ecosystem name")] = "PyPI",
    url: Annotated[str | None, typer.Option(help="download from this mirror instead of OSV's "
                                            "bucket")] = None,
) -> None:
    """Download the OSV archive of an ecosystem (online, explicit), check it, record its digest."""
    from auditor.deps.vulns.fetch import fetch_osv

    try:
        res = fetch_osv(out, ecosystem=ecosystem, url=url)
    except AuditError as exc:
        _fail(exc)
    m = res.meta
    err.print(f"{_escape(str(res.path))}: {m['records']} records, newest {_escape(str(m['date']))}"
              f", sha256 {m['sha256']}; recorded in {_escape(res.sidecar.name)}")
    write_stdout(dump_json(m))


@app.command()
def demo(
    out: Annotated[Path, typer.Option("--out", help="where the example and its audit go")] = Path(
        "demo-out"),
    cache: CacheOpt = None,
) -> None:
    """Make the embedded example (upstream, hostile fork, bundle, wheel) and audit it."""
    from auditor.demo import run_demo

    try:
        code = run_demo(out, _options(reproducible=False, cache=cache), err)
    except AuditError as exc:
        _fail(exc)
    raise typer.Exit(code)


review_app = typer.Typer(no_args_is_help=True, help="Human review: packets, sign-offs, coverage.")
app.add_typer(review_app, name="review")


@review_app.command("plan")
def review_plan(
    spec: SpecArg,
    reviewers: Annotated[int | None, typer.Option("--reviewers", help="how many reviewers")] = None,
    reviewer: Annotated[list[str] | None, typer.Option("--reviewer", help="a reviewer's name "
                                                       "(repeat)")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="where the packets and plan.json go "
                                             "(default review-packets; with --json, nothing is "
                                             "written unless --out is given)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the plan as JSON")] = False,
    scan: Annotated[bool | None, typer.Option("--scan/--no-scan", help=_lit(
        "run verify + scan to show findings in the packets (default: when the spec has "
        "[scan])"))] = None,
    cache: CacheOpt = None,
) -> None:
    """Split the series' changed hunks by area across reviewers; write one packet each."""
    from auditor.review import commands
    from auditor.review.plan import reviewer_names

    try:
        loaded = _load(spec)
        wanted: list[str] | int
        if reviewer:
            wanted = list(reviewer_names(reviewers, reviewer))
        else:
            reviewer_names(reviewers, [], hunks=0)  # N >= 1, checked before any work
            wanted = reviewers or 1  # capped at the hunk count once the series is read
        plan, written = commands.plan(loaded, wanted, out, options=_options(cache=cache),
                                      scan=loaded.scan is not None if scan is None else scan,
                                      write=out is not None or not as_json)
    except AuditError as exc:
        _fail(exc)
    if as_json:
        write_stdout(dump_json(plan.to_json()))
    for w in plan.series.warnings:
        err.print(f"[yellow]warning:[/yellow] {_escape(w)}")
    for p in plan.packets:
        err.print(f"{_escape(p.reviewer)}: {len(p.hunks)} hunk(s), {p.lines} line(s) — "
                  f"{_escape(', '.join(p.areas) or 'nothing')}")
    if not reviewer and reviewers is not None and reviewers > len(plan.packets):
        err.print(f"[yellow]note:[/yellow] --reviewers {reviewers}: the series has "
                  f"{len(plan.series.hunks)} hunk(s), so {len(plan.packets)} packet(s) were made")
    where = (f"packets in {_escape(str(written[-1].parent))}" if written else
             "no packets written (--json without --out)")
    err.print(f"{plan.lines_total} changed line(s) in {len(plan.series.hunks)} hunk(s); {where}")


@review_app.command("sign")
def review_sign(
    spec: SpecArg,
    reviewer: Annotated[str, typer.Option("--reviewer", help="who signs")],
    hunk: Annotated[list[str] | None, typer.Option("--hunk", help="a hunk id (repeat)")] = None,
    all_of: Annotated[str | None, typer.Option("--all-of", help="sign every hunk of NAME's "
                                               "packet")] = None,
    verdict: Annotated[str, typer.Option("--verdict", help="ok, concern or blocker")] = "ok",
    note: Annotated[str, typer.Option("--note", help="what the reviewer found")] = "",
    plan_file: Annotated[Path | None, typer.Option("--plan", help="plan.json for --all-of "
                                                   "(default review-packets/plan.json)")] = None,
) -> None:
    """Record a sign-off in the reviews file (appended; the file is locked while writing)."""
    from auditor.errors import InputError
    from auditor.review import commands
    from auditor.review.signoffs import ReviewVerdict

    try:
        try:
            chosen = ReviewVerdict(verdict)
        except ValueError:
            raise InputError(f"--verdict {verdict!r}: expected ok, concern or blocker") from None
        signed = commands.sign(_load(spec), reviewer, hunk or [], all_of, chosen, note, plan_file)
    except AuditError as exc:
        _fail(exc)
    for s in signed.signoffs:
        err.print(f"signed {s.hunk} ({_escape(s.path)}) as {s.verdict.value}")
    if signed.skipped:
        err.print(f"[yellow]{len(signed.skipped)} hunk(s) of the packet are no longer in the "
                  "series and were not signed[/yellow]")
    err.print(f"{len(signed.signoffs)} sign-off(s) appended to {_escape(str(signed.file))}")


@review_app.command("status")
def review_status(spec: SpecArg, as_json: Annotated[bool, typer.Option(
        "--json", help="print the coverage as JSON")] = False) -> None:
    """Review coverage by area and reviewer; concerns, blockers and void sign-offs."""
    from auditor.review import commands

    try:
        loaded = _load(spec)
        cov, series = commands.status(loaded)
        data = commands.status_json(cov, series, loaded)
    except AuditError as exc:
        _fail(exc)
    if as_json:
        write_stdout(dump_json(data))
    err.print(_escape(data["summary"]))
    for name, a in data["by_area"].items():
        err.print(f"  {_escape(name):<12} {a['lines_signed']:>6} / {a['lines_total']:<6} lines, "
                  f"{a['hunks_unreviewed']} hunk(s) unreviewed")
    for name, r in data["by_reviewer"].items():
        err.print(f"  {_escape(name)}: {r['hunks']} hunk(s), {r['lines']} line(s) "
                  f"(ok {r['ok']}, concern {r['concern']}, blocker {r['blocker']})")
    for kind in ("blockers", "concerns"):
        for c in data[kind]:
            err.print(f"  {kind[:-1]}: {c['hunk']} {_escape(c['path'])} by {_escape(c['reviewer'])}"
                      f": {_escape(c['note'])}")
    for v in data["void"]:
        err.print(f"  [yellow]void[/yellow]: {v['hunk']} by {_escape(v['reviewer'])}: "
                  f"{_escape(v['why'])}")


def main() -> None:
    """The entry point: exit 0/1 from a verdict, 2 for bad input or usage, 3 when something could
    not be checked or the tool itself failed (never a bare traceback), 130/143 when interrupted."""
    from auditor.interrupt import EXIT_INTERRUPTED, EXIT_TERMINATED, Terminated, raise_on_sigterm

    raise_on_sigterm()
    try:
        code = app(standalone_mode=False)
    except _CLICK_ERROR as exc:  # usage errors: exit 2, as click does
        _show_usage_error(exc)
        sys.exit(getattr(exc, "exit_code", EXIT_USAGE))
    except typer.Abort:  # EOF on a prompt
        err.print("aborted")
        sys.exit(EXIT_USAGE)
    except AuditError as exc:  # pragma: no cover - commands catch their own
        err.print("error: " + "\n".join(_escape(line) for line in exc.diagnostic_lines()))
        sys.exit(exc.exit_code)
    except Terminated:
        err.print("[yellow]terminated (SIGTERM): stopped, temporary files removed, nothing "
                  "was checked to the end[/yellow]")
        sys.exit(EXIT_TERMINATED)
    except KeyboardInterrupt:
        err.print("[yellow]interrupted[/yellow]")
        sys.exit(EXIT_INTERRUPTED)
    except Exception as exc:  # a bug: incomplete (exit 3), never exit 1, which is a verdict
        if _state["verbose"]:
            traceback.print_exc()
        err.print(f"[red]internal error:[/red] {_escape(f'{type(exc).__name__}: {exc}')} — "
                  "nothing was checked to the end (run with -v for the traceback)")
        sys.exit(EXIT_INCOMPLETE)
    sys.exit(code if isinstance(code, int) else 0)


#: click's usage-error root, found through typer (which may carry its own copy of click)
_CLICK_ERROR: type[Exception] = next(c for c in typer.BadParameter.__mro__
                                     if c.__name__ == "ClickException")


def _show_usage_error(exc: Any) -> None:
    try:
        from typer import rich_utils

        rich_utils.rich_format_error(exc)
    except Exception:  # an older typer: click's own rendering
        exc.show()
