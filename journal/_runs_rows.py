"""How backends store runs: a fold's columns, its row values, and the merge rules as SQL.

The fold and its merge rules are :mod:`journal._runs`; this is their storage side, shared by
the SQLite and PostgreSQL backends (each converts times and the model list its own way).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import fields
from typing import Any, Final

from journal._runs import MERGE_RULES, USAGE_KEYS, RunFold

__all__ = ["RUN_COLUMNS", "fold_of", "fold_values", "merge_assignments"]


#: How backends store a fold: its fields in order, ``usage`` as one column per key.
RUN_COLUMNS: Final = tuple(
    column for f in fields(RunFold) for column in (USAGE_KEYS if f.name == "usage" else (f.name,))
)


def fold_values(run: RunFold) -> list[Any]:
    """The values of ``run`` in :data:`RUN_COLUMNS` order."""
    return [run.usage[name] if name in run.usage else getattr(run, name) for name in RUN_COLUMNS]


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
