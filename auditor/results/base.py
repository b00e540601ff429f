"""The interface of a stage's typed data, the crash record, and small JSON readers.

The readers assume the shape ``docs/audit.schema.json`` guarantees (a saved audit.json is checked
against it before it is read); a value of another shape raises KeyError, TypeError or ValueError,
which the loader reports as a malformed file.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self

#: a JSON object kept as it is (shown in reports, never interpreted by another stage)
JsonObject = Mapping[str, Any]


class StageData(ABC):
    """What one stage found, as typed fields (a frozen dataclass in each subclass)."""

    @abstractmethod
    def to_json(self) -> dict[str, Any]:
        """The stage's JSON object (without status, findings, not_checked and reasons)."""

    @classmethod
    @abstractmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        """Read back what :meth:`to_json` wrote."""


@dataclass(frozen=True)
class Crashed(StageData):
    """A stage that raised instead of returning: its only detail is the error."""

    error: str

    def to_json(self) -> dict[str, Any]:
        return {"error": self.error}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Crashed:
        return cls(error=str(data["error"]))


def strs(value: Any) -> tuple[str, ...]:
    """A JSON list of strings as a tuple (TypeError for anything else)."""
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise TypeError(f"expected a list of strings, got {type(value).__name__}")
    return tuple(value)


def opt_str(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"expected a string or null, got {type(value).__name__}")
    return value


def opt_int(value: Any) -> int | None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise TypeError(f"expected an integer or null, got {type(value).__name__}")
    return value


def opt_bool(value: Any) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise TypeError(f"expected true, false or null, got {type(value).__name__}")
    return value


def objects(value: Any) -> tuple[JsonObject, ...]:
    """A JSON list of objects, kept as they are."""
    if not isinstance(value, list) or not all(isinstance(x, Mapping) for x in value):
        raise TypeError("expected a list of objects")
    return tuple(dict(x) for x in value)


def obj(value: Any) -> JsonObject:
    if not isinstance(value, Mapping):
        raise TypeError(f"expected an object, got {type(value).__name__}")
    return dict(value)


def opt_obj(value: Any) -> JsonObject | None:
    return None if value is None else obj(value)


def str_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in obj(value).items()}


def listed(items: Sequence[Any]) -> list[Any]:
    """Typed items (with ``to_json``) or plain JSON values as a JSON list."""
    return [x.to_json() if hasattr(x, "to_json") else _plain(x) for x in items]


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, tuple):
        return list(value)
    return value
