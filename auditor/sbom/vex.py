"""What the audit can say about each known vulnerability the deps stage found (VEX).

Only what auditor knows for a reason it can name:

* the package is not on the deployed surface (neither the lock nor a deployed declaration names
  it): ``not_affected`` with ``component_not_present``;
* a reviewer waived it: the state the waiver states (``vex_state``, with its justification), or,
  when it states none, ``affected`` with the risk accepted; the waiver's reason and owner are
  carried either way;
* otherwise ``affected``, with the fixed versions as the action.

Never ``vulnerable_code_not_in_execute_path``: auditor runs no reachability analysis. The same
judgements feed the SBOM's ``vulnerabilities[].analysis`` and ``vex.openvex.json``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from packaging.utils import canonicalize_name

from auditor.policy import Justification, VexStatus, Waiver
from auditor.sbom.inputs import DepsInfo, Vulnerability


class Basis(StrEnum):
    """Why the judgement is what it is."""

    SURFACE = "surface"  # the package is not deployed
    WAIVER = "waiver"  # a reviewer's waiver
    FOUND = "found"  # a deployed version is affected


@dataclass(frozen=True)
class VexJudgement:
    vuln: Vulnerability
    status: VexStatus
    basis: Basis
    justification: Justification | None
    impact: str | None  # why not affected (free text), for not_affected
    action: str | None  # what to do, for affected
    detail: str  # one sentence for the SBOM's analysis.detail
    waiver: Waiver | None = None


def deployed_names(deps: DepsInfo) -> frozenset[str]:
    """Canonical names of what reaches the server: the lock's packages, else the deployed
    declarations (both are what :func:`~auditor.sbom.inputs.read_deps` lists)."""
    return frozenset(str(canonicalize_name(d.name)) for d in deps.dependencies)


def waivers_by_label(waivers: Iterable[Waiver]) -> dict[str, tuple[Waiver, ...]]:
    out: dict[str, list[Waiver]] = {}
    for w in waivers:
        out.setdefault(w.label, []).append(w)
    return {k: tuple(v) for k, v in out.items()}


def judge(deps: DepsInfo, waivers: Mapping[str, Sequence[Waiver]] | None = None
          ) -> tuple[VexJudgement, ...]:
    """One judgement per vulnerability of ``deps``, in its order."""
    present = deployed_names(deps)
    return tuple(_judge(v, present, waivers or {}) for v in deps.vulnerabilities)


def _fix_action(v: Vulnerability) -> str:
    if v.fixed:
        return f"upgrade {v.package} to {' or '.join(v.fixed)} or later"
    return f"no fixed version of {v.package} is known: remove or replace it, or mitigate"


def _judge(v: Vulnerability, present: frozenset[str],
           waivers: Mapping[str, Sequence[Waiver]]) -> VexJudgement:
    where = f"{v.package}" + (f" {v.version}" if v.version else "")
    if str(canonicalize_name(v.package)) not in present:
        text = (f"{v.package} is not on the deployed surface (no deployed declaration or lock "
                "entry names it): the deployed product does not contain it")
        return VexJudgement(v, VexStatus.NOT_AFFECTED, Basis.SURFACE,
                            Justification.COMPONENT_NOT_PRESENT, text, None, text)
    if v.waived:
        return _waived(v, where, waivers.get(v.waiver or "", ()))
    action = _fix_action(v)
    return VexJudgement(v, VexStatus.AFFECTED, Basis.FOUND, None, None, action,
                        f"{where} is deployed and affected; {action}")


def _waived(v: Vulnerability, where: str, matching: Sequence[Waiver]) -> VexJudgement:
    label = v.waiver or "(the waiver gave no reason)"
    states = {(w.vex_state, w.vex_justification) for w in matching}
    waiver = matching[0] if len(states) == 1 and matching else None
    who = f"waived by {waiver.owner}: {waiver.reason}" if waiver else f"waived: {label}"
    state = waiver.vex_state if waiver is not None else None
    if state is None:
        # the waiver accepts the risk; it does not say the product is unaffected
        action = f"risk accepted by a reviewer ({label}); {_fix_action(v)}"
        note = (" (waivers with this reason disagree on the VEX state: affected is kept)"
                if len(states) > 1 else "")
        return VexJudgement(v, VexStatus.AFFECTED, Basis.WAIVER, None, None, action,
                            f"{where} is deployed and affected; {who}{note}", waiver)
    assert waiver is not None
    status = VexStatus(state)
    just = Justification(waiver.vex_justification) if waiver.vex_justification else None
    if status is VexStatus.NOT_AFFECTED:
        return VexJudgement(v, status, Basis.WAIVER, just, f"{who} ({label})", None,
                            f"{where}: not affected, as the reviewer's waiver states; {who}",
                            waiver)
    stated = (f"as the reviewer's waiver states ({label}); {_fix_action(v)}"
              if status is VexStatus.AFFECTED else None)
    return VexJudgement(v, status, Basis.WAIVER, None, None, stated,
                        f"{where}: {status.value.replace('_', ' ')}, as the reviewer's waiver "
                        f"states; {who}", waiver)
