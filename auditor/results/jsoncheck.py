"""A JSON Schema (draft 2020-12) checker for exactly the keywords ``docs/audit.schema.json`` uses.

``auditor audit`` checks every audit.json before writing it, and ``report``/``gate`` check every one
they read; importing jsonschema costs CPU (~0.4 s, and ~3 s more where it loads ``rfc3987_syntax``:
:mod:`auditor.jsonschemas`), more than an audit may spend on this. The schema uses a small part of the standard, so it
is checked here: ``type``, ``enum``, ``const``, ``properties``, ``required``,
``additionalProperties``, ``items``, ``propertyNames``, ``dependentRequired``, ``not``, ``anyOf``,
``if``/``then``/``else`` and local ``$ref``. A schema with any other keyword is refused
(:class:`UnsupportedKeyword`), so the schema cannot grow past what is checked. The tests check the
same documents with jsonschema itself, which must agree.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

#: keywords that only describe (nothing to check)
_ANNOTATIONS = frozenset({"$schema", "$id", "$defs", "title", "description"})
_CHECKED = frozenset({"type", "enum", "const", "properties", "required", "additionalProperties",
                      "items", "propertyNames", "dependentRequired", "not", "anyOf", "if", "then",
                      "else", "$ref"})


class UnsupportedKeyword(ValueError):
    """The schema uses a keyword this checker does not implement."""


class AmbiguousJson(ValueError):
    """A document that JSON readers read differently: a key twice in one object, or a number
    JSON does not have (NaN, Infinity)."""


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            shown = key if len(key) <= 60 else key[:60] + "…"
            raise AmbiguousJson(f"the key {shown!r} appears twice in one object (readers "
                                "disagree on which one counts)")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise AmbiguousJson(f"{name} is not a JSON number")


def strict_loads(text: str) -> Any:
    """``json.loads``, refusing duplicate keys and NaN/Infinity (:class:`AmbiguousJson`)."""
    return json.loads(text, object_pairs_hook=_unique_members, parse_constant=_no_constant)


@dataclass(frozen=True)
class Problem:
    path: tuple[str | int, ...]  # where in the document
    message: str

    @property
    def where(self) -> str:
        return "/".join(str(p) for p in self.path) or "(top level)"


def keywords(schema: Any) -> set[str]:
    """Every keyword used anywhere in ``schema`` (property names excluded)."""
    found: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, Mapping):
            for key, value in node.items():
                found.add(key)
                if key in ("properties", "$defs"):
                    stack.extend(value.values())
                elif key not in ("enum", "const", "required", "dependentRequired"):
                    stack.append(value)
    return found


class Checker:
    def __init__(self, schema: Mapping[str, Any]) -> None:
        unknown = keywords(schema) - _CHECKED - _ANNOTATIONS
        if unknown:
            raise UnsupportedKeyword(f"schema keywords not checked here: {sorted(unknown)}")
        self.schema = schema

    def first_problem(self, data: Any) -> Problem | None:
        """The first place (depth first, in document order) where ``data`` does not fit."""
        return next(self._problems(self.schema, data, ()), None)

    def _resolve(self, ref: str) -> Mapping[str, Any]:
        if not ref.startswith("#/"):
            raise UnsupportedKeyword(f"only local $ref is checked here: {ref}")
        node: Any = self.schema
        for part in ref[2:].split("/"):
            node = node[part]
        return node  # type: ignore[no-any-return]

    def _problems(self, schema: Mapping[str, Any], data: Any,
                  path: tuple[str | int, ...]) -> Iterator[Problem]:
        if "$ref" in schema:
            yield from self._problems(self._resolve(schema["$ref"]), data, path)
        for check in (_type, _value, _object):
            problem = check(schema, data, path)
            if problem is not None:
                yield problem
                return
        yield from self._combined(schema, data, path)
        if isinstance(data, dict):
            yield from self._members(schema, data, path)
        elif isinstance(data, list) and "items" in schema:
            for i, item in enumerate(data):
                yield from self._problems(schema["items"], item, (*path, i))

    def _combined(self, schema: Mapping[str, Any], data: Any,
                  path: tuple[str | int, ...]) -> Iterator[Problem]:
        if "not" in schema and self.first_problem_in(schema["not"], data, path) is None:
            yield Problem(path, "is valid under a schema it must not match")
        if "anyOf" in schema:
            found = [self.first_problem_in(s, data, path) for s in schema["anyOf"]]
            if all(p is not None for p in found):
                yield max((p for p in found if p is not None), key=lambda p: len(p.path))
        if "if" in schema:
            branch = "then" if self.first_problem_in(schema["if"], data, path) is None else "else"
            if branch in schema:
                yield from self._problems(schema[branch], data, path)

    def _members(self, schema: Mapping[str, Any], data: dict[str, Any],
                 path: tuple[str | int, ...]) -> Iterator[Problem]:
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        names = schema.get("propertyNames")
        for key, value in data.items():
            if names is not None:
                problem = self.first_problem_in(names, key, (*path, key))
                if problem is not None:
                    yield Problem((*path, key), f"{key!r} is not allowed here")
                    continue
            if key in props:
                yield from self._problems(props[key], value, (*path, key))
            elif extra is False:
                yield Problem((*path, key), f"{key!r} is not allowed here")
            elif isinstance(extra, Mapping):
                yield from self._problems(extra, value, (*path, key))

    def first_problem_in(self, schema: Mapping[str, Any], data: Any,
                         path: tuple[str | int, ...]) -> Problem | None:
        return next(self._problems(schema, data, path), None)


_TYPES: dict[str, Any] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool))
    or (isinstance(v, float) and v.is_integer()),
}


def _type(schema: Mapping[str, Any], data: Any, path: tuple[str | int, ...]) -> Problem | None:
    wanted = schema.get("type")
    if wanted is None:
        return None
    names = wanted if isinstance(wanted, list) else [wanted]
    if any(_TYPES[n](data) for n in names):
        return None
    return Problem(path, f"{_shown(data)} is not of type {' or '.join(names)}")


def _same(a: Any, b: Any) -> bool:
    """JSON equality: true and 1 differ, 1 and 1.0 do not."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return bool(a == b)


def _value(schema: Mapping[str, Any], data: Any, path: tuple[str | int, ...]) -> Problem | None:
    if "const" in schema and not _same(schema["const"], data):
        return Problem(path, f"{_shown(data)} is not {schema['const']!r}")
    if "enum" in schema and not any(_same(x, data) for x in schema["enum"]):
        return Problem(path, f"{_shown(data)} is not one of {schema['enum']!r}")
    return None


def _object(schema: Mapping[str, Any], data: Any, path: tuple[str | int, ...]) -> Problem | None:
    if not isinstance(data, dict):
        return None
    missing = [k for k in schema.get("required", ()) if k not in data]
    for key, needs in schema.get("dependentRequired", {}).items():
        if key in data:
            missing += [k for k in needs if k not in data]
    if missing:
        return Problem(path, f"{', '.join(repr(k) for k in missing)} "
                             f"{'is' if len(missing) == 1 else 'are'} required")
    return None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
