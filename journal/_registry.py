"""The runs a ``RunJournal`` follows: its roots, every run under them, and finished roots.

:class:`RunRegistry` answers "which journaled run is this callback run part of, and how is it
attributed" (:func:`journal._run_state.caller_for`). It remembers the runs of finished roots
(bounded), so work a cancelled run left running starts no root of its own. Not thread-safe:
its owner (:class:`journal._tracker.RunTracker`) holds its lock around every call.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final
from uuid import UUID

from journal._run_state import Node, RunState, caller_for

__all__ = ["RunRegistry"]

#: How many runs of finished roots the journal remembers (to ignore work they left running).
_FINISHED_CAPACITY: Final = 10_000
_NO_METADATA: Final[Mapping[str, Any]] = MappingProxyType({})  # shared: read only


class RunRegistry:
    """Roots by run id, the runs under them as :class:`Node`, and recently finished runs."""

    __slots__ = ("_finished", "_nodes", "_roots")

    def __init__(self) -> None:
        self._roots: dict[UUID, RunState] = {}
        self._nodes: dict[UUID, Node] = {}
        # runs of finished roots (work a cancel left running): what starts under them is no root
        self._finished: OrderedDict[UUID, None] = OrderedDict()

    def root(self, run_id: UUID | None) -> RunState | None:
        """The root run ``run_id``, if it is a journaled root still going."""
        return self._roots.get(run_id) if run_id is not None else None

    def node(self, run_id: UUID | None) -> Node | None:
        """The journaled run ``run_id`` under a root, if it is still going."""
        return self._nodes.get(run_id) if run_id is not None else None

    def finished(self, run_id: UUID | None) -> bool:
        """Whether ``run_id`` belonged to a root that has finished (work it left running)."""
        return run_id in self._finished

    def add_root(self, run_id: UUID, run: RunState) -> None:
        """Follow the root run ``run_id``."""
        self._roots[run_id] = run

    def add_child(
        self,
        run_id: UUID,
        parent_id: UUID | None,
        name: str,
        metadata: dict[str, Any] | None,
        *,
        tool: bool = False,
        traced: bool = False,
    ) -> Node | None:
        """Follow ``run_id`` (a tool call if ``tool``; a tool or model call, one with a span of
        its own, if ``traced``) under its journaled parent; ``None`` if the parent is
        unknown."""
        if parent_id is None:
            return None
        root = self._roots.get(parent_id)
        if root is None:
            parent = self._nodes.get(parent_id)
            if parent is None:
                return None
            root, parent_span = parent.run, parent.span
        else:
            parent, parent_span = None, root.run_id
        md = metadata or _NO_METADATA
        caller, top = caller_for(parent, name, md)
        step = md.get("langgraph_step")
        node = Node(  # by position (see Node): run, name, caller, node, step, top,
            root,  # parent_span, span, is_tool, in_tool, namespace
            name,
            caller,
            md.get("langgraph_node"),
            step if isinstance(step, int) else None,
            top,
            parent_span,
            str(run_id) if traced or tool or top else parent_span,
            tool,
            parent is not None and (parent.is_tool or parent.in_tool),
            md.get("langgraph_checkpoint_ns"),
        )
        if parent is not None:  # (a node of the root graph has no task but itself: None)
            node.task = parent if parent.top else parent.task
        self._nodes[run_id] = node
        return node

    def pop(self, run_id: UUID) -> Node | None:
        """Stop following the run ``run_id`` (it ended); return it if it was followed."""
        return self._nodes.pop(run_id, None)

    def done(self, run_id: UUID) -> tuple[Node, float] | None:
        """Stop following a finished call; return it with the ms elapsed since it started."""
        node = self._nodes.pop(run_id, None)
        if node is None:
            return None
        return node, round((time.perf_counter() - node.started) * 1000, 3)

    def end_root(self, run_id: UUID, run: RunState) -> list[Node]:
        """The root ``run_id`` finished: forget it and every run under it (as finished);
        return the runs that were still going."""
        del self._roots[run_id]
        self.forget(run_id)
        left = [k for k, n in self._nodes.items() if n.run is run]
        nodes = [self._nodes.pop(key) for key in left]
        for key in left:
            self.forget(key)
        return nodes

    def going(self) -> list[Node]:
        """Every run still followed."""
        return list(self._nodes.values())

    def forget(self, run_id: UUID) -> None:
        """Remember ``run_id`` as a finished run's (bounded): chains under it are ignored."""
        self._finished[run_id] = None
        if len(self._finished) > _FINISHED_CAPACITY:
            self._finished.popitem(last=False)
