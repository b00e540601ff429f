"""The demo's report: every hostile commit shows up with its findings, the benign ones clean.

Runs the embedded example's verify, scan and deps stages (real git, semgrep, bandit, the offline OSV
snapshot) once for the module; the build is left out to keep the suite quick.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from reportcases import Doc

from auditor.demo import prepare
from auditor.demo_files import SERIES
from auditor.pipeline import run_pipeline
from auditor.report.html import HtmlFormatter
from auditor.report.markdown import MarkdownFormatter
from auditor.spec import load_spec
from auditor.stage import Options

BENIGN = ("kernels: rmsnorm", "server: move request validation")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("demo") / "example"
    spec = load_spec(prepare(root))
    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as work:
        mp.setenv("AUDITOR_CACHE", str(tmp_path_factory.getbasetemp() / "auditor-cache"))
        mp.setenv("SEMGREP_ENABLE_VERSION_CHECK", "0")
        (Path(work) / "out").mkdir()
        audit, _ = run_pipeline(spec, Options(), ["scan", "deps"], Path(work) / "out",
                                Path(work))
    return {"audit": audit, "md": MarkdownFormatter().render(audit),
            "html": HtmlFormatter().render(audit)}


def commit_rows(md: str) -> dict[str, str]:
    section = md[md.index("## Findings by commit"):md.index("## Findings by category")]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.split("|")[1:-1]]
        if len(cells) == 6 and cells[0].isdigit():
            rows[cells[2].replace("\\", "")] = cells[4]
    return rows


def test_report_demo_hostile_commits_have_findings_benign_are_clean(demo: dict[str, Any]) -> None:
    rows = commit_rows(demo["md"])
    assert len(rows) == len(SERIES)
    for subject, _ in SERIES:
        counts = rows[subject]
        if subject.startswith(BENIGN):
            assert counts == "clean", (subject, counts)
        else:
            assert counts != "clean" and re.search(r"\d+ (block|review)", counts), (subject,
                                                                                     counts)


def test_report_demo_html_per_commit(demo: dict[str, Any]) -> None:
    html = demo["html"]
    assert html.count('class="commit clean"') == len(BENIGN)
    assert html.count('class="commit dirty"') + html.count('class="commit looked"') >= \
        len(SERIES) - len(BENIGN)
    doc = Doc()
    doc.feed(html)
    assert not doc.errors and doc.stack == []


def test_report_demo_stage_results_round_trip(demo: dict[str, Any]) -> None:
    """verify, scan and deps of the demo (real git, semgrep, bandit, OSV snapshot): each typed
    result reads back from its JSON unchanged, and the audit fits docs/audit.schema.json."""
    import json

    from jsonschema import Draft202012Validator

    from auditor.model import AuditResult, StageResult
    from auditor.results.audit_file import audit_schema, schema_problem

    audit = demo["audit"]
    for name, result in audit.stages.items():
        assert StageResult.from_json(name, json.loads(json.dumps(result.to_json()))) == result
    data = json.loads(json.dumps(audit.to_json()))
    assert schema_problem(data) is None
    assert Draft202012Validator(audit_schema()).is_valid(data)  # jsonschema agrees
    assert AuditResult.from_json(data) == audit
