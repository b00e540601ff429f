"""``auditor gate SPEC --baseline OLD/audit.json``: audit the upgrade, decide it against the baseline.

The baseline is loaded and checked first (a bad one stops with exit 2 before anything runs); then
the full audit of the new version is written to ``out``; then gate.json and gate.md are added to it,
the range-diff summary goes to stderr and, with ``--json``, gate.json to stdout.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from auditor.gate.baseline import check_fits, load_baseline
from auditor.gate.render import gate_json, gate_markdown, print_gate
from auditor.gate.result import GateResult, decide
from auditor.model import exit_code_for
from auditor.outputs import write_audit_file, write_stdout
from auditor.spec import Spec
from auditor.stage import Options, stderr_console
from auditor.textsafe import console_safe


def write_gate(g: GateResult, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, text in (("gate.json", gate_json(g)), ("gate.md", gate_markdown(g))):
        write_audit_file(out / name, text)


def run_gate(spec: Spec, baseline: Path, out: Path, options: Options, as_json: bool,
             console: Console | None = None, key_file: Path | None = None) -> int:
    from auditor.attest.companion import Companion, check_companion
    from auditor.attest.keys import audit_signing_key
    from auditor.attest.sign import sign_gate
    from auditor.errors import BaselineError
    from auditor.pipeline import audit as run_audit

    console = console or stderr_console()
    signer = audit_signing_key(spec, key_file)  # a bad key: exit 2 before anything runs
    old = load_baseline(baseline)
    check_fits(old, spec, baseline)
    # a signed baseline must still be what was signed (checked with the team's key when given)
    signed = check_companion(baseline, signer.verifying_key() if signer else None)
    if signed.state is Companion.BROKEN:
        raise BaselineError(f"baseline {signed.message}",
                            hint="gate against the audit.json that was approved and signed")
    if signed.state is not Companion.ABSENT:
        console.print(f"baseline: {console_safe(signed.message)}")
    new = run_audit(spec, options, out, inputs=[baseline], key_file=key_file)
    g = decide(old, new, baseline_path=str(baseline))
    write_gate(g, out)
    if signer is not None:
        name = sign_gate(out, spec, g.verdict, new, baseline, signer,
                         reproducible=options.reproducible)
        console.print(f"signed: {name} (key {signer.keyid})")
    print_gate(console, g)
    if as_json:
        write_stdout(gate_json(g))
    return exit_code_for(g.verdict, options.fail_on)
