r"""Typed reads: a stored result read back into the dataclass that describes it.

:func:`as_record` builds the record from its own fields and annotations, so the names of the stored values
are written once (each experiment defines the records it stores, beside it)::

    @dataclass(frozen=True)
    class ExampleRecord:
        corpus: str = stored("options.corpus")   # a value inside a stored mapping
        n_sequences: int                         # the stored value of the same name
        D: np.ndarray                            # the stored array of the same name

A field's path is dotted into nested mappings (a number indexes a list); an ``np.ndarray`` field is read from
``arrays`` first. Values are converted by the annotation: nested dataclasses, ``from_dict`` types, ``tuple``,
``list``, ``dict``, ``X | None``, ``Enum``, and ``int``/``float``/``str``/``bool`` checked. A field with a default
may be missing (not in :meth:`posgeom.registry.Result.params_as`, which reads settings stored whole). A top-level
``dict[str, np.ndarray]`` field whose path holds ``{}`` is a family of arrays, one per key, named by the path with
the key in place of ``{}`` (``stored("{}__curve")``: ``"rope__curve"``, ...); any other top-level ``dict[str, X]``
field whose path (no dots) holds ``{}`` is a family of values, one per stored key that fits the path and that no
other field of the record reads (``stored("{}")``: one value per corpus, beside the record's other values).
:func:`to_stored` is the inverse: the ``(values, arrays)`` an experiment's record is stored as, so an experiment
builds its record and the registry stores it (:meth:`posgeom.registry.Registry.run`); :func:`build` makes a record
of what an experiment computed, laid out as it is stored. The module is infrastructure: it converts and never
computes.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import types
import typing
from typing import Any, Mapping

import numpy as np

__all__ = ["as_record", "as_settings", "build", "convert", "has_path", "to_stored", "plain", "record_name",
           "named_record_type", "stored", "STORED", "OMIT_NONE"]

#: The metadata key of a field's path among the stored values (:func:`stored`).
STORED = "stored"
#: The metadata key of a field left out of the stored values when it is None (``stored(..., omit_none=True)``).
OMIT_NONE = "omit_none"
#: Sentinels of a lookup: no default (a missing value is an error), and "not stored" (use the field's default).
_MISSING, _ABSENT = object(), object()


def stored(path: str, *, omit_none: bool = False, **field_kwargs) -> Any:
    """A dataclass field read from the dotted ``path`` of the stored values; ``field_kwargs`` go to ``field``.

    ``omit_none=True``: :func:`to_stored` leaves the value out when it is None (give the field a default).
    """
    if not isinstance(path, str) or not path or any(not part for part in path.split(".")):
        raise ValueError(f"a stored path is a dotted name such as 'options.corpus'; got {path!r}")
    metadata = {**field_kwargs.pop("metadata", {}), STORED: path, OMIT_NONE: omit_none}
    return dataclasses.field(metadata=metadata, **field_kwargs)


def as_record(result, record_type: type, *, at: str | None = None, arrays_at: str | None = None,
              **given: Any) -> Any:
    """The stored ``result`` read into ``record_type`` (a dataclass; module docstring).

    Parameters
    ----------
    result : posgeom.registry.Result
        Or any object with ``values`` and ``arrays`` mappings.
    record_type : type
        A dataclass.
    at : str, optional
        A dotted path into ``values`` where the record's mapping lies; default: ``values``.
    arrays_at : str, optional
        The prefix of the record's arrays (``"table"`` reads ``P`` from ``"table/P"`` or ``"table__P"``).
    **given
        Fields the result does not store, as they are.

    Returns
    -------
    record_type
    """
    values, arrays = getattr(result, "values", None), getattr(result, "arrays", None)
    if not isinstance(values, Mapping):
        raise TypeError(f"as_record reads a stored Result (with .values and .arrays); got {type(result).__name__}")
    where = getattr(result, "experiment", "the result")
    if at is not None:
        values = _lookup(values, at, f"{where} (at={at!r})")
        if not isinstance(values, Mapping):
            raise TypeError(f"{where}: the value at {at!r} is a {type(values).__name__}, not a mapping of fields")
    arrays = dict(arrays or {})
    if arrays_at is not None:
        prefixes = (f"{arrays_at}/", f"{arrays_at}__")
        arrays = {name[len(p):]: a for name, a in arrays.items() for p in prefixes if name.startswith(p)}
    return _build(record_type, values, arrays, where, given)


def build(record_type: type, values: Mapping, arrays: Mapping | None = None, **given: Any) -> Any:
    """``record_type`` built from ``values`` and ``arrays`` laid out as :func:`to_stored` stores them, converted as
    :func:`as_record` converts a stored result: what an experiment computed as plain mappings, as its record. A
    value that no field reads is refused: it would be lost on the way to the registry."""
    return _build(record_type, values, arrays or {}, getattr(record_type, "__name__", repr(record_type)), given,
                  strict=True)


def as_settings(params: Mapping, settings_type: type, at: str | None = None, *, where: str = "the parameters") -> Any:
    """``params``, or their block at the dotted path ``at``, read into the settings dataclass ``settings_type``.

    Converted as :func:`as_record` converts a record, with two rules of its own: every field of ``settings_type``
    must be stored, in nested dataclasses too (``as_params`` stores a settings dataclass whole, so a missing field
    means another block or another dataclass, and its default would describe a run that did not happen); stored
    keys that ``settings_type`` does not declare are left unread, as :func:`as_record` leaves them (a block may hold
    values beside a dataclass's). :meth:`posgeom.registry.Result.params_as` reads a stored result's parameters so.

    Parameters
    ----------
    params : mapping
        Parameters as the registry stores them (JSON data).
    settings_type : type
        A dataclass.
    at : str, optional
        A dotted path inside ``params`` (a number indexes a list); by default ``params`` themselves.
    where : str
        What ``params`` are, for errors.

    Returns
    -------
    settings_type
    """
    if not (isinstance(settings_type, type) and dataclasses.is_dataclass(settings_type)):
        raise TypeError(f"parameters are read into a dataclass; {settings_type!r} is not one")
    block = params if at is None else _lookup(params, at, where)
    here = where if at is None else f"{where}.{at}"
    if not isinstance(block, Mapping):
        raise TypeError(f"{here} is stored as {type(block).__name__} {block!r:.60}, not as the mapping of a "
                        f"{settings_type.__name__}")
    return _build(settings_type, block, {}, here, defaults=False)


def has_path(values: Mapping, path: str) -> bool:
    """Whether ``values`` hold something at the dotted ``path`` (a number indexes a list)."""
    return _lookup(values, path, "", default=_ABSENT) is not _ABSENT


def convert(value: Any, tp: Any, where: str) -> Any:
    """``value`` as the annotation ``tp`` says (module docstring); ``where`` names it in errors."""
    return _convert(value, tp, where)


def _lookup(values: Mapping, path: str, where: str, default=_MISSING):
    node: Any = values
    for part in path.split("."):
        if isinstance(node, (list, tuple)) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]  # "omega_range.0": an item of a stored list
            continue
        if not isinstance(node, Mapping) or part not in node:
            if default is not _MISSING:
                return default
            keys = ", ".join(sorted(map(str, node))) if isinstance(node, Mapping) else type(node).__name__
            raise KeyError(f"{where} stores no {path!r} (at {part!r} the stored keys are: {keys})")
        node = node[part]
    return node


def _build(record_type: type, values: Mapping, arrays: Mapping, where: str, given: Mapping | None = None, *,
           strict: bool = False, defaults: bool = True) -> Any:
    """``record_type`` from ``values`` and ``arrays``; ``where`` names them in errors, ``given`` fields are as they are.

    ``strict=True`` refuses a value that no field reads (:func:`build`); ``defaults=False`` refuses a field that is not
    stored, its default or not, in nested records too (:func:`as_settings`).
    """
    if not (isinstance(record_type, type) and dataclasses.is_dataclass(record_type)):
        raise TypeError(f"as_record builds a dataclass; {record_type!r} is not one")
    kwargs = dict(given or {})
    unknown = sorted(set(kwargs) - {f.name for f in dataclasses.fields(record_type)})
    if unknown:
        raise TypeError(f"{record_type.__name__} has no field {', '.join(unknown)} (given to as_record)")
    try:
        hints = typing.get_type_hints(record_type)
    except NameError as err:
        raise TypeError(f"the annotations of {record_type.__name__} name a type not in its module ({err}); define "
                        "the record (and the types it names) at module level") from None
    # the stored keys read by name: a family of values holds the others that fit its path
    named = {f.metadata.get(STORED, f.name).split(".")[0] for f in dataclasses.fields(record_type)}
    for f in dataclasses.fields(record_type):
        if not f.init or f.name in kwargs:
            continue
        path = f.metadata.get(STORED, f.name)
        tp = hints[f.name]
        here = f"{where}: {record_type.__name__}.{f.name}"
        if _is_array(tp) and path in arrays:
            kwargs[f.name] = np.asarray(arrays[path])
            continue
        if _is_family(tp, path):
            pool = arrays if _is_array_family(tp, path) else {k: v for k, v in values.items() if k not in named}
            members = _members(pool, path)
            kwargs[f.name] = {key: _convert(item, typing.get_args(tp)[1], f"{here}[{key!r}]", defaults)
                              for key, item in members.items()}
            if pool is not arrays:
                named |= {path.replace("{}", key, 1) for key in members}
            continue
        has_default = defaults and (f.default is not dataclasses.MISSING
                                    or f.default_factory is not dataclasses.MISSING)
        raw = _lookup(values, path, here, default=_ABSENT if has_default else _MISSING)
        if raw is _ABSENT:
            continue  # not stored: the field's default
        kwargs[f.name] = _convert(raw, tp, here, defaults)
    unread = sorted(set(values) - named) if strict else []
    if unread:
        raise TypeError(f"{record_type.__name__} has no field for {', '.join(map(repr, unread))}; add one or leave "
                        "the value out")
    return record_type(**kwargs)


def _is_array(tp) -> bool:
    return tp is np.ndarray or (_is_union(tp) and np.ndarray in typing.get_args(tp))


def _members(pool: Mapping, path: str) -> dict:
    """The items of ``pool`` named by ``path`` with a key in place of ``{}``, by key."""
    head, tail = path.split("{}", 1)
    return {name[len(head):len(name) - len(tail)]: item for name, item in pool.items()
            if len(name) > len(head) + len(tail) and name.startswith(head) and name.endswith(tail)}


def _is_family(tp, path: str) -> bool:
    """A ``dict[str, X]`` stored as one array or value per key, named by ``path`` with the key in place of ``{}``."""
    return "{}" in path and typing.get_origin(tp) is dict


def _is_array_family(tp, path: str) -> bool:
    return _is_family(tp, path) and typing.get_args(tp)[1:] == (np.ndarray,)


def _is_union(tp) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType)


def _convert(value: Any, tp: Any, where: str, defaults: bool = True) -> Any:
    """``value`` as the annotation ``tp`` says (module docstring); ``defaults`` as :func:`_build`'s, for nested
    records."""
    if tp is Any or tp is object:
        return value
    if value is None:
        if _is_union(tp) and type(None) in typing.get_args(tp):
            return None
        shown = tp if _is_union(tp) else getattr(tp, "__name__", tp)
        raise ValueError(f"{where} is stored as None, but the record does not allow None ({shown})")
    if _is_union(tp):
        errors = []
        for arg in (a for a in typing.get_args(tp) if a is not type(None)):
            try:
                return _convert(value, arg, where, defaults)
            except (TypeError, ValueError, KeyError) as err:
                errors.append(str(err))
        raise ValueError(f"{where}: the stored {value!r} is none of {tp}: {'; '.join(errors)}")
    origin, args = typing.get_origin(tp) or tp, typing.get_args(tp)  # a bare ``tuple`` or ``list``: no args
    if origin in (tuple, list):
        if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
            raise TypeError(f"{where} is stored as a {type(value).__name__}, not a sequence")
        items = list(value)
        if origin is list or (len(args) == 2 and args[1] is Ellipsis):  # one type for every item
            args = args[:1] * len(items)
        elif args and len(args) != len(items):
            raise ValueError(f"{where} holds {len(items)} items; the record declares {len(args)}")
        return origin(_convert(v, a, f"{where}[{i}]", defaults) for i, (v, a) in enumerate(zip(items, args))) \
            if args else origin(items)
    if origin in (dict, Mapping) or tp in (dict, Mapping):
        if not isinstance(value, Mapping):
            raise TypeError(f"{where} is stored as a {type(value).__name__}, not a mapping")
        if not args:
            return dict(value)
        # JSON writes every key as text: a key declared ``int`` is read back from its decimal text
        key = lambda k: int(k) if args[0] is int and isinstance(k, str) and k.lstrip("-").isdecimal() else k
        return {_convert(key(k), args[0], f"{where} key", defaults): _convert(v, args[1], f"{where}[{k!r}]", defaults)
                for k, v in value.items()}
    if tp is np.ndarray:
        return np.asarray(value)
    if isinstance(tp, type):
        if isinstance(value, tp) and not (tp is int and isinstance(value, bool)):
            return value
        if issubclass(tp, enum.Enum):
            return tp(value)
        if hasattr(tp, "from_dict") and isinstance(value, Mapping):
            return tp.from_dict(dict(value))
        if dataclasses.is_dataclass(tp):
            if not isinstance(value, Mapping):
                raise TypeError(f"{where} is stored as a {type(value).__name__}, not the mapping of a {tp.__name__}")
            return _build(tp, value, {}, where, defaults=defaults)
        if tp is int:
            if isinstance(value, (bool, str)) or float(value) != int(value):
                raise ValueError(f"{where} is stored as {value!r}, not a whole number")
            return int(value)
        if tp is float:
            if isinstance(value, (bool, str)):
                raise ValueError(f"{where} is stored as {value!r}, not a number")
            return float(value)
        if tp is str:  # text was returned above
            raise ValueError(f"{where} is stored as {value!r}, not text")
        if tp is bool:
            if not isinstance(value, (bool, np.bool_)):
                raise ValueError(f"{where} is stored as {value!r}, not true or false")
            return bool(value)
    return value


def to_stored(record: Any) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The ``(values, arrays)`` that ``record`` is stored as: what :func:`as_record` reads back into it.

    A field goes to the dotted path of :func:`stored` (default: its name): a top-level ``np.ndarray`` field or
    family of arrays (module docstring) in ``arrays``, every other value in ``values``, with nested dataclasses as
    mappings (by the same rules, their arrays as lists; a ``from_dict`` type as its ``as_dict``), enums as their
    values, tuples as lists and numpy scalars and arrays as Python numbers and lists.

    Parameters
    ----------
    record : dataclass instance

    Returns
    -------
    values : dict
        JSON-serialisable.
    arrays : dict of str to np.ndarray
    """
    if not dataclasses.is_dataclass(record) or isinstance(record, type):
        raise TypeError(f"to_stored stores a dataclass instance (a record); got {type(record).__name__}")
    values: dict[str, Any] = {}
    arrays: dict[str, np.ndarray] = {}
    hints = typing.get_type_hints(type(record))
    for f in dataclasses.fields(record):
        if not f.init:
            continue
        value, path = getattr(record, f.name), f.metadata.get(STORED, f.name)
        if value is None and f.metadata.get(OMIT_NONE):
            continue
        if _is_array(hints[f.name]) and isinstance(value, np.ndarray):
            arrays[path] = value
            continue
        if _is_array_family(hints[f.name], path):
            arrays.update({path.replace("{}", str(key), 1): array for key, array in value.items()})
            continue
        if _is_family(hints[f.name], path):
            for key, item in value.items():
                _place(values, path.replace("{}", str(key), 1), plain(item), f"{type(record).__name__}.{f.name}")
            continue
        _place(values, path, plain(value), f"{type(record).__name__}.{f.name}")
    return values, arrays


def _place(values: dict, path: str, value: Any, where: str) -> None:
    """Set ``values[a][b][c] = value`` for the dotted ``path`` ``"a.b.c"``, making the mappings on the way."""
    *parents, last = path.split(".")
    node = values
    for part in parents:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ValueError(f"{where}: the stored path {path!r} runs through a value, not a mapping")
    if last in node:
        raise ValueError(f"{where}: two fields are stored at {path!r}")
    node[last] = value


def plain(value: Any) -> Any:
    """``value`` as JSON-ready Python data (numpy as lists, dataclasses as dicts), as
    :func:`~posgeom.registry.typed.to_stored` stores it."""
    if isinstance(value, enum.Enum):
        return value.value
    if hasattr(type(value), "from_dict") and hasattr(value, "as_dict"):
        return plain(value.as_dict())  # stored as its own as_dict, which as_record reads back with from_dict
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            if f.init and not (item is None and f.metadata.get(OMIT_NONE)):
                _place(out, f.metadata.get(STORED, f.name), plain(item), f"{type(value).__name__}.{f.name}")
        return out
    if isinstance(value, Mapping):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    return value


def record_name(record_type: type) -> str:
    """``"module:QualName"``: how a manifest names the record type of an entry (:func:`named_record_type` reads it)."""
    return f"{record_type.__module__}:{record_type.__qualname__}"


def named_record_type(name: str) -> type:
    """The record type a manifest names (:func:`record_name`); a ``ValueError`` when it no longer exists."""
    module, _, qualname = name.partition(":")
    try:
        found: Any = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        raise ValueError(f"the stored record type {name!r} no longer exists; recompute the entry with this "
                         "code (posgeom reproduce) or read it with Result.as_(<a record type>)") from None
    if not (isinstance(found, type) and dataclasses.is_dataclass(found)):
        raise ValueError(f"the stored record type {name!r} is not a dataclass")
    return found
