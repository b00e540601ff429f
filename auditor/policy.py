"""The policy (category and path -> action) and the waivers, both TOML files.

``policies/default.toml``::

    [actions]                 # every category of model.Category may appear
    network = "block"
    [[override]]              # first match wins; paths are fnmatch globs on the bundle path
    category = "process-exec"
    paths = ["scripts/**", "tools/**"]
    action = "review"
    [[override]]              # rule: a rule id, or an fnmatch glob over rule ids
    rule = "dependency.*.package-source.new-host"
    action = "block"

``waivers.toml``::

    [[waiver]]
    rule = "network.python.requests"
    path = "engine/metrics.py"
    fingerprint = "…"          # from the finding; "*" only together with a path
    reason = "posts to our own Prometheus push gateway"
    owner = "alice@example.org"
    expires = 2027-03-31
    vex_state = "not_affected"   # optional, for a waived vulnerability: what the VEX says
    vex_justification = "vulnerable_code_not_present"   # optional, only with not_affected

A waived finding stays visible with ``waived = true``; an expired waiver does not apply and is itself
a blocking finding of category ``policy``. Waivers apply to the findings of every stage (the pipeline
applies them after each stage, :func:`apply_waivers` is idempotent); a waiver that matches no finding
of a whole audit is reported as an info finding ``policy.waiver-unused`` (:func:`unused_waivers`), so
stale waivers are seen. A scan finding merged from several rules on one line (``Finding.also``) is
waived as one: a waiver of the finding the report shows covers the rules merged into it
(:mod:`auditor.scan.merge`).
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from auditor.errors import SpecError
from auditor.inputs import read_input_text
from auditor.model import Action, Category, Finding, Severity, fingerprint_of
from auditor.spec import POLICIES_DIR, Spec

EXPIRED_RULE = "policy.waiver-expired"
UNUSED_RULE = "policy.waiver-unused"


@dataclass(frozen=True)
class Override:
    category: Category | None
    paths: tuple[str, ...]
    rule: str | None
    action: Action


@dataclass(frozen=True)
class Policy:
    path: Path
    actions: Mapping[Category, Action]
    overrides: tuple[Override, ...]
    allow_merges: bool = False

    def action_for(self, category: Category, path: str, rule: str | None = None) -> Action:
        for o in self.overrides:
            if o.category is not None and o.category is not category:
                continue
            if o.rule is not None and (rule is None or not fnmatch.fnmatchcase(rule, o.rule)):
                continue
            if o.paths and not any(fnmatch.fnmatch(path, g) for g in o.paths):
                continue
            return o.action
        return self.actions.get(category, Action.REVIEW)  # unknown -> a human looks

    def apply(self, findings: Iterable[Finding]) -> list[Finding]:
        return [f.with_action(self.action_for(f.category, f.path, f.rule)) for f in findings]


def _load(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(read_input_text(path, "file"))
    except FileNotFoundError:
        raise SpecError("file not found", file=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"cannot be read: {exc}", file=str(path)) from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"malformed TOML: {exc}", file=str(path)) from None
    except RecursionError:
        raise SpecError("malformed TOML: nested too deeply", file=str(path)) from None


def _enum(enum: Any, value: Any, file: Path, key: str) -> Any:
    try:
        return enum(value)
    except ValueError:
        allowed = ", ".join(m.value for m in enum)
        raise SpecError(f"expected one of {allowed}, got {value!r}", file=str(file),
                        key=key) from None


def load_policy(path: Path) -> Policy:
    doc = _load(path)
    for key in doc:
        if key not in ("actions", "override", "allow_merges"):
            raise SpecError("unknown key", file=str(path), key=key)
    actions_raw = doc.get("actions", {})
    if not isinstance(actions_raw, dict):
        raise SpecError("expected a table", file=str(path), key="actions")
    actions = {_enum(Category, k, path, f"actions.{k}"): _enum(Action, v, path, f"actions.{k}")
               for k, v in actions_raw.items()}
    overrides = []
    for i, o in enumerate(doc.get("override", [])):
        where = f"override[{i}]"
        if not isinstance(o, dict):
            raise SpecError("expected a table", file=str(path), key=where)
        unknown = set(o) - {"category", "paths", "rule", "action"}
        if unknown:
            raise SpecError("unknown key", file=str(path), key=f"{where}.{sorted(unknown)[0]}")
        if "action" not in o:
            raise SpecError("missing; expected block, review or info", file=str(path),
                            key=f"{where}.action")
        paths = o.get("paths", [])
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise SpecError("expected a list of globs", file=str(path), key=f"{where}.paths")
        overrides.append(Override(
            category=_enum(Category, o["category"], path, f"{where}.category")
            if "category" in o else None,
            paths=tuple(paths),
            rule=str(o["rule"]) if "rule" in o else None,
            action=_enum(Action, o["action"], path, f"{where}.action"),
        ))
    allow = doc.get("allow_merges", False)
    if not isinstance(allow, bool):
        raise SpecError("expected true or false", file=str(path), key="allow_merges")
    return Policy(path=path, actions=actions, overrides=tuple(overrides), allow_merges=allow)


@dataclass(frozen=True)
class Waiver:
    rule: str
    path: str
    fingerprint: str
    reason: str
    owner: str
    expires: dt.date
    #: for a waived vulnerability, the VEX status the reviewer states (see :data:`VEX_STATES`);
    #: None: the waiver accepts the risk, the VEX says "affected" and carries the waiver
    vex_state: str | None = None
    vex_justification: str | None = None  # one of :data:`VEX_JUSTIFICATIONS`, with not_affected

    @property
    def label(self) -> str:
        """How a waived finding names its waiver (``Finding.waiver``)."""
        return f"{self.reason} ({self.owner}, until {self.expires.isoformat()})"

    def matches(self, f: Finding) -> bool:
        return (self.rule == f.rule and fnmatch.fnmatch(f.path, self.path)
                and (self.fingerprint == "*" or self.fingerprint == f.fingerprint))

    def touches(self, f: Finding) -> bool:
        """Whether this waiver names ``f``: it matches it, or (a ``*`` waiver of a path) one of
        the rules merged into it."""
        return self.matches(f) or (self.fingerprint == "*" and self.rule in f.also
                                   and fnmatch.fnmatch(f.path, self.path))

    def describe(self) -> str:
        fp = "any fingerprint" if self.fingerprint == "*" else f"fingerprint {self.fingerprint}"
        return (f"{self.rule} on {self.path} ({fp}; owner {self.owner}, "
                f"expires {self.expires.isoformat()})")


def policy_of(spec: Spec) -> Policy:
    """The policy the spec's ``[scan] policy`` names; ``policies/default.toml`` when the spec has
    no ``[scan]`` table (the build and deps stages still judge their findings by it)."""
    return load_policy(spec.scan.policy if spec.scan is not None else POLICIES_DIR / "default.toml")


def waivers_of(spec: Spec) -> tuple[Waiver, ...]:
    """The waivers the spec's ``[scan] waivers`` names (none without that key or table)."""
    return load_waivers(spec.scan.waivers if spec.scan is not None else None)


def load_waivers(path: Path | None) -> tuple[Waiver, ...]:
    if path is None:
        return ()
    doc = _load(path)
    for key in doc:
        if key != "waiver":
            raise SpecError("unknown key", file=str(path), key=key)
    out = []
    for i, w in enumerate(doc.get("waiver", [])):
        where = f"waiver[{i}]"
        if not isinstance(w, dict):
            raise SpecError("expected a table", file=str(path), key=where)
        unknown = set(w) - {"rule", "path", "fingerprint", "reason", "owner", "expires",
                            "vex_state", "vex_justification"}
        if unknown:
            raise SpecError("unknown key", file=str(path), key=f"{where}.{sorted(unknown)[0]}")
        for key in ("rule", "path", "fingerprint", "reason", "owner"):
            if not isinstance(w.get(key), str) or not w[key].strip():
                raise SpecError("missing or empty; expected a string", file=str(path),
                                key=f"{where}.{key}")
        if w["fingerprint"] == "*" and w["path"] in ("*", "**"):
            raise SpecError('a "*" fingerprint needs a specific path', file=str(path),
                            key=f"{where}.fingerprint")
        expires = w.get("expires")
        if not isinstance(expires, dt.date) or isinstance(expires, dt.datetime):
            raise SpecError("expected a date (YYYY-MM-DD, unquoted)", file=str(path),
                            key=f"{where}.expires")
        state, justification = _vex_fields(w, path, where)
        out.append(Waiver(rule=w["rule"], path=w["path"], fingerprint=w["fingerprint"],
                          reason=w["reason"], owner=w["owner"], expires=expires,
                          vex_state=state, vex_justification=justification))
    return tuple(out)


#: the VEX statuses a waiver may state (OpenVEX v0.2.0 labels)
class VexStatus(StrEnum):
    """The OpenVEX statuses a waiver may state for a vulnerability (and auditor's VEX uses)."""

    NOT_AFFECTED = "not_affected"
    AFFECTED = "affected"
    FIXED = "fixed"
    UNDER_INVESTIGATION = "under_investigation"


class Justification(StrEnum):
    """The OpenVEX justifications auditor (or a reviewer's waiver) may state for not_affected.
    ``vulnerable_code_not_in_execute_path`` is left out on purpose: it claims a reachability
    analysis nobody ran."""

    COMPONENT_NOT_PRESENT = "component_not_present"
    VULNERABLE_CODE_NOT_PRESENT = "vulnerable_code_not_present"
    CANNOT_BE_CONTROLLED = "vulnerable_code_cannot_be_controlled_by_adversary"
    INLINE_MITIGATIONS = "inline_mitigations_already_exist"


VEX_STATES = tuple(s.value for s in VexStatus)
VEX_JUSTIFICATIONS = tuple(j.value for j in Justification)


def _vex_fields(w: Mapping[str, Any], path: Path, where: str) -> tuple[str | None, str | None]:
    state, justification = w.get("vex_state"), w.get("vex_justification")
    if state is not None and state not in VEX_STATES:
        raise SpecError(f"expected one of {', '.join(VEX_STATES)}, got {state!r}",
                        file=str(path), key=f"{where}.vex_state")
    if justification is not None:
        if justification not in VEX_JUSTIFICATIONS:
            extra = (" (it claims a reachability analysis auditor does not make)"
                     if justification == "vulnerable_code_not_in_execute_path" else "")
            raise SpecError(f"expected one of {', '.join(VEX_JUSTIFICATIONS)}, got "
                            f"{justification!r}{extra}", file=str(path),
                            key=f"{where}.vex_justification")
        if state != "not_affected":
            raise SpecError('a justification goes only with vex_state = "not_affected"',
                            file=str(path), key=f"{where}.vex_justification")
    return state, justification


def apply_waivers(findings: Iterable[Finding], waivers: Iterable[Waiver],
                  today: dt.date | None = None) -> list[Finding]:
    """Mark waived findings; add one blocking ``policy`` finding per expired waiver that matched.

    Idempotent: a finding already waived is kept as it is, and an expired waiver's finding that
    is already there is not added again (a stage may have applied the waivers itself before the
    pipeline applies them to every stage's findings).
    """
    today = today or dt.date.today()
    waivers = tuple(waivers)
    findings = list(findings)
    present = {f.fingerprint for f in findings if f.rule == EXPIRED_RULE}
    out: list[Finding] = []
    expired_hits: dict[Waiver, None] = {}
    for f in findings:
        if f.waived:
            out.append(f)
            continue
        live = next((w for w in waivers if w.matches(f) and w.expires >= today), None)
        if live is not None:
            out.append(replace(f, waived=True, waiver=live.label))
            continue
        for w in waivers:
            if w.matches(f) and w.expires < today:
                expired_hits[w] = None
        out.append(f)
    for w in expired_hits:
        expired = Finding(
            rule=EXPIRED_RULE, category=Category.POLICY, severity=Severity.HIGH,
            action=Action.BLOCK, path=w.path, line=0, commit=None,
            message=f"waiver for {w.rule} expired on {w.expires.isoformat()} "
                    f"(owner {w.owner}): re-review and renew or remove it",
            scanner="policy", fingerprint=fingerprint_of(EXPIRED_RULE, w.path,
                                                         w.rule + w.fingerprint),
        )
        if expired.fingerprint not in present:
            present.add(expired.fingerprint)
            out.append(expired)
    return out


def unused_waivers(findings: Iterable[Finding], waivers: Iterable[Waiver], *,
                   partial: bool = False) -> list[Finding]:
    """One info finding (``policy.waiver-unused``) per waiver that names no finding at all
    (waived, expired or not); ``partial``: some stage did not complete, so the waiver may name
    something it did not check (the message says so)."""
    findings = [f for f in findings if f.rule not in (EXPIRED_RULE, UNUSED_RULE)]
    out = []
    for w in dict.fromkeys(waivers):
        if any(w.touches(f) for f in findings):
            continue
        note = ("; not every stage completed, so it may name a finding of what was not checked"
                if partial else "")
        out.append(Finding(
            rule=UNUSED_RULE, category=Category.POLICY, severity=Severity.INFO,
            action=Action.INFO, path=w.path, line=0, commit=None,
            message=f"unused waiver: {w.describe()} matches no finding of this audit; remove it "
                    f"if what it accepted is gone{note}",
            scanner="policy",
            fingerprint=fingerprint_of(UNUSED_RULE, w.path, w.rule + w.fingerprint)))
    return out
