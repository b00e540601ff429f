"""A lazy stand-in for ``rfc3987_syntax``, so importing jsonschema does not cost seconds.

jsonschema's format module imports ``rfc3987_syntax`` to check the ``iri`` and ``iri-reference``
formats (CycloneDX uses ``iri-reference``). At import, that package compiles its RFC 3987 grammar
39 times (one Earley parser per rule, ~1.5 s on a 2-core machine), although jsonschema only calls
``is_valid_syntax``, which uses one parser. :func:`install` registers this module under the
package's name before jsonschema is imported: it exposes the same ``parse``/``is_valid_syntax``
on the same grammar file with the same parser settings, built once on first use. Validation is
unchanged; only the unused parsers are never built. Any other attribute is taken from the real
module on demand.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

REAL = "rfc3987_syntax"
_GRAMMAR = "syntax_rfc3987.lark"
_STARTS = ["iri", "iri_reference", "absolute_iri"]  # as rfc3987_syntax.syntax_parser


def install() -> None:
    """Register the stand-in unless the real package is loaded already or is not installed."""
    if REAL in sys.modules:
        return
    spec = importlib.util.find_spec(REAL)
    if spec is None or not spec.submodule_search_locations:
        return  # not installed: jsonschema skips the iri formats, with or without us
    folder = Path(next(iter(spec.submodule_search_locations)))
    if not (folder / _GRAMMAR).is_file():
        return  # a layout we do not know: leave the real package alone
    module = types.ModuleType(REAL, __doc__)
    module.__path__ = [str(folder)]  # real submodules stay importable
    module.__file__ = __file__
    module.__spec__ = spec  # importlib.util.find_spec() keeps working for this name
    parser = cache(lambda: _parser(folder / _GRAMMAR))

    def parse(term: str, value: str) -> Any:
        return parser().parse(value, start=term)

    @lru_cache(maxsize=4096)  # a pure function of its arguments; the same URLs recur
    def is_valid_syntax(term: str, value: str) -> bool:
        from lark import exceptions

        try:
            parse(term, value)
        except exceptions.LarkError:
            return False
        return True

    def real_attribute(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        helpers = importlib.import_module(f"{REAL}.syntax_helpers")
        return getattr(helpers, name)

    module.parse = parse  # type: ignore[attr-defined]
    module.is_valid_syntax = is_valid_syntax  # type: ignore[attr-defined]
    module.__getattr__ = real_attribute  # type: ignore[attr-defined,method-assign]
    sys.modules[REAL] = module


def _parser(grammar: Path) -> Any:
    from lark import Lark

    return Lark(grammar.read_text(encoding="utf-8"), start=_STARTS, parser="earley")
