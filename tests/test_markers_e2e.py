"""Summary markers end to end: real create_agent runs, RunJournal, the timeline and exact replay."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from history import build_timeline, replay, restore_thread, verify
from journal import MemoryEventStore, RunEvent, RunEventStore, RunJournal, SqliteEventStore
from middleware import TrackingSummarizationMiddleware
from tests.fakes import ScriptedChatModel, ai, call
from tests.test_summarization_middleware import compactions, lookup, summarizer

MESSAGE_TYPES = ["message.human", "message.ai", "message.tool"]

#: Three runs: parallel tool calls, single calls, plain answers.
RUNS: list[tuple[str, list[AIMessage]]] = [
    (
        "plan a trip to lisbon and porto " * 4,
        [
            ai("", call("lookup", city="lisbon"), call("lookup", city="porto")),
            ai("", call("lookup", city="coimbra")),
            ai("lisbon, then porto " * 6),
        ],
    ),
    ("and madrid? " * 4, [ai("", call("lookup", city="madrid")), ai("madrid is far " * 6)]),
    (
        "compare all three " * 4,
        [
            ai("", *[call("lookup", city=c) for c in ("lisbon", "porto", "madrid")]),
            ai("", call("lookup", city="faro")),
            ai("lisbon wins " * 6),
        ],
    ),
]


class RenamedSummaries(SummarizationMiddleware[Any, Any]):
    """A user's own subclass of the stock middleware (as agents with their own prompts have)."""

    def __init__(self, model: Any, **kw: Any) -> None:
        super().__init__(model, summary_prompt="Condense: {messages}", **kw)


#: What manages the context: our middleware, LangChain's stock one, a subclass of the stock one.
KINDS: dict[str, type[SummarizationMiddleware[Any, Any]]] = {
    "tracked": TrackingSummarizationMiddleware,
    "stock": SummarizationMiddleware,
    "subclass": RenamedSummaries,
}

TRIGGERS: dict[str, dict[str, Any]] = {
    "messages": {"trigger": ("messages", 6), "keep": ("messages", 3)},
    "tokens": {"trigger": ("tokens", 100), "keep": ("messages", 2)},
}


class Scenario:
    """One thread of RUNS through a tracked (or upstream) summarizing agent, journaled."""

    def __init__(
        self,
        store: RunEventStore,
        tmp_path: Path,
        trigger: str = "messages",
        middleware_cls: type[SummarizationMiddleware[Any, Any]] = TrackingSummarizationMiddleware,
    ) -> None:
        self.store = store
        self.journal = RunJournal(store, spool_path=tmp_path / "spool")
        self.model = ScriptedChatModel([reply for _, replies in RUNS for reply in replies])
        self.middleware = middleware_cls(summarizer(), **TRIGGERS[trigger])
        self.agent = self.build_agent(InMemorySaver())
        self.snapshots: list[list[BaseMessage]] = []
        self.thread = "trip"

    def build_agent(self, checkpointer: InMemorySaver) -> Any:
        return create_agent(
            self.model,
            tools=[lookup],
            system_prompt="You plan trips.",
            middleware=[self.middleware],
            checkpointer=checkpointer,
        )

    def config(self) -> RunnableConfig:
        return {"configurable": {"thread_id": self.thread}, "callbacks": [self.journal]}

    def run_sync(self, text: str) -> None:
        for chunk in self.agent.stream(
            {"messages": [HumanMessage(text)]}, self.config(), stream_mode="values"
        ):
            self.snapshots.append(list(chunk["messages"]))

    async def run_async(self, text: str) -> None:
        async for chunk in self.agent.astream(
            {"messages": [HumanMessage(text)]}, self.config(), stream_mode="values"
        ):
            self.snapshots.append(list(chunk["messages"]))

    def events(self, event_type: str | list[str]) -> list[RunEvent]:
        return self.store.read(self.thread, event_type=event_type)

    def agent_model_starts(self) -> list[RunEvent]:
        return [e for e in self.events("llm.start") if e.metadata["langgraph_node"] == "model"]


async def play(scenario: Scenario, mode: str) -> Scenario:
    """Run every turn; after each run the journal's state view equals the checkpoint."""
    for text, _ in RUNS:
        if mode == "sync":
            scenario.run_sync(text)
        else:
            await scenario.run_async(text)
        assert scenario.journal.flush(timeout=10)
        state = scenario.agent.get_state(scenario.config()).values["messages"]
        assert replay(scenario.store, scenario.thread, view="state") == state
    return scenario


Make = Callable[..., Scenario]


@pytest.fixture
def make(tmp_path: Path) -> Iterator[Make]:
    """Build scenarios on a memory or SQLite store; close journals, then stores, afterwards."""
    made: list[Scenario] = []

    def factory(
        backend: str = "memory", trigger: str = "messages", kind: str = "tracked", **kw: Any
    ) -> Scenario:
        kw.setdefault("middleware_cls", KINDS[kind])
        path = tmp_path / str(len(made))
        path.mkdir()
        store: RunEventStore = (
            MemoryEventStore() if backend == "memory" else SqliteEventStore(path / "journal.db")
        )
        made.append(Scenario(store, path, trigger, **kw))
        return made[-1]

    yield factory
    for scenario in made:
        scenario.journal.close(timeout=10)
        scenario.store.close()


def shape(messages: list[BaseMessage]) -> list[tuple[str, Any]]:
    return [(m.type, m.content) for m in messages]


def every_message_produced(snapshots: list[list[BaseMessage]]) -> list[BaseMessage]:
    """Each message that ever entered the state, once, in order; summaries excluded."""
    seen: dict[str | None, BaseMessage] = {}
    for state in snapshots:
        for m in state:
            if m.id not in seen and m.additional_kwargs.get("lc_source") != "summarization":
                seen[m.id] = m
    return list(seen.values())


def first_appearance(snapshots: list[list[BaseMessage]]) -> dict[str, int]:
    """The snapshot index where each produced message (not summaries) first appears."""
    first: dict[str, int] = {}
    for index, state in enumerate(snapshots):
        for m in state:
            if m.additional_kwargs.get("lc_source") != "summarization":
                first.setdefault(str(m.id), index)
    return first


def compaction_steps(snapshots: list[list[BaseMessage]]) -> list[int]:
    """The snapshot indexes right after each compaction (where messages left the state)."""
    return [
        i
        for i in range(1, len(snapshots))
        if {m.id for m in snapshots[i - 1]} - {m.id for m in snapshots[i]}
    ]


CASES = [
    pytest.param(mode, trigger, backend, id=f"{mode}-{trigger}-{backend}")
    for mode, trigger, backend in [
        ("sync", "messages", "memory"),
        ("async", "messages", "sqlite"),
        ("sync", "tokens", "sqlite"),
        ("async", "tokens", "memory"),
    ]
]


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize(("mode", "trigger", "backend"), CASES)
async def test_one_marker_per_compaction_obeying_invariant_5(
    make: Make, mode: str, trigger: str, backend: str, kind: str
) -> None:
    """Each compaction of the checkpoint state gives one marker, exact and correctly ordered,
    whether the tracking middleware reports it or the journal infers it from the rewrite."""
    s = await play(make(backend, trigger, kind), mode)
    seen = compactions(s.snapshots)
    markers = s.events("middleware:summarize")
    assert len(seen) >= 5
    assert len(markers) == len(seen)
    assert len({m.run_id for m in markers}) >= 2  # compactions across runs
    assert any(a.run_id == b.run_id for a, b in itertools.pairwise(markers))  # and within one
    seq_of = {e.content["data"]["id"]: e.seq for e in s.events(MESSAGE_TYPES)}
    for marker, (gone, summary) in zip(markers, seen, strict=True):
        payload = marker.content
        assert payload["replaced_count"] == len(gone)
        assert payload["replaced_message_ids"] == gone
        assert payload["summary_message"]["data"]["id"] == summary.id
        assert payload["summary_message"]["data"]["content"] == summary.content
        assert payload["kept_count"] == len(payload["kept_message_ids"])
        if kind == "tracked":
            assert payload["trigger"] == dict([TRIGGERS[trigger]["trigger"]])
            assert "inferred" not in marker.metadata
        else:
            assert payload["trigger"] is None and marker.metadata["inferred"] is True
            assert marker.metadata["langgraph_node"].endswith(".before_model")
        assert all(seq_of[i] < marker.seq for i in gone if i in seq_of)
    assert s.events("message.remove") == []  # a summarization is its marker alone
    # invariant 5: a marker sits after every message produced before its compaction (replaced
    # ones included) and before every message produced after it
    first_seen = first_appearance(s.snapshots)
    steps = compaction_steps(s.snapshots)
    for marker, step in zip(markers, steps, strict=True):
        for message_id, index in first_seen.items():
            if index < step:
                assert seq_of[message_id] < marker.seq
            else:
                assert seq_of[message_id] > marker.seq
    # every replaced id is a journaled message or an earlier summary
    summaries = {m.content["summary_message"]["data"]["id"] for m in markers}
    for marker in markers:
        assert set(marker.content["replaced_message_ids"]) <= set(seq_of) | summaries


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize(("mode", "trigger", "backend"), CASES)
async def test_replay_is_exact_for_every_model_call(
    make: Make, mode: str, trigger: str, backend: str, kind: str
) -> None:
    """For every agent llm.start, the model view equals what the fake model received."""
    s = await play(make(backend, trigger, kind), mode)
    starts = s.agent_model_starts()
    assert len(starts) == len(s.model.calls) == sum(len(r) for _, r in RUNS)
    for start, received in zip(starts, s.model.calls, strict=True):
        view = replay(s.store, s.thread, upto_seq=start.seq, view="model")
        assert view == received  # system prompt first, exactly as sent
        state = replay(s.store, s.thread, upto_seq=start.seq, view="state")
        assert shape(state) == shape(received[1:])  # the system prompt is not state
    full = replay(s.store, s.thread, view="full")
    assert shape(full) == shape(every_message_produced(s.snapshots))
    assert replay(s.store, s.thread, view="state") == s.snapshots[-1]
    assert verify(s.store, s.thread)["exact"] == len(starts)


async def test_compaction_on_the_first_model_call_of_a_run(make: Make) -> None:
    """A run whose input crosses the trigger is compacted before its first model call."""
    s = await play(make("memory"), "sync")
    firsts: dict[str, int] = {}
    for start in s.agent_model_starts():
        firsts.setdefault(start.run_id, start.seq)
    run_starts = {e.run_id: e.seq for e in s.events("run.start")}
    early = [
        m
        for m in s.events("middleware:summarize")
        if run_starts[m.run_id] < m.seq < firsts[m.run_id]
    ]
    assert early, "no run was compacted before its first model call"
    for marker in early:
        first_call = s.model.calls[
            [st.seq for st in s.agent_model_starts()].index(firsts[marker.run_id])
        ]
        assert first_call[1].id == marker.content["summary_message"]["data"]["id"]


async def test_tool_results_stay_with_their_calls(make: Make) -> None:
    """No model call ever receives a tool result whose AI call was summarized away."""
    s = await play(make("memory"), "async")
    for received in s.model.calls:
        calls = {c["id"] for m in received if isinstance(m, AIMessage) for c in m.tool_calls}
        assert all(m.tool_call_id in calls for m in received if isinstance(m, ToolMessage))
    assert any(sum(isinstance(m, ToolMessage) for m in received) >= 3 for received in s.model.calls)


async def test_timeline_shows_every_message_and_each_marker(make: Make) -> None:
    """The timeline lists every produced message once and one marker per compaction."""
    s = await play(make("sqlite"), "sync")
    items: list[Any] = []
    before = None
    while True:
        page = build_timeline(s.store, s.thread, before_seq=before, limit=4)
        items = page["items"] + items
        if not page["has_more"]:
            break
        before = page["next_before_seq"]
    messages = [i for i in items if i["type"] != "summary_marker"]
    markers = [i for i in items if i["type"] == "summary_marker"]
    assert [i["id"] for i in messages] == [m.id for m in every_message_produced(s.snapshots)]
    assert len(markers) == len(compactions(s.snapshots))
    journaled = {i["id"]: i["seq"] for i in messages}
    for marker in markers:
        seqs = [journaled[i] for i in marker["replaced_message_ids"] if i in journaled]
        # a compaction may condense only the previous summary (no journaled message)
        assert marker["first_replaced_seq"] == min(seqs, default=None)
        assert marker["last_replaced_seq"] == max(seqs, default=None)
        assert max(seqs, default=0) < marker["seq"]
        assert marker["summary"].startswith("Here is a summary")


async def test_stock_middleware_gives_the_markers_the_tracked_one_does(make: Make) -> None:
    """Same runs: the stock middleware's compactions are inferred, marker for marker."""
    stock = await play(make(kind="stock"), "sync")
    tracked = await play(make(kind="tracked"), "sync")
    assert shape(stock.snapshots[-1]) == shape(tracked.snapshots[-1])

    def markers(s: Scenario) -> list[tuple[int, int, str]]:
        return [
            (i["replaced_count"], len(i["replaced_message_ids"]), i["summary"])
            for i in build_timeline(s.store, s.thread, limit=200)["items"]
            if i["type"] == "summary_marker"
        ]

    assert markers(stock) == markers(tracked) != []
    stock_items = build_timeline(stock.store, stock.thread, limit=200)["items"]
    assert all(i["inferred"] for i in stock_items if i["type"] == "summary_marker")
    # the summary is the marker's, never a human item as if the user had said it
    humans = [i["content"] for i in stock_items if i["type"] == "human"]
    assert humans == [text for text, _ in RUNS]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_restore_thread_after_the_checkpointer_is_lost(make: Make, mode: str) -> None:
    """With a new empty checkpointer, restore_thread lets the next run see the replayed context."""
    s = await play(make("sqlite"), mode)
    expected = replay(s.store, s.thread, view="state")
    assert expected == s.snapshots[-1]
    s.model = ScriptedChatModel([ai("welcome back")])
    s.agent = create_agent(
        s.model, tools=[lookup], system_prompt="You plan trips.", checkpointer=InMemorySaver()
    )
    restore_thread(s.store, s.thread, s.agent, {"configurable": {"thread_id": s.thread}})
    if mode == "sync":
        s.run_sync("where next?")
    else:
        await s.run_async("where next?")
    (received,) = s.model.calls
    assert shape(received[1:-1]) == shape(expected)
    assert [m.id for m in received[1:-1]] == [m.id for m in expected]
    assert received[-1].content == "where next?"
