"""jsonschema's answers remembered between runs (auditor.sbom.formats): the same answers as
jsonschema gives, a document skipped only when it validated before apart from its serial number and
timestamp, and a re-run that does not import jsonschema at all."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from auditor.errors import ToolError
from auditor.sbom import formats
from auditor.sbom.cyclonedx_doc import validate_cyclonedx


def document(serial: str | None = None, stamp: str = "2026-11-30T12:00:00+00:00",
             name: str = "vllm") -> str:
    return json.dumps({
        "$schema": "http://cyclonedx.org/schema/bom-1.6.schema.json",
        "bomFormat": "CycloneDX", "specVersion": "1.6",
        "serialNumber": serial or f"urn:uuid:{uuid.uuid4()}", "version": 1,
        "metadata": {"timestamp": stamp,
                     "component": {"type": "library", "name": name, "version": "0.32.0",
                                   "bom-ref": "auditor:artifact"}}})


class Recorder:
    """Counts the validations it is asked for; validates with the real schema unless told not."""

    def __init__(self, *, validate: bool = True) -> None:
        self.seen: list[str] = []
        self.validate = validate

    def __call__(self, text: str) -> None:
        self.seen.append(text)
        if self.validate:
            validate_cyclonedx(text)


def test_answers_are_jsonschemas_and_are_remembered(tmp_path):
    import jsonschema

    checker = jsonschema.FormatChecker()
    questions = [("dev@upstream.example", "idn-email"), ("not an address", "idn-email"),
                 ("https://github.com/vllm-project/vllm", "iri-reference"),
                 ("git+ssh://git@host:org/repo", "iri-reference"), ("http://[::1", "iri-reference")]
    with formats.remembered(tmp_path) as memo:
        got = [formats.conforms(v, f) for v, f in questions]
    assert got == [checker.conforms(v, f) for v, f in questions]
    assert len(memo.answers) == len(questions)
    again = formats.FormatMemo(formats.memo_file(tmp_path))
    assert [again.answers[f"{f}\0{v}"] for v, f in questions] == got


def test_a_document_is_skipped_only_when_it_validated_before(tmp_path):
    check = Recorder()
    with formats.remembered(tmp_path):
        formats.memo().validate(document(), check)
    assert len(check.seen) == 1
    with formats.remembered(tmp_path):  # another run: new serial and timestamp only
        formats.memo().validate(document(stamp="2026-12-01T08:30:00Z"), check)
        assert len(check.seen) == 1
        formats.memo().validate(document(name="vllm-fork"), check)  # one byte elsewhere
        assert len(check.seen) == 2
    # a serial or timestamp the schema refuses is never taken as seen: the validator runs
    count = Recorder(validate=False)
    with formats.remembered(tmp_path):
        for odd in (document(serial="urn:uuid:not-a-uuid"),
                    document(serial=f"urn:uuid:{str(uuid.uuid4()).upper()}"),
                    document(stamp="2026-13-45T99:00:00Z"), document(stamp="yesterday")):
            formats.memo().validate(odd, count)
    assert len(count.seen) == 4
    with pytest.raises(ToolError):  # and the schema does refuse the upper-case serial
        validate_cyclonedx(document(serial=f"urn:uuid:{str(uuid.uuid4()).upper()}"))


def test_an_invalid_document_is_refused_and_not_remembered(tmp_path):
    bad = json.loads(document())
    bad["version"] = "x"
    with formats.remembered(tmp_path), pytest.raises(ToolError):
        formats.memo().validate(json.dumps(bad), validate_cyclonedx)
    with formats.remembered(tmp_path), pytest.raises(ToolError):
        formats.memo().validate(json.dumps(bad), validate_cyclonedx)


@pytest.mark.parametrize("damage", [b"", b"{not json", b'{"schema": "other"}',
                                    b'{"schema": "auditor/sbom-formats/v1", "versions": []}'])
def test_a_damaged_memo_is_empty(tmp_path, damage):
    path = formats.memo_file(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_bytes(damage)
    check = Recorder()
    with formats.remembered(tmp_path):
        formats.memo().validate(document(), check)
        assert formats.conforms("a@b.example", "idn-email") is True
    assert len(check.seen) == 1
    assert json.loads(path.read_text())["documents"]  # rewritten whole


def test_a_rerun_does_not_import_jsonschema(tmp_path):
    text = document()
    with formats.remembered(tmp_path):
        formats.conforms("dev@upstream.example", "idn-email")
        formats.memo().validate(text, validate_cyclonedx)
    script = f"""
import json, sys, uuid
from pathlib import Path
from auditor.sbom import formats
doc = json.loads({text!r})
doc["serialNumber"] = f"urn:uuid:{{uuid.uuid4()}}"
def never(_text): raise SystemExit("validated again")
with formats.remembered(Path({str(tmp_path)!r})):
    assert formats.conforms("dev@upstream.example", "idn-email")
    formats.memo().validate(json.dumps(doc), never)
print("jsonschema" in sys.modules, "rfc3987_syntax" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False"]


def test_without_a_cache_nothing_is_remembered(tmp_path):
    check = Recorder()
    formats.memo().validate(document(), check)
    formats.memo().validate(document(), check)
    assert len(check.seen) == 2
    assert formats.conforms("x@y.example", "idn-email")
    assert not list(Path(tmp_path).iterdir())
