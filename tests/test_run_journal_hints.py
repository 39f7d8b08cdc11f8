"""The kinds the journal knows by construction are true: a hint is the metadata's plain kind.

The callback path tells the writer the ``plain_kind`` of metadata it built itself, so the
writer hands the store that hint without walking the metadata; a false hint would make the
store write other bytes than the encoding rules (orjson where the rules format a number, or
text left with a lone surrogate). These tests hold every hint the store is handed to the
truth (``plain_kind`` of the value; a text hint to ``dumps_plain``), on real agent runs and
on callbacks with odd values of every kind a hint reads.
"""

from __future__ import annotations

import math
import uuid
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.tools import tool

from journal import MemoryEventStore, RunJournal
from journal._batch import KnownEvents
from journal._kinds import combined_kind, scalars_kind, span_kind
from journal.encoding import NOT_PLAIN, PLAIN, PLAIN_NUMBERS, dumps, dumps_plain, plain_kind
from tests.fakes import ScriptedChatModel, ai, call


class HintCheckingStore(MemoryEventStore):
    """A memory store that records every hint it is handed that is not the truth."""

    def __init__(self) -> None:
        super().__init__()
        self.wrong: list[tuple[str, str, Any, Any]] = []
        self.hinted = 0  # metadata hints known by construction (not NOT_PLAIN)

    def append(self, events: Any) -> Any:
        if type(events) is KnownEvents:
            for event, (content_hint, metadata_hint) in zip(events, events.hints, strict=True):
                for part, value, hint in (
                    ("content", event.content, content_hint),
                    ("metadata", event.metadata, metadata_hint),
                ):
                    if isinstance(hint, str):
                        ok = hint == dumps_plain(value)
                    else:
                        ok = hint == NOT_PLAIN or hint == plain_kind(value)
                    if not ok:
                        self.wrong.append((event.event_type, part, hint, value))
                self.hinted += metadata_hint != NOT_PLAIN
        return super().append(events)


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: sunny"


def test_every_hint_of_an_agent_run_is_true(tmp_path: Path) -> None:
    """A create_agent run with tools: each hint handed over is its value's kind or text, and
    the trace and message metadata come with one (not walked again)."""
    store = HintCheckingStore()
    script = [ai("", call("lookup", "c1", city="Zürich"), call("lookup", "c2", city="Oslo")),
              ai("done")]  # fmt: skip
    agent = create_agent(ScriptedChatModel(script=script), [lookup])
    with RunJournal(store, spool_path=tmp_path / "spool.jsonl") as journal:
        agent.invoke({"messages": [HumanMessage("weather?")]}, {"callbacks": [journal],
                     "configurable": {"thread_id": "t"}, "tags": ["x"]})  # fmt: skip
        assert journal.flush(5)
    assert store.wrong == []
    events = store.read("t")
    traced = [e for e in events if e.category in ("trace", "message")]
    assert len(traced) >= 10 and store.hinted >= len(traced)
    assert journal.dropped_events == 0


# values of every kind a hint reads: plain, non-ASCII, lone surrogates, subclasses, big ints
class Text(str):
    """A str subclass (not plain: the rules turn it into a str)."""


_ODD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from(["plain", "ünïcode", "a\ud800b", "", "x" * 300]),
    st.builds(Text, st.sampled_from(["sub", "süb"])),
    st.floats(allow_nan=True, allow_infinity=True),
)
_NAMES = st.sampled_from(["model", "tools", "ünï", "a\ud800", "Mw.before_model", "n"])


def _result(message: AIMessage) -> LLMResult:
    return LLMResult(generations=[[ChatGeneration(message=message)]])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])  # fmt: skip
@given(
    node_name=_NAMES,
    step=_ODD,
    model=_ODD,
    lc_source=_ODD,
    tags=st.lists(_ODD, max_size=3),
    params=st.dictionaries(st.sampled_from(["temperature", "top_p", "n"]), _ODD, max_size=3),
    call_id=_ODD,
    message_id=st.sampled_from(["m-1", "ü-2", "b\ud800"]),
    prompt_text=st.sampled_from(["hi", "hé", "a\ud800"]),
    tool_output=st.sampled_from(["result", "ré", "x\ud800", 5, None, ["a", {"text": "ü"}]]),
    written=st.booleans(),
    fail=st.booleans(),
)
def test_hints_are_true_whatever_the_callbacks_carry(
    tmp_path: Path,
    node_name: str,
    step: Any,
    model: Any,
    lc_source: Any,
    tags: list[Any],
    params: dict[str, Any],
    call_id: Any,
    message_id: str,
    prompt_text: str,
    tool_output: Any,
    written: bool,
    fail: bool,
) -> None:
    """Model and tool calls whose names, steps, ids, tags, parameters and outputs are odd
    values (the answer written to the state or kept on ``llm.end``): every hint is still the
    truth, and nothing is dropped."""
    store = HintCheckingStore()
    journal = RunJournal(store, spool_path=tmp_path / f"spool-{uuid.uuid4()}.jsonl")
    try:
        root, node, llm, tool_run = (uuid.uuid4() for _ in range(4))
        journal.on_chain_start({"name": "LangGraph"}, {"messages": [HumanMessage("hi")]},
                               run_id=root, metadata={"thread_id": "t"})  # fmt: skip
        node_md = {"langgraph_step": step, "langgraph_node": node_name, "thread_id": "t"}
        journal.on_chain_start({}, {"messages": []}, run_id=node, parent_run_id=root,
                               metadata=node_md, name=node_name)  # fmt: skip
        journal.on_chat_model_start(
            {"name": "fake"},
            [[HumanMessage(prompt_text, id=message_id + "-h")]],
            run_id=llm,
            parent_run_id=node,
            tags=tags,
            metadata={**node_md, "ls_model_name": model, "lc_source": lc_source},
            invocation_params=params,
        )
        answer = AIMessage("ok", id=message_id, response_metadata={"model_name": model})
        if fail:
            journal.on_llm_error(ValueError("no"), run_id=llm)
        else:
            journal.on_llm_end(_result(answer), run_id=llm)
        journal.on_tool_start({"name": node_name}, "x", run_id=tool_run, parent_run_id=node,
                              metadata=node_md, inputs={"q": 1}, tool_call_id=call_id)  # fmt: skip
        if fail:
            journal.on_tool_error(RuntimeError("tool"), run_id=tool_run)
        else:
            journal.on_tool_end(tool_output, run_id=tool_run)
        journal.on_chain_end({"messages": [answer] if written else []}, run_id=node)
        journal.on_chain_end({"messages": [answer]}, run_id=root)
        assert journal.flush(5)
    finally:
        journal.close()
    assert store.wrong == []
    assert journal.dropped_events == 0
    assert {e.event_type for e in store.read("t")} >= {"llm.start", "tool.start", "run.end"}


@given(st.lists(_ODD, max_size=6))
def test_scalars_kind_vouches_only_for_what_is_plain(values: list[Any]) -> None:
    """``scalars_kind`` says PLAIN only when a dict of the values has plain_kind PLAIN."""
    kind = scalars_kind(*values)
    truth = plain_kind({f"k{i}": v for i, v in enumerate(values)})
    assert kind in (NOT_PLAIN, PLAIN)
    assert kind == NOT_PLAIN or truth == PLAIN


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_span_kind_is_the_kind_of_the_float(value: float) -> None:
    """``span_kind`` of a float is its plain kind (NOT_PLAIN only where the rules change it)."""
    assert span_kind(value) == plain_kind(value) or (
        span_kind(value) == NOT_PLAIN and not math.isfinite(value)
    )
    assert dumps({"v": value})  # the rules encode any float


def test_combined_kind_is_unknown_if_one_part_is() -> None:
    """A dict's kind: unknown if one part is unknown, else its largest part's."""
    assert combined_kind(PLAIN, PLAIN) == PLAIN
    assert combined_kind(PLAIN, PLAIN_NUMBERS) == PLAIN_NUMBERS
    assert combined_kind(PLAIN_NUMBERS, NOT_PLAIN, PLAIN) == NOT_PLAIN
