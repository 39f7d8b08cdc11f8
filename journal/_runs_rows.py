"""How backends store runs: a fold's columns, its row values, and the merge rules as SQL.

The fold and its merge rules are :mod:`journal._runs`; this is their storage side, shared by
the SQLite and PostgreSQL backends (each converts times and the model list its own way).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import fields
from operator import attrgetter, itemgetter
from typing import Any, Final

from journal._runs import MERGE_RULES, USAGE_KEYS, RunFold, union_models

__all__ = ["RUN_COLUMNS", "fold_of", "fold_values", "merge_assignments", "merge_values"]


#: How backends store a fold: its fields in order, ``usage`` as one column per key.
RUN_COLUMNS: Final = tuple(
    column for f in fields(RunFold) for column in (USAGE_KEYS if f.name == "usage" else (f.name,))
)


def _columns_of(rule: str) -> tuple[int, ...]:
    return tuple(
        RUN_COLUMNS.index(column)
        for name, named_rule in MERGE_RULES.items()
        if named_rule == rule
        for column in (USAGE_KEYS if name == "usage" else (name,))
    )


_ADD: Final = _columns_of("add")
_NEWER: Final = _columns_of("newer")
_LIFECYCLE: Final = _columns_of("lifecycle")
_FIRST_SET: Final = _columns_of("first_set")
_LAST_SET: Final = _columns_of("last_set")
_UNION: Final = _columns_of("union")
_HAS_LIFECYCLE: Final = RUN_COLUMNS.index("lifecycle")
_KEPT: Final = {*_columns_of("keep"), RUN_COLUMNS.index("thread_id"), RUN_COLUMNS.index("run_id")}
assert {*_ADD, *_NEWER, *_LIFECYCLE, *_FIRST_SET, *_LAST_SET, *_UNION} | _KEPT == set(
    range(len(RUN_COLUMNS))
)


def merge_values(old: list[Any], new: list[Any]) -> list[Any]:
    """:meth:`RunFold.merge` on two folds' values (:func:`fold_values` order, any time
    representation, the model list a list): the merged values, a new list."""
    merged = old.copy()
    for index in _ADD:
        merged[index] += new[index]
    for index in _NEWER:
        merged[index] = new[index]
    if new[_HAS_LIFECYCLE] is not None:
        for index in _LIFECYCLE:
            merged[index] = new[index]
    for index in _FIRST_SET:
        if merged[index] is None:
            merged[index] = new[index]
    for index in _LAST_SET:
        if new[index] is not None:
            merged[index] = new[index]
    for index in _UNION:
        if new[index]:
            merged[index] = union_models(old[index], new[index])
    return merged


_NAMES: Final = tuple(f.name for f in fields(RunFold))
_BEFORE_USAGE: Final = attrgetter(*_NAMES[: _NAMES.index("usage")])
_AFTER_USAGE: Final = attrgetter(*_NAMES[_NAMES.index("usage") + 1 :])
_USAGE_VALUES: Final = itemgetter(*USAGE_KEYS)


def fold_values(run: RunFold) -> list[Any]:
    """The values of ``run`` in :data:`RUN_COLUMNS` order."""
    return [*_BEFORE_USAGE(run), *_USAGE_VALUES(run.usage), *_AFTER_USAGE(run)]


def fold_of(values: Iterable[Any]) -> RunFold:
    """The fold stored as ``values`` (in :data:`RUN_COLUMNS` order)."""
    named = dict(zip(RUN_COLUMNS, values, strict=True))
    usage = {key: int(named.pop(key)) for key in USAGE_KEYS}
    named["models"] = list(named["models"])
    return RunFold(**named, usage=usage)


def merge_assignments(templates: Mapping[str, str | None]) -> str:
    """:data:`MERGE_RULES` as the ``SET`` of an SQL upsert: ``templates`` gives each rule's
    expression (``{c}`` the column; ``None``: the stored value stays), in a backend's dialect."""
    sets = []
    for name, rule in MERGE_RULES.items():
        template = templates[rule]
        if template is not None:
            sets += [
                f"{c}={template.format(c=c)}" for c in (USAGE_KEYS if name == "usage" else (name,))
            ]
    return ",".join(sets)
