"""The typed values that cross every boundary: findings, stage results, the audit and its verdict.

Everything here is a frozen dataclass or a ``str`` Enum with a JSON round-trip. The audit directory's
``audit.json`` (schema ``auditor/audit/v1``, ``docs/audit.schema.json``) is :class:`AuditResult`
serialised; each stage's own result is a typed :mod:`auditor.results` class in
:attr:`StageResult.data`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

from auditor.errors import EXIT_INCOMPLETE, EXIT_PASS, EXIT_POLICY
from auditor.results.base import StageData

AUDIT_SCHEMA = "auditor/audit/v1"


class Category(StrEnum):
    NETWORK = "network"
    SECRET_ACCESS = "secret-access"
    PROMPT_LOGGING = "prompt-logging"
    UNSAFE_DESERIALIZATION = "unsafe-deserialization"
    TELEMETRY = "telemetry"
    PROCESS_EXEC = "process-exec"
    OBFUSCATION = "obfuscation"
    BINARY_ARTIFACT = "binary-artifact"
    CONTAINER_PRIVILEGE = "container-privilege"
    API_EXPOSURE = "api-exposure"
    FILESYSTEM = "filesystem"
    DEPENDENCY = "dependency"
    # Findings about the audit itself (expired waiver, service lint, proof anomaly).
    POLICY = "policy"
    SERVICE = "service"
    PROVENANCE = "provenance"


class Severity(StrEnum):
    CRITICAL = "critical"
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"
    INFO = "info"


class Action(StrEnum):
    BLOCK = "block"
    REVIEW = "review"
    INFO = "info"


class Verdict(StrEnum):
    PASS = "PASS"
    REVIEW = "REVIEW"
    FAIL = "FAIL"
    INCOMPLETE = "INCOMPLETE"


class StageStatus(StrEnum):
    OK = "ok"
    FAILED = "failed"
    INCOMPLETE = "incomplete"
    NOT_REQUESTED = "not-requested"


class Scope(StrEnum):
    DIFF = "diff"
    FULL = "full"


class FailOn(StrEnum):
    """Which verdicts make the exit code non-zero for policy reasons."""

    REVIEW = "review"
    BLOCK = "block"


STAGES: tuple[str, ...] = ("verify", "scan", "deps", "build", "sbom", "unit", "review")


def fingerprint_of(rule: str, path: str, code: str) -> str:
    """A finding fingerprint stable when lines shift: rule + path + whitespace-normalised code."""
    normalised = " ".join(code.split())
    digest = hashlib.sha256(f"{rule}\0{path}\0{normalised}".encode()).hexdigest()
    return digest[:32]


@dataclass(frozen=True)
class SourceLine:
    """One line of a finding's file, for the reports' diff view of the flagged lines."""

    line: int  # 1-based, in the bundle file
    text: str
    added: bool  # the series wrote it (a listed commit, or a line no commit explains)

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "text": self.text, "added": self.added}

    @classmethod
    def from_json(cls, data: Any) -> SourceLine:
        data = _typed(data, Mapping, "a finding's context line")
        return cls(line=int(_typed(data["line"], int, "context line")),
                   text=str(_typed(data["text"], str, "context text")),
                   added=bool(_typed(data["added"], bool, "context added")))


@dataclass(frozen=True)
class Finding:
    rule: str
    category: Category
    severity: Severity
    action: Action
    path: str
    line: int
    commit: str | None
    message: str
    scanner: str
    fingerprint: str
    inherited: bool = False
    waived: bool = False
    snippet: str = ""
    end_line: int | None = None
    waiver: str | None = None  # reason of the waiver that applies, when waived
    help: str = ""
    also: tuple[str, ...] = ()  # rule ids of other findings of this concern on this line, merged
    #: the flagged lines with up to 3 lines around them, each marked added or not (empty: unknown)
    context: tuple[SourceLine, ...] = ()

    def to_json(self) -> dict[str, Any]:
        extra: dict[str, Any] = {"also": list(self.also)} if self.also else {}
        if self.context:
            extra["context"] = [c.to_json() for c in self.context]
        return {
            "rule": self.rule,
            "category": self.category.value,
            "severity": self.severity.value,
            "action": self.action.value,
            "path": self.path,
            "line": self.line,
            "end_line": self.end_line,
            "commit": self.commit,
            "message": self.message,
            "scanner": self.scanner,
            "fingerprint": self.fingerprint,
            "inherited": self.inherited,
            "waived": self.waived,
            "waiver": self.waiver,
            "snippet": self.snippet,
            "help": self.help,
        } | extra

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Finding:
        data = _typed(data, Mapping, "a finding")
        for key, types in (("commit", (str, type(None))), ("end_line", (int, type(None))),
                           ("waiver", (str, type(None))), ("line", (int,))):
            _typed(data.get(key), types, f"finding {key}")
        return cls(
            rule=str(data["rule"]),
            category=Category(data["category"]),
            severity=Severity(data["severity"]),
            action=Action(data["action"]),
            path=str(data["path"]),
            line=int(data["line"]),
            commit=data.get("commit"),
            message=str(data["message"]),
            scanner=str(data["scanner"]),
            fingerprint=str(data["fingerprint"]),
            inherited=bool(data.get("inherited", False)),
            waived=bool(data.get("waived", False)),
            snippet=str(data.get("snippet", "")),
            end_line=data.get("end_line"),
            waiver=data.get("waiver"),
            help=str(data.get("help", "")),
            also=tuple(str(r) for r in _typed(data.get("also", []), list, "finding also")),
            context=tuple(SourceLine.from_json(c)
                          for c in _typed(data.get("context", []), list, "finding context")),
        )

    @property
    def counts(self) -> bool:
        """Whether this finding weighs in the verdict (waived ones stay visible but do not)."""
        return not self.waived

    def with_action(self, action: Action) -> Finding:
        return replace(self, action=action)


_D = TypeVar("_D", bound=StageData)


@dataclass(frozen=True)
class StageResult:
    """One stage's outcome. ``data`` is the stage's typed result (see :mod:`auditor.results`);
    its JSON plus the keys here is exactly what the stage's own ``--json`` prints."""

    name: str
    status: StageStatus
    data: StageData | None = None  # None: the stage did not run (or stopped before any data)
    findings: tuple[Finding, ...] = ()
    not_checked: tuple[str, ...] = ()  # what could not be checked, one line each
    reasons: tuple[str, ...] = ()  # why the stage failed, one line each

    def data_as(self, cls: type[_D]) -> _D | None:
        """``data`` when it is a ``cls`` (None for a stage that did not run or crashed)."""
        return self.data if isinstance(self.data, cls) else None

    def to_json(self) -> dict[str, Any]:
        out = self.data.to_json() if self.data is not None else {}
        out["status"] = self.status.value
        out["findings"] = [f.to_json() for f in self.findings]
        out["not_checked"] = list(self.not_checked)
        out["reasons"] = list(self.reasons)
        return out

    @classmethod
    def from_json(cls, name: str, data: Mapping[str, Any]) -> StageResult:
        data = _typed(data, Mapping, f"stage {name}")
        rest = {k: v for k, v in data.items()
                if k not in ("status", "findings", "not_checked", "reasons")}
        return cls(
            name=name,
            status=StageStatus(data["status"]),
            data=_stage_data(name, rest),
            findings=tuple(Finding.from_json(f)
                           for f in _typed(data.get("findings", []), list, "findings")),
            not_checked=_strings(data.get("not_checked", []), f"{name}.not_checked"),
            reasons=_strings(data.get("reasons", []), f"{name}.reasons"),
        )

    @classmethod
    def not_requested(cls, name: str) -> StageResult:
        return cls(name=name, status=StageStatus.NOT_REQUESTED)


def _stage_data(name: str, rest: Mapping[str, Any]) -> StageData | None:
    """The typed data of a stage's JSON object: none, a crash's error, or the stage's own."""
    from auditor.results import Crashed, data_class

    if not rest:
        return None
    if set(rest) == {"error"}:
        return Crashed.from_json(rest)
    return data_class(name).from_json(rest)


def compute_verdict(stages: Iterable[StageResult]) -> tuple[Verdict, tuple[str, ...]]:
    """FAIL > INCOMPLETE > REVIEW > PASS, with every reason that led there."""
    fail: list[str] = []
    incomplete: list[str] = []
    review: list[str] = []
    for st in stages:
        if st.status is StageStatus.FAILED:
            fail.extend(f"{st.name}: {r}" for r in (st.reasons or ("stage failed",)))
        elif st.status is StageStatus.INCOMPLETE:
            incomplete.extend(f"{st.name}: not checked: {r}"
                              for r in (st.not_checked or st.reasons or ("stage incomplete",)))
        blocks = [f for f in st.findings if f.action is Action.BLOCK and f.counts]
        reviews = [f for f in st.findings if f.action is Action.REVIEW and f.counts]
        if blocks:
            fail.append(f"{st.name}: {len(blocks)} blocking finding(s): "
                        + ", ".join(sorted({f.rule for f in blocks})))
        if reviews:
            review.append(f"{st.name}: {len(reviews)} finding(s) to review: "
                          + ", ".join(sorted({f.rule for f in reviews})))
    if fail:
        return Verdict.FAIL, tuple(fail + incomplete + review)
    if incomplete:
        return Verdict.INCOMPLETE, tuple(incomplete + review)
    if review:
        return Verdict.REVIEW, tuple(review)
    return Verdict.PASS, ("every requested check ran and nothing needs review",)


def exit_code_for(verdict: Verdict, fail_on: FailOn = FailOn.REVIEW) -> int:
    if verdict is Verdict.PASS:
        return EXIT_PASS
    if verdict is Verdict.FAIL:
        return EXIT_POLICY
    if verdict is Verdict.INCOMPLETE:
        return EXIT_INCOMPLETE
    return EXIT_PASS if fail_on is FailOn.BLOCK else EXIT_POLICY


def status_for(findings: Sequence[Finding], not_checked: Sequence[str],
               reasons: Sequence[str]) -> StageStatus:
    """The usual status rule: reasons mean failed, anything unchecked means incomplete."""
    if reasons:
        return StageStatus.FAILED
    if not_checked:
        return StageStatus.INCOMPLETE
    return StageStatus.OK


@dataclass(frozen=True)
class AuditResult:
    verdict: Verdict
    reasons: tuple[str, ...]
    stages: Mapping[str, StageResult]
    tool: Mapping[str, Any] = field(default_factory=dict)
    inputs: Mapping[str, Any] = field(default_factory=dict)

    @property
    def findings(self) -> tuple[Finding, ...]:
        return tuple(f for name in STAGES if name in self.stages
                     for f in self.stages[name].findings)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": AUDIT_SCHEMA,
            "verdict": self.verdict.value,
            "reasons": list(self.reasons),
            "stages": {name: self.stages[name].to_json() for name in STAGES if name in self.stages},
            "findings": [f.to_json() for f in self.findings],
            "tool": dict(self.tool),
            "inputs": dict(self.inputs),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AuditResult:
        if data.get("schema") != AUDIT_SCHEMA:
            raise ValueError(f"schema is {data.get('schema')!r}, expected {AUDIT_SCHEMA!r}")
        stages = {str(name): StageResult.from_json(str(name), st)
                  for name, st in _typed(data["stages"], Mapping, "stages").items()}
        return cls(
            verdict=Verdict(data["verdict"]),
            reasons=_strings(data.get("reasons", []), "reasons"),
            stages=stages,
            tool=dict(_typed(data.get("tool", {}), Mapping, "tool")),
            inputs=dict(_typed(data.get("inputs", {}), Mapping, "inputs")),
        )


def _typed(value: Any, types: Any, what: str) -> Any:
    """``value`` when it has one of ``types``; a TypeError naming ``what`` otherwise (a saved
    audit.json is read back by report and gate: a wrong type is bad input, not a crash later)."""
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in
                                        (types if isinstance(types, tuple) else (types,))):
        raise TypeError(f"{what} has the wrong type ({type(value).__name__})")
    return value


def _strings(value: Any, what: str) -> tuple[str, ...]:
    items = _typed(value, list, what)
    if not all(isinstance(x, str) for x in items):
        raise TypeError(f"{what} must hold only strings")
    return tuple(items)


# ---------------------------------------------------------------- the verified workspace
# What the verify stage hands to scan, deps, build and sbom (in memory, not in audit.json).


@dataclass(frozen=True)
class SeriesCommit:
    sha: str
    tree: str
    parents: tuple[str, ...]
    subject: str
    message: str
    author_name: str
    author_email: str
    author_date: str  # ISO 8601 with offset
    committer_name: str
    committer_email: str
    committer_date: str
    patch_id: str | None  # `git patch-id --stable`; None for an empty or merge commit

    def to_json(self) -> dict[str, Any]:
        return {
            "sha": self.sha, "tree": self.tree, "parents": list(self.parents),
            "subject": self.subject, "message": self.message,
            "author_name": self.author_name, "author_email": self.author_email,
            "author_date": self.author_date, "committer_name": self.committer_name,
            "committer_email": self.committer_email, "committer_date": self.committer_date,
            "patch_id": self.patch_id,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SeriesCommit:
        return cls(sha=d["sha"], tree=d["tree"], parents=tuple(d["parents"]),
                   subject=d["subject"], message=d["message"], author_name=d["author_name"],
                   author_email=d["author_email"], author_date=d["author_date"],
                   committer_name=d["committer_name"], committer_email=d["committer_email"],
                   committer_date=d["committer_date"], patch_id=d.get("patch_id"))


@dataclass(frozen=True)
class BundleFile:
    path: str  # posix, relative to the bundle root
    mode: str  # git mode: 100644, 100755 or 120000
    size: int
    sha256: str
    blob: str  # git blob sha1 of the content (of the link target for symlinks)


@dataclass(frozen=True)
class Workspace:
    """The verified inputs, ready for the later stages. ``bundle_root`` is a private copy."""

    upstream_repo: Path
    patches_repo: Path
    upstream_commit: str
    upstream_tree: str
    head_commit: str
    head_tree: str
    expected_tree: str | None  # the replayed tree, None when the series did not apply
    commits: tuple[SeriesCommit, ...]  # the listed commits that exist, in the listed order
    bundle_root: Path
    bundle_tree: str
    manifest: Mapping[str, BundleFile]
    proof_ok: bool
    #: the other upstream commits (``[upstream] also``, resolved): what they reach is upstream's
    upstream_also: tuple[str, ...] = ()
    #: listed commits that are upstream's commits applied again (same patch-id) -> upstream's sha
    upstream_picks: Mapping[str, str] = field(default_factory=dict)
    #: where later stages read bundle files (auditor.provenance.bundlefiles.bundle_files): the
    #: proven git objects when the proof came from the cache (then ``bundle_root`` exists only once
    #: a stage asks for the folder), else the unpacked copy at ``bundle_root``. Typed loosely so
    #: that this module imports nothing of provenance/: ``bundle_files`` checks its type
    files: object | None = field(default=None, compare=False, repr=False)

    @property
    def series_revs(self) -> tuple[str, ...]:
        """The series as git revisions: the head, not upstream, nor the other upstream commits
        (``git log``/``blame`` arguments; ``upstream..head`` when there are none)."""
        return (self.head_commit, f"^{self.upstream_commit}",
                *(f"^{c}" for c in self.upstream_also))
