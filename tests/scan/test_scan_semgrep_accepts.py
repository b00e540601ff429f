"""The semgrep scanner is given a file only when some rule reads it in plain semgrep's plan:
semgrep leaves a file no rule reads out of ``paths.scanned``, which the scan would report as not
checked (a language-blind rule aimed at ``*.ps1`` once made every CMakeLists.txt and README
"not checked")."""

from __future__ import annotations

import hashlib
from pathlib import Path

from test_scan_rules import needs_semgrep

from auditor.scan.interface import Origin, ScanTarget
from auditor.scan.semgrep import SemgrepScanner

RULES = """\
rules:
  - id: network.script.download
    languages: [generic]
    paths:
      include: ["*.ps1"]
    severity: ERROR
    message: a script downloads
    metadata:
      category: network
      severity: high
      help: Check what is downloaded and whether it is pinned by a checksum.
    pattern: Invoke-WebRequest
  - id: network.python.requests
    languages: [python]
    severity: ERROR
    message: outbound HTTP request
    metadata:
      category: network
      severity: high
      help: Find where the request goes and what it sends; engines do not phone home.
    pattern: requests.get(...)
"""


def target(path: str, text: str, family: str | None) -> ScanTarget:
    return ScanTarget(key=f"b:{path}", path=path, origin=Origin.BUNDLE,
                      sha256=hashlib.sha256(text.encode()).hexdigest(), family=family, text=text)


@needs_semgrep
def test_a_file_no_rule_reads_is_not_given_to_semgrep(tmp_path: Path) -> None:
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "r.yaml").write_text(RULES, encoding="utf-8")
    s = SemgrepScanner(tmp_path / "rules")
    ps1 = target("tools/get.ps1", "Invoke-WebRequest https://x.example/a\n", None)
    cmake = target("CMakeLists.txt", "project(x)\n", None)
    py = target("a.py", "import requests\nrequests.get('https://x.example')\n", "python")
    assert s.accepts(ps1) and s.accepts(py) and not s.accepts(cmake)
    run = s.scan([t for t in (ps1, cmake, py) if s.accepts(t)], tmp_path / "work")
    assert not run.errors, run.errors
    assert [f.rule for f in run.findings[ps1.key]] == ["network.script.download"]
    assert [f.rule for f in run.findings[py.key]] == ["network.python.requests"]
