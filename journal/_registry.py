"""The runs a ``RunJournal`` follows: its roots, every run under them, and finished roots.

:class:`RunRegistry` answers "which journaled run is this callback run part of, and how is it
attributed" (:func:`journal._run_state.caller_for`). It remembers the runs of finished roots
(bounded), so work a cancelled run left running starts no root of its own. Not thread-safe:
its owner (:class:`journal._tracker.RunTracker`) holds its lock around every call.

Runs are kept by their id's ``UUID.int`` (a run id that is no ``UUID`` in a 1-tuple, which
no int equals): equal UUIDs have equal ints, and an int's hash is the interpreter's own,
where ``UUID.__hash__`` is a Python call (about 1,900 look-ups a 100-round agent run).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final
from uuid import UUID

from journal._run_state import Node, RunState, caller_for

__all__ = ["RunRegistry", "run_text"]

#: How many runs of finished roots the journal remembers (to ignore work they left running).
_FINISHED_CAPACITY: Final = 10_000
_NO_METADATA: Final[Mapping[str, Any]] = MappingProxyType({})  # shared: read only


def run_text(run_id: Any) -> str:
    """``str(run_id)``: a ``UUID``'s canonical text (8-4-4-4-12 hex digits) made of its
    bytes' hex, grouped by the interpreter (``UUID.__str__`` formats and slices in Python,
    0.3 µs more a call, 403 calls a 100-round agent run); anything else by ``str``
    (``tests/test_callback_fast_paths.py`` holds the two to each other)."""
    if type(run_id) is not UUID:
        return str(run_id)
    text = run_id.int.to_bytes(16).hex("-", 2)  # 8 groups of 4 digits: rejoin 1-2 and 6-8
    return f"{text[:4]}{text[5:29]}{text[30:34]}{text[35:]}"


def _key(run_id: Any) -> Any:
    """What ``run_id`` is kept under (the hot paths write it out)."""
    return run_id.int if isinstance(run_id, UUID) else (run_id,)


class RunRegistry:
    """Roots by run id, the runs under them as :class:`Node`, and recently finished runs."""

    __slots__ = ("_finished", "_nodes", "_roots")

    def __init__(self) -> None:
        # by _key(run id)
        self._roots: dict[Any, RunState] = {}
        self._nodes: dict[Any, Node] = {}
        # runs of finished roots (work a cancel left running): what starts under them is no root
        self._finished: OrderedDict[Any, None] = OrderedDict()

    def root(self, run_id: UUID | None) -> RunState | None:
        """The root run ``run_id``, if it is a journaled root still going."""
        if run_id is None:
            return None
        return self._roots.get(run_id.int if isinstance(run_id, UUID) else (run_id,))

    def node(self, run_id: UUID | None) -> Node | None:
        """The journaled run ``run_id`` under a root, if it is still going."""
        if run_id is None:
            return None
        return self._nodes.get(run_id.int if isinstance(run_id, UUID) else (run_id,))

    def finished(self, run_id: UUID | None) -> bool:
        """Whether ``run_id`` belonged to a root that has finished (work it left running)."""
        return (run_id.int if isinstance(run_id, UUID) else (run_id,)) in self._finished

    def add_root(self, run_id: UUID, run: RunState) -> None:
        """Follow the root run ``run_id``."""
        self._roots[_key(run_id)] = run

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
        parent_key = parent_id.int if isinstance(parent_id, UUID) else (parent_id,)
        root = self._roots.get(parent_key)
        if root is None:
            parent = self._nodes.get(parent_key)
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
            run_text(run_id) if traced or tool or top else parent_span,
            tool,
            parent is not None and (parent.is_tool or parent.in_tool),
            md.get("langgraph_checkpoint_ns"),
        )
        if parent is not None:  # (a node of the root graph has no task but itself: None)
            node.task = parent if parent.top else parent.task
        self._nodes[run_id.int if isinstance(run_id, UUID) else (run_id,)] = node
        return node

    def pop(self, run_id: UUID) -> Node | None:
        """Stop following the run ``run_id`` (it ended); return it if it was followed."""
        return self._nodes.pop(run_id.int if isinstance(run_id, UUID) else (run_id,), None)

    def done(self, run_id: UUID) -> tuple[Node, float] | None:
        """Stop following a finished call; return it with the ms elapsed since it started."""
        node = self._nodes.pop(run_id.int if isinstance(run_id, UUID) else (run_id,), None)
        if node is None:
            return None
        return node, round((time.perf_counter() - node.started) * 1000, 3)

    def end_root(self, run_id: UUID, run: RunState) -> list[Node]:
        """The root ``run_id`` finished: forget it and every run under it (as finished);
        return the runs that were still going."""
        del self._roots[_key(run_id)]
        self.forget(run_id)
        left = [k for k, n in self._nodes.items() if n.run is run]
        nodes = [self._nodes.pop(key) for key in left]
        for key in left:
            self._forget_key(key)
        return nodes

    def going(self) -> list[Node]:
        """Every run still followed."""
        return list(self._nodes.values())

    def forget(self, run_id: UUID) -> None:
        """Remember ``run_id`` as a finished run's (bounded): chains under it are ignored."""
        self._forget_key(_key(run_id))

    def _forget_key(self, key: Any) -> None:
        self._finished[key] = None
        if len(self._finished) > _FINISHED_CAPACITY:
            self._finished.popitem(last=False)
