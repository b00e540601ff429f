"""A semgrep parse error names the staged copy it read ("g0/b/<path>"): the not-checked reason
names the bundle's file instead, so a reviewer sees the path they know."""

from __future__ import annotations

from auditor.scan.interface import Origin, ScanTarget
from auditor.scan.semgrep import SemgrepScanner


def test_a_parse_error_names_the_bundle_file_not_the_staged_copy() -> None:
    target = ScanTarget(key="csrc/alloc.cpp", path="csrc/alloc.cpp", origin=Origin.BUNDLE,
                        sha256="0" * 64, family="c", text="int main() { return 0; }\n")
    # the shape semgrep's --json gives for a file it could not parse
    doc = {"errors": [{"type": ["Other syntax error"], "path": "g0/b/csrc/alloc.cpp",
                       "message": "Other syntax error at line g0/b/csrc/alloc.cpp:1: Failure: "
                                  "ii_of_name: IdDeref"}],
           "results": [], "paths": {"scanned": ["g0/b/csrc/alloc.cpp"]}}
    run = SemgrepScanner()._parse(doc, {"g0/b/csrc/alloc.cpp": target})
    (err,) = run.errors.values()
    assert "g0/b/" not in err.reason
    assert "Other syntax error at line csrc/alloc.cpp:1" in err.reason
