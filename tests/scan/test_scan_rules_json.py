"""The rules handed to semgrep as one JSON file hold exactly the YAML rule files' data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from auditor.scan import rules

RULE = """rules:
  - id: network.python.sample
    languages: [python]
    severity: WARNING
    message: sample
    pattern: requests.get(...)
    metadata:
      category: network
      severity: medium
      help: check it
{extra}"""


def test_shipped_rules_combine_to_the_same_data() -> None:
    combined = rules.combined_rules_json()
    assert combined is not None
    expected = []
    for path in rules.rule_files():
        expected += yaml.safe_load(path.read_text(encoding="utf-8"))["rules"]
    assert json.loads(combined) == {"rules": expected}


@pytest.mark.parametrize("extra", [
    "      reviewed: 2024-01-01\n",  # a timestamp (semgrep reads it as a string)
    "      flag: yes\n",  # a bool in YAML 1.1, a string in YAML 1.2
    "      empty:\n",  # null: semgrep refuses it
    "      help: twice\n",  # a duplicate key
    "      1: int key\n",  # a key JSON would turn into a string
    "      mode: 0777\n",  # octal 511 in YAML 1.1, the integer 777 in 1.2
    "      limit: 1e5\n",  # a string in YAML 1.1, a float in 1.2
    "      size: 1_000\n",  # 1000 in YAML 1.1, a string in 1.2
    "      at: 1:30\n",  # sexagesimal 90 in YAML 1.1, a string in 1.2
    "      switch: on\n",  # a bool in YAML 1.1, a string in 1.2
    "      base: &b {k: v}\n      copy:\n        <<: *b\n",  # a merge key only in YAML 1.1
])
def test_anything_json_could_change_keeps_the_folder(tmp_path: Path, extra: str) -> None:
    (tmp_path / "network").mkdir()
    (tmp_path / "network" / "python.yaml").write_text(RULE.format(extra=extra))
    assert rules.combined_rules_json(tmp_path) is None


def test_plain_rules_combine(tmp_path: Path) -> None:
    (tmp_path / "network").mkdir()
    (tmp_path / "network" / "python.yaml").write_text(RULE.format(extra=""))
    combined = rules.combined_rules_json(tmp_path)
    assert combined is not None
    assert json.loads(combined)["rules"][0]["id"] == "network.python.sample"


@pytest.mark.parametrize("extra", [
    "      count: 3\n      ratio: -0.5\n      ok: true\n",
    "      text: 'yes'\n      quoted: \"0777\"\n",  # quoted: a string in both
    "      anchor: &a [x, y]\n      again: *a\n",
])
def test_scalars_both_versions_read_alike_combine(tmp_path: Path, extra: str) -> None:
    (tmp_path / "network").mkdir()
    (tmp_path / "network" / "python.yaml").write_text(RULE.format(extra=extra))
    combined = rules.combined_rules_json(tmp_path)
    assert combined is not None
    expected = yaml.safe_load(RULE.format(extra=extra))
    assert json.loads(combined) == expected
