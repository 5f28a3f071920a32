"""Reading and changing experiment settings that may be nested dicts or frozen dataclasses."""

from __future__ import annotations

import copy
import dataclasses
from functools import reduce
from typing import Any, Mapping, Sequence

from ..registry.typed import plain  # settings as plain data, as the registry stores values

__all__ = ["setting", "with_setting", "plain"]


def _has(value: Any, name: str) -> bool:
    return name in value if isinstance(value, Mapping) else (not isinstance(value, (str, bytes))
                                                             and hasattr(value, name))


def _get(value: Any, name: str) -> Any:
    return value[name] if isinstance(value, Mapping) else getattr(value, name)


def _resolve(settings: Any, path: Sequence[str]) -> tuple[str, ...] | None:
    """``path`` as the settings spell it (``("scratch", "sst2")`` may be the field ``scratch_sst2``); None when absent."""
    if not path:
        return ()
    head, rest = path[0], tuple(path[1:])
    if _has(settings, head):
        tail = _resolve(_get(settings, head), rest)
        if tail is not None:
            return (head, *tail)
    if rest:
        return _resolve(settings, (f"{head}_{rest[0]}", *rest[1:]))
    return None


def setting(settings: Any, *path: str, default: Any = ...) -> Any:
    """``settings[a][b]`` for a dict, ``settings.a.b`` for a dataclass, or the field ``a_b``; a missing field
    raises KeyError naming the path unless ``default`` is given."""
    found = _resolve(settings, path)
    if found is None and default is ...:
        raise KeyError(f"settings have no field {'.'.join(path)!r}")
    return default if found is None else reduce(_get, found, settings)


def with_setting(settings: Any, path: Sequence[str], value: Any) -> Any:
    """A copy of ``settings`` (dict or dataclass, nested) with the field at ``path`` set to ``value``."""
    found = _resolve(settings, tuple(path))
    return _with(settings, found if found is not None else tuple(path), value)


def _with(settings: Any, path: Sequence[str], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], tuple(path[1:])
    if isinstance(settings, Mapping):
        if head not in settings:
            raise KeyError(f"settings have no field {head!r}; fields: {', '.join(map(str, settings))}")
        out = copy.copy(dict(settings))
        out[head] = _with(settings[head], rest, value)
        return out
    if dataclasses.is_dataclass(settings) and not isinstance(settings, type):
        if not hasattr(settings, head):
            raise KeyError(f"settings have no field {head!r}")
        return dataclasses.replace(settings, **{head: _with(getattr(settings, head), rest, value)})
    raise KeyError(f"cannot set {head!r} inside a {type(settings).__name__}")

