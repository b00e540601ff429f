"""Severity from an OSV record: the advisory's own label, or the CVSS v3 base score."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

LABELS = {"critical": "critical", "high": "high", "moderate": "medium", "medium": "medium",
          "low": "low"}

_W = {
    "AV": {"N": 0.85, "A": 0.62, "L": 0.55, "P": 0.2},
    "AC": {"L": 0.77, "H": 0.44},
    "UI": {"N": 0.85, "R": 0.62},
    "C": {"H": 0.56, "L": 0.22, "N": 0.0},
}


def _roundup(x: float) -> float:
    i = round(x * 100000)
    return i / 100000.0 if i % 10000 == 0 else (math.floor(i / 10000) + 1) / 10.0


def cvss3_score(vector: str) -> float | None:
    """The CVSS 3.x base score of a vector string, or None when it is not one."""
    parts = vector.split("/")
    if not parts or not parts[0].startswith("CVSS:3"):
        return None
    m = dict(p.split(":", 1) for p in parts[1:] if ":" in p)
    try:
        scope_changed = m["S"] == "C"
        pr = {"N": 0.85, "L": 0.68 if scope_changed else 0.62,
              "H": 0.5 if scope_changed else 0.27}[m["PR"]]
        c, i, a = (_W["C"][m[k]] for k in ("C", "I", "A"))
        av, ac, ui = _W["AV"][m["AV"]], _W["AC"][m["AC"]], _W["UI"][m["UI"]]
    except KeyError:
        return None
    iss = 1 - (1 - c) * (1 - i) * (1 - a)
    impact = (7.52 * (iss - 0.029) - 3.25 * (iss - 0.02) ** 15) if scope_changed else 6.42 * iss
    if impact <= 0:
        return 0.0
    expl = 8.22 * av * ac * pr * ui
    total = 1.08 * (impact + expl) if scope_changed else impact + expl
    return _roundup(min(total, 10.0))


def rating(score: float) -> str | None:
    if score >= 9.0:
        return "critical"
    if score >= 7.0:
        return "high"
    if score >= 4.0:
        return "medium"
    if score > 0:
        return "low"
    return None


def record_severity(record: Mapping[str, Any], affected: Mapping[str, Any] | None
                    ) -> tuple[str | None, str | None]:
    """(normalised label, what the record said) — (None, None) when it says nothing usable."""
    for where in (affected or {}).get("ecosystem_specific"), (affected or {}).get(
            "database_specific"), record.get("database_specific"):
        if isinstance(where, Mapping) and isinstance(where.get("severity"), str):
            label = LABELS.get(where["severity"].strip().lower())
            if label:
                return label, where["severity"]
    for entries in (affected or {}).get("severity"), record.get("severity"):
        if not isinstance(entries, list):
            continue
        for e in entries:
            if isinstance(e, Mapping) and isinstance(e.get("score"), str):
                score = cvss3_score(e["score"])
                if score is not None:
                    return rating(score), e["score"]
        for e in entries:
            if isinstance(e, Mapping) and isinstance(e.get("score"), str):
                return None, e["score"]
    return None, None
