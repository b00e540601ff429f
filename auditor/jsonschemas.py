"""jsonschema, imported once per process without ``rfc3987_syntax``, with auditor's own checks
for the ``iri`` and ``iri-reference`` formats (:mod:`auditor.iri`).

jsonschema checks those two formats with ``rfc3987_syntax`` when it is installed (the
``format-nongpl`` extra installs it), and that package builds its parsers at import: ~3 s of CPU,
on every cold run, taken from the scanners it runs beside. :func:`load` imports jsonschema with
that import refused (jsonschema then leaves the two formats unchecked, silently) and registers
:func:`auditor.iri.is_iri` and :func:`auditor.iri.is_iri_reference` for them, on the format
checker every draft's validator uses and on ``FormatChecker()``'s defaults, so no document passes
unchecked. Every use of jsonschema in auditor (and of cyclonedx-python-lib's validators, which
import it) goes through :func:`load` first; should jsonschema have been imported before, with
``rfc3987_syntax``, the same checks replace its.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from auditor import iri

_LOCK = threading.Lock()
_SLOW = "rfc3987_syntax"
_CHECKS = {"iri": iri.is_iri, "iri-reference": iri.is_iri_reference}
_loaded: list[ModuleType] = []


def load() -> ModuleType:
    """The jsonschema module, its ``iri`` formats checked by :mod:`auditor.iri`."""
    with _LOCK:
        if _loaded:
            return _loaded[0]
        refuse = _SLOW not in sys.modules and "jsonschema._format" not in sys.modules
        if refuse:
            sys.modules[_SLOW] = None  # type: ignore[assignment]  # import refused
        try:
            import jsonschema
        finally:
            if refuse and sys.modules.get(_SLOW, ...) is None:
                del sys.modules[_SLOW]
        for fmt, check in _CHECKS.items():
            jsonschema.FormatChecker.checkers[fmt] = (check, ())
            for validator in (jsonschema.Draft7Validator, jsonschema.Draft201909Validator,
                              jsonschema.Draft202012Validator):
                validator.FORMAT_CHECKER.checks(fmt)(check)
        _loaded.append(jsonschema)
        return jsonschema


def first_problem(schema: Mapping[str, Any], doc: Any) -> str | None:
    """Where and how ``doc`` first fails ``schema`` (JSON Schema 2020-12, formats checked):
    ``"<path>: <message>"``, or None when it holds."""
    jsonschema = load()
    validator = jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    e = errors[0]
    return f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}"

