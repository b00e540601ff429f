"""AuditResults built by hand for the report tests: a realistic one and a hostile one."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from support import check_golden as _check_golden
from support import mask_golden
from typed_results import (
    build_data,
    built_wheel,
    decl,
    deps_data,
    module,
    sbom_data,
    scan_data,
    unit_data,
    verify_data,
    vuln,
)

from auditor.model import (
    Action,
    AuditResult,
    Category,
    Finding,
    SeriesCommit,
    Severity,
    StageResult,
    StageStatus,
    compute_verdict,
)
from auditor.results.deps import SourceRecord
from auditor.results.scan import CacheTally
from auditor.results.verify import CommitRecord

C1, C2, C3 = "1" * 39 + "a", "2" * 39 + "b", "3" * 39 + "c"
UPSTREAM = "0" * 39 + "d"
SECRET = "sk-live0123456789abcdefghij"
HOSTILE = "<script>alert(1)</script> [x](javascript:alert(1)) \x1b]8;;http://evil.example\x07click\x1b]8;;\x07 ::error::pwn\r\nline2"


def finding(**kw: Any) -> Finding:
    base: dict[str, Any] = dict(
        rule="network.python.requests", category=Category.NETWORK, severity=Severity.HIGH,
        action=Action.BLOCK, path="engine/telemetry.py", line=4, commit=C2,
        message="outbound HTTP request", scanner="semgrep", fingerprint="a" * 32,
        snippet="requests.post(URL, json=payload)\n")
    base.update(kw)
    return Finding(**base)


def commit(sha: str, subject: str, index: int, **kw: Any) -> dict[str, Any]:
    c = {"sha": sha, "tree": "e" * 40, "parents": [UPSTREAM], "subject": subject,
         "message": subject + "\n", "author_name": "Fork Author",
         "author_email": "fork@community.example", "author_date": f"2026-01-0{index}T00:00:00+00:00",
         "committer_name": "Fork Author", "committer_email": "fork@community.example",
         "committer_date": f"2026-01-0{index}T00:00:00+00:00", "patch_id": str(index) * 40,
         "stats": {"files": index, "insertions": 10 * index, "deletions": index}}
    c.update(kw)
    return c


def verify_stage(commits: list[dict[str, Any]], *, ok: bool = True) -> StageResult:
    data = verify_data(
        [CommitRecord(SeriesCommit.from_json(c), c.get("stats")) for c in commits], ok=ok,
        upstream_commit=UPSTREAM, bundle_tree="e" * 40 if ok else "9" * 40,
        differences=[] if ok else [{"path": "engine/extra.py", "change": "added", "size": 12}],
        anomalies=[{"kind": "binary", "path": "libs/blob.so", "detail": "ELF shared object"}])
    return StageResult("verify", StageStatus.OK if ok else StageStatus.FAILED, data,
                       reasons=() if ok else ("bundle tree differs from the replayed series",))


def rich_audit() -> AuditResult:
    """Three commits: one benign, one hostile (block + waived), one with a review finding; deps
    with a vulnerability; build, sbom, unit; nothing incomplete."""
    commits = [commit(C1, "Refactor server options", 1),
               commit(C2, "Add usage statistics", 2),
               commit(C3, "Faster tokenizer loading", 3)]
    scan_findings = (
        finding(),
        finding(rule="secret-access.env", category=Category.SECRET_ACCESS, line=2,
                message="reads HF_TOKEN", fingerprint="b" * 32,
                snippet=f"hf = os.environ['HF_TOKEN']\napi_key = \"{SECRET}\"\n", end_line=3),
        finding(rule="process-exec.subprocess", category=Category.PROCESS_EXEC,
                severity=Severity.MEDIUM, action=Action.REVIEW, path="engine/tokenizer.py",
                line=10, commit=C3, message="runs a subprocess", fingerprint="c" * 32,
                snippet="subprocess.run(['nproc'])\n"),
        finding(rule="filesystem.tmp", category=Category.FILESYSTEM, severity=Severity.LOW,
                action=Action.REVIEW, path="engine/cache.py", line=0, commit=None,
                inherited=True, message="fixed name in /tmp", fingerprint="d" * 32, snippet="",
                waived=True, waiver="upstream behaviour, tracked upstream"),
    )
    stages = {
        "verify": verify_stage(commits),
        "scan": StageResult("scan", StageStatus.OK, scan_data(
            checked_files=("engine/telemetry.py", "engine/tokenizer.py"),
            scanners={"semgrep": "1.185.0", "bandit": "1.9.4"}, cache=CacheTally(0, 2, {})),
            findings=scan_findings),
        "deps": StageResult("deps", StageStatus.OK, deps_data(
            added=(decl("orjson", specifier="==3.10.0"),),
            changed=({"name": "fastapi", "old": "==0.110.0", "new": "==0.111.0"},),
            vulnerabilities=(vuln("GHSA-xxxx-yyyy-zzzz", "orjson", "3.10.0",
                                  aliases=["CVE-2026-0001"], fixed=["3.10.1"],
                                  severity="HIGH"),),
            source=SourceRecord(kind="osv-snapshot", digest="ab" * 32, date="2026-11-01",
                                records=None, location=None)),
            findings=(finding(rule="dependency.vulnerable", category=Category.DEPENDENCY,
                              severity=Severity.HIGH, action=Action.REVIEW,
                              path="requirements.txt", line=3, commit=C3,
                              message="orjson 3.10.0 has GHSA-xxxx-yyyy-zzzz",
                              scanner="osv", fingerprint="e" * 32, snippet=""),)),
        "build": StageResult("build", StageStatus.OK, build_data(
            wheel=built_wheel("engine-1.0.0-cp311-linux_x86_64.whl", "cd" * 32),
            modules=(module("engine._C", sources=["csrc/kernel.cu"]),),
            reproducible=True,
            origins={"a.py": {"origin": "official"}, "b.py": {"origin": "official"},
                     "c.py": {"origin": "audited-source"},
                     "engine/_C.so": {"origin": "built"}})),
        "sbom": StageResult("sbom", StageStatus.OK, sbom_data()),
        "unit": StageResult("unit", StageStatus.OK, unit_data("engine.service")),
    }
    verdict, reasons = compute_verdict(stages.values())
    return AuditResult(verdict, reasons, stages, tool={"name": "auditor", "version": "9.9.9"},
                       inputs={"spec": "/somewhere/audit.toml",
                               "engine": {"profile": "engine", "package": "engine",
                                          "version": "1.0.0"},
                               "upstream": {"repo": "/x/engine", "ref": "v1.0.0", "commit": None},
                               "patches": {"repo": "/x/engine", "ref": "series",
                                           "commits": [C1, C2, C3]},
                               "bundle": "/x/bundle"})


def hostile_audit() -> AuditResult:
    """Hostile text everywhere the bundle controls it, a secret in a snippet, an incomplete stage."""
    commits = [commit(C1, "fix " + HOSTILE, 1, author_name="Evil <img src=x onerror=alert(1)>",
                      message=f"fix it\n\nbody {HOSTILE}\napi_key={SECRET}\n")]
    f = finding(path="engine/<script>x</script>,a:b.py", commit=C1, message="msg " + HOSTILE,
                snippet=f"x = 1  # {HOSTILE}\napi_key = \"{SECRET}\"\n", line=1, end_line=2,
                waived=False)
    w = finding(path="[x](javascript:alert(1)).py", commit=C1, fingerprint="f" * 32,
                waived=True, waiver="because " + HOSTILE, line=0)
    stages = {
        "verify": verify_stage(commits),
        "scan": StageResult("scan", StageStatus.OK, scan_data(), findings=(f, w)),
        "deps": StageResult("deps", StageStatus.INCOMPLETE,
                            not_checked=(f"osv snapshot missing {HOSTILE}",)),
        "build": StageResult.not_requested("build"),
    }
    verdict, reasons = compute_verdict(stages.values())
    return AuditResult(verdict, reasons, stages, tool={"name": "auditor", "version": "9.9.9"},
                       inputs={"engine": {"profile": "engine", "version": "1.0.0"}})


class Doc(HTMLParser):
    """Checks that every element is closed in order (a well-formed page)."""

    VOID = {"meta", "br", "hr", "img", "input", "link"}

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
        else:
            self.stack.pop()


# ---------------------------------------------------------------- golden files

GOLDEN = Path(__file__).parent / "golden"


def check_golden(name: str, text: str, golden_dir: Path = GOLDEN) -> None:
    _check_golden(golden_dir, name, mask_golden(text))
