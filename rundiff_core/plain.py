"""The methods a dataclass writes for a record, written once for the few record classes that a
start or a sniff builds: creating a dataclass costs ~1 ms of start-up (its methods are generated
and compiled), more than all the uses of these. Each class lists its fields in `__match_args__`
and writes its own `__init__` (defaults, a new list per list field)."""

from __future__ import annotations

from typing import Any


class PlainRecord:
    """repr and equality by the fields in `__match_args__`, as `@dataclass` has them; unhashable,
    as a mutable dataclass is."""

    __match_args__: tuple[str, ...] = ()
    __hash__ = None  # type: ignore[assignment]

    def _fields(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__match_args__)

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__match_args__)
        return f"{type(self).__qualname__}({inner})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()  # type: ignore[attr-defined]


class FrozenRecord(PlainRecord):
    """A `PlainRecord` as `@dataclass(frozen=True)` has it: hashable by its fields, and no field
    assigned or deleted after `_set_fields` (which `__init__` calls)."""

    def _set_fields(self, *values: Any) -> None:
        for name, value in zip(self.__match_args__, values, strict=True):
            object.__setattr__(self, name, value)

    def __hash__(self) -> int:
        return hash(self._fields())

    def __setattr__(self, name: str, value: Any) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot delete field {name!r}")
