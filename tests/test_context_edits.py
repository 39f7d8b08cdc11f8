"""Every edit of the messages state journaled: removals, rewrites, replacements, request edits.

Real ``StateGraph`` and ``create_agent`` runs with a recording fake model. After each run the
journal's state view equals the checkpoint; at every agent model call the model view equals
exactly what the model received; ``verify`` agrees.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    ClearToolUsesEdit,
    ContextEditingMiddleware,
    ModelRequest,
    ModelResponse,
)
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from history import build_timeline, replay, restore_thread, verify
from journal import MemoryEventStore, RunEvent, RunJournal, SqliteEventStore
from journal.store import RunEventStore
from tests.cli_helpers import run_cli
from tests.fakes import ScriptedChatModel, ai, call

THREAD = "edits"
QUESTIONS = [f"question {n}" for n in range(1, 7)]

Node = Callable[[MessagesState], dict[str, Any]]


def answering_model() -> ScriptedChatModel:
    """A model that answers every call (and records what it received)."""
    return ScriptedChatModel(lambda messages: ai(f"answer after {len(messages)} messages"))


def chat_node(model: ScriptedChatModel) -> RunnableLambda[Any, Any]:
    """The graph's model node, with a real async path for ainvoke."""

    def chat(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    async def achat(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    return RunnableLambda(chat, afunc=achat)


def trim_by_id(state: MessagesState) -> dict[str, Any]:
    """LangGraph's documented way to trim: delete all but the last 3 messages by id."""
    messages = state["messages"]
    if len(messages) <= 3:
        return {}
    return {"messages": [RemoveMessage(id=str(m.id)) for m in messages[:-3]]}


def rewrite_all(state: MessagesState) -> dict[str, Any]:
    """Replace the whole list: a new note first, then the first and the last message."""
    messages = state["messages"]
    if len(messages) <= 4:
        return {}
    note = AIMessage("(earlier turns dropped)")
    return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), note, messages[0], messages[-1]]}


def redact_first(state: MessagesState) -> dict[str, Any]:
    """Replace the first message under its own id (a same-id edit), and resend the rest."""
    first, *rest = state["messages"]
    if first.content == "[redacted]":
        return {"messages": list(state["messages"])}  # same objects: no change at all
    return {"messages": [HumanMessage("[redacted]", id=first.id), *rest]}


class Harness:
    """A graph, its checkpointer and a journal; runs questions and checks the journal."""

    def __init__(
        self,
        store: RunEventStore,
        tmp_path: Path,
        build: Callable[..., Any],
        model: ScriptedChatModel,
    ) -> None:
        self.store = store
        self.journal = RunJournal(store, spool_path=tmp_path / "spool.jsonl")
        self.model = model
        self.build = build
        self.graph = build(self.model, InMemorySaver())

    def config(self) -> RunnableConfig:
        return {"configurable": {"thread_id": THREAD}, "callbacks": [self.journal]}

    async def run(self, text: str | dict[str, Any], mode: str) -> None:
        """Run a question (or ``inputs`` as given) and wait for the journal to store it."""
        inputs = {"messages": [HumanMessage(text)]} if isinstance(text, str) else text
        if mode == "sync":
            self.graph.invoke(inputs, self.config())
        else:
            await self.graph.ainvoke(inputs, self.config())
        assert self.journal.flush(timeout=10)

    def state(self) -> list[BaseMessage]:
        return list(self.graph.get_state(self.config()).values["messages"])

    def agent_calls(self) -> list[RunEvent]:
        starts = self.store.read(THREAD, event_type="llm.start")
        return [e for e in starts if e.metadata["caller"] == "agent"]

    async def play(self, mode: str, questions: list[str] = QUESTIONS) -> None:
        """Run every question; after each run the state view equals the checkpoint."""
        for text in questions:
            await self.run(text, mode)
            assert replay(self.store, THREAD, view="state") == self.state(), text

    def assert_every_call_replays_exactly(self) -> None:
        calls = self.agent_calls()
        assert len(calls) == len(self.model.calls) > 0
        for start, received in zip(calls, self.model.calls, strict=True):
            assert replay(self.store, THREAD, upto_seq=start.seq, view="model") == received
        report = verify(self.store, THREAD)
        assert report["ok"] and report["exact"] == report["calls"] == len(calls), report


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Callable[..., Harness]]:
    made: list[Harness] = []

    def factory(
        build: Callable[..., Any],
        backend: str = "memory",
        model: Callable[[], ScriptedChatModel] = answering_model,
    ) -> Harness:
        path = tmp_path / str(len(made))
        path.mkdir()
        store: RunEventStore = (
            MemoryEventStore() if backend == "memory" else SqliteEventStore(path / "j.db")
        )
        made.append(Harness(store, path, build, model()))
        return made[-1]

    yield factory
    for h in made:
        h.journal.close(timeout=10)
        h.store.close()


def chain(*nodes: tuple[str, Any]) -> Callable[..., Any]:
    """A builder of ``START -> nodes... -> chat -> END``."""

    def build(model: ScriptedChatModel, checkpointer: InMemorySaver) -> Any:
        graph = StateGraph(MessagesState)
        previous = START
        for name, node in nodes:
            graph.add_node(name, node)
            graph.add_edge(previous, name)
            previous = name
        graph.add_node("chat", chat_node(model))
        graph.add_edge(previous, "chat")
        graph.add_edge("chat", END)
        return graph.compile(checkpointer=checkpointer)

    return build


def fan_out(*nodes: tuple[str, Any]) -> Callable[..., Any]:
    """A builder whose ``nodes`` run in one superstep, then ``chat``."""

    def build(model: ScriptedChatModel, checkpointer: InMemorySaver) -> Any:
        graph = StateGraph(MessagesState)
        for name, node in nodes:
            graph.add_node(name, node)
            graph.add_edge(START, name)
        graph.add_node("chat", chat_node(model))
        graph.add_edge([name for name, _ in nodes], "chat")
        graph.add_edge("chat", END)
        return graph.compile(checkpointer=checkpointer)

    return build


def items(store: RunEventStore) -> list[Any]:
    """Every timeline item of the thread, walking the pages back."""
    out: list[Any] = []
    before = None
    while True:
        page = build_timeline(store, THREAD, before_seq=before, limit=3)
        out = page["items"] + out
        if not page["has_more"]:
            return out
        before = page["next_before_seq"]


MODES = ["sync", "async"]


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
@pytest.mark.parametrize("mode", MODES)
async def test_deleting_by_id_is_journaled_and_replayed(
    harness: Callable[..., Harness], mode: str, backend: str
) -> None:
    """RemoveMessage(id) trims: removal markers, exact state after each run, exact calls."""
    h = harness(chain(("trim", trim_by_id)), backend)
    await h.play(mode)
    h.assert_every_call_replays_exactly()
    removals = h.store.read(THREAD, event_type="message.remove")
    assert len(removals) == len(QUESTIONS) - 2  # from the third question on
    timeline = items(h.store)
    markers = [i for i in timeline if i["type"] == "removal_marker"]
    assert [m["removed_count"] for m in markers] == [
        len(r.content["removed_message_ids"]) for r in removals
    ]
    assert all(m["removed_count"] > 0 for m in markers)
    seq_of = {i["id"]: i["seq"] for i in timeline if i["type"] in ("human", "ai")}
    for marker in markers:  # invariant 5: after what it removed, before what came later
        removed = [seq_of[i] for i in marker["removed_message_ids"]]
        assert marker["first_removed_seq"] == min(removed)
        assert marker["last_removed_seq"] == max(removed) < marker["seq"]
    # the full view still has every message ever said
    assert len(replay(h.store, THREAD, view="full")) == 2 * len(QUESTIONS)


@pytest.mark.parametrize("mode", MODES)
async def test_a_whole_rewrite_keeps_the_new_order(
    harness: Callable[..., Harness], mode: str
) -> None:
    """REMOVE_ALL + a new list (a new note first): the order after it replays exactly."""
    h = harness(chain(("rewrite", rewrite_all)))
    await h.play(mode)
    h.assert_every_call_replays_exactly()
    rewrites = h.store.read(THREAD, event_type="message.remove")
    assert rewrites and all(r.content["all"] for r in rewrites)
    for rewrite in rewrites:
        order = rewrite.content["state_message_ids"]
        assert not set(order) & set(rewrite.content["removed_message_ids"])
    assert h.state()[0].content == "(earlier turns dropped)"


@pytest.mark.parametrize(
    "names",
    [("a_trim", "b_trim"), ("a_rewrite", "b_note"), ("z_rewrite", "b_note")],
    ids=["two-removals", "rewrite-then-note", "note-then-rewrite"],
)
@pytest.mark.parametrize("mode", MODES)
async def test_edits_in_one_superstep_apply_in_task_order(
    harness: Callable[..., Harness], mode: str, names: tuple[str, str]
) -> None:
    """Two writes in one superstep (removals, or a rewrite beside a new message) replay in
    the order LangGraph applies them: by task path, not by completion."""

    def drop(index: int) -> Node:
        def node(state: MessagesState) -> dict[str, Any]:
            messages = state["messages"]
            if len(messages) <= 4:
                return {}
            return {"messages": [RemoveMessage(id=str(messages[index].id))]}

        return node

    def note(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"note at {len(state['messages'])}")]}

    def keep_last(state: MessagesState) -> dict[str, Any]:
        messages = state["messages"]
        if len(messages) <= 4:
            return {}
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *messages[-2:]]}

    first, second = names
    if names == ("a_trim", "b_trim"):
        nodes = [(first, drop(0)), (second, drop(1))]
    else:
        nodes = [(first, keep_last), (second, note)]
    h = harness(fan_out(*nodes))
    await h.play(mode)
    h.assert_every_call_replays_exactly()
    assert h.store.read(THREAD, event_type="message.remove")


@pytest.mark.parametrize("mode", MODES)
async def test_a_same_id_replacement_is_journaled_once(
    harness: Callable[..., Harness], mode: str
) -> None:
    """A node that rewrites a message under its id journals the new version once; resending
    the same objects journals nothing."""
    h = harness(chain(("redact", redact_first)))
    await h.play(mode, QUESTIONS[:3])
    h.assert_every_call_replays_exactly()
    humans = h.store.read(THREAD, event_type="message.human")
    replaced = [e for e in humans if e.metadata.get("replacement")]
    assert len(replaced) == 1 and replaced[0].content["data"]["content"] == "[redacted]"
    assert len(humans) == len(QUESTIONS[:3]) + 1
    edited = [i for i in items(h.store) if i.get("replacement")]
    assert [i["id"] for i in edited] == [f"{replaced[0].content['data']['id']}@{edited[0]['seq']}"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_failed_edit_is_not_journaled(harness: Callable[..., Harness], mode: str) -> None:
    """RemoveMessage of an unknown id fails the superstep: nothing of it is journaled."""

    def bad(state: MessagesState) -> dict[str, Any]:
        if len(state["messages"]) > 2:
            return {"messages": [RemoveMessage(id="no-such-id"), AIMessage("lost")]}
        return {}

    h = harness(chain(("bad", bad)))
    await h.run(QUESTIONS[0], mode)
    with pytest.raises(ValueError, match="no-such-id"):
        await h.run(QUESTIONS[1], mode)
    assert h.journal.flush(timeout=10)
    assert h.store.read(THREAD, event_type="message.remove") == []
    contents = [m.content for m in replay(h.store, THREAD, view="full")]
    assert "lost" not in contents
    # the checkpoint holds the state before the failed step (get_state would re-apply the
    # failed write and raise again)
    saved = h.graph.checkpointer.get_tuple(h.config()).checkpoint["channel_values"]
    assert replay(h.store, THREAD, view="state") == saved["messages"]
    assert [m.content for m in saved["messages"]][-1] == QUESTIONS[1]
    assert h.store.read(THREAD, event_type="run.error")


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: a long description " * 8


class DropOldTurns(AgentMiddleware[Any, Any]):
    """Before each model call, delete (by id) every message before the latest question."""

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        messages = state["messages"]
        last = max(i for i, m in enumerate(messages) if m.type == "human")
        if last == 0:
            return None
        return {"messages": [RemoveMessage(id=str(m.id)) for m in messages[:last]]}


def agent_script(turns: int) -> list[AIMessage]:
    """Per turn: two parallel lookups, one more, then an answer."""
    script: list[AIMessage] = []
    for t in range(turns):
        script += [
            ai("", call("lookup", city=f"a{t}"), call("lookup", city=f"b{t}")),
            ai("", call("lookup", city=f"c{t}")),
            ai(f"turn {t} done"),
        ]
    return script


def agent_model() -> ScriptedChatModel:
    return ScriptedChatModel(agent_script(len(QUESTIONS)))


def agent_builder(*middleware: Any) -> Callable[..., Any]:
    """A builder of a create_agent graph with ``lookup``, a system prompt and ``middleware``."""

    def build(model: ScriptedChatModel, checkpointer: InMemorySaver) -> Any:
        return create_agent(
            model,
            tools=[lookup],
            system_prompt="You look cities up.",
            middleware=list(middleware),
            checkpointer=checkpointer,
        )

    return build


@pytest.mark.parametrize("mode", MODES)
async def test_parallel_tool_calls_around_a_removal(
    harness: Callable[..., Harness], mode: str
) -> None:
    """create_agent with parallel tool calls and a before_model hook that deletes old turns."""
    h = harness(agent_builder(DropOldTurns()), model=agent_model)
    await h.play(mode, QUESTIONS[:4])
    h.assert_every_call_replays_exactly()
    removals = h.store.read(THREAD, event_type="message.remove")
    assert len(removals) == 3
    assert all(r.metadata["langgraph_node"] == "DropOldTurns.before_model" for r in removals)
    assert all(r.metadata["caller"] == "middleware:DropOldTurns" for r in removals)


class KeepLastThree(AgentMiddleware[Any, Any]):
    """Sends the model only the last three messages (the state keeps everything)."""

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
    ) -> ModelResponse[Any]:
        return handler(request.override(messages=request.messages[-3:]))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        return await handler(request.override(messages=request.messages[-3:]))


@pytest.mark.parametrize(
    "middleware",
    [
        ContextEditingMiddleware(
            edits=[ClearToolUsesEdit(trigger=100, keep=1, clear_tool_inputs=True)]
        ),
        KeepLastThree(),
    ],
    ids=["clear-tool-uses", "trim-request"],
)
@pytest.mark.parametrize("mode", MODES)
async def test_request_only_edits_replay_exactly(
    harness: Callable[..., Harness], mode: str, middleware: Any
) -> None:
    """Edits of the model request (not the state) replay exactly, placeholders included,
    and each distinct edited message is stored once, not once per call."""
    h = harness(agent_builder(middleware), "sqlite", agent_model)
    await h.play(mode, QUESTIONS[:4])
    h.assert_every_call_replays_exactly()
    calls = h.agent_calls()
    inlined = [d for c in calls for d in c.metadata["context"]["inline"]]
    assert len(inlined) == len(set(inlined))  # a digest is inlined once per thread
    if isinstance(middleware, ContextEditingMiddleware):
        cleared = [m for received in h.model.calls for m in received if m.content == "[cleared]"]
        assert cleared  # the model really saw placeholders
        assert len(inlined) > 1  # ...which are not state messages
    # the state is untouched by request-only edits
    assert replay(h.store, THREAD, view="state") == h.state()


@pytest.mark.parametrize("mode", MODES)
async def test_restore_thread_continues_a_trimmed_conversation(
    harness: Callable[..., Harness], mode: str
) -> None:
    """After trims, restore_thread seeds a new checkpointer with the state view."""
    h = harness(chain(("trim", trim_by_id)))
    await h.play(mode, QUESTIONS[:4])
    expected = replay(h.store, THREAD, view="state")
    h.graph = h.build(h.model, InMemorySaver())
    restore_thread(h.store, THREAD, h.graph, {"configurable": {"thread_id": THREAD}})
    assert h.state() == expected
    await h.run("after the restart", mode)
    *earlier, question = h.model.calls[-1]
    assert earlier == expected[-2:]  # the trim kept the last three, the question included
    assert question.content == "after the restart"
    assert replay(h.store, THREAD, view="state") == h.state()
    h.assert_every_call_replays_exactly()


def test_verify_names_the_call_that_lost_a_message(
    harness: Callable[..., Harness], tmp_path: Path
) -> None:
    """A journal missing one message event: verify (and the CLI) name the calls it breaks."""
    import asyncio

    h = harness(chain(("trim", trim_by_id)))
    asyncio.run(h.play("sync", QUESTIONS[:3]))
    events = h.store.read(THREAD)
    victim = next(e for e in events if e.event_type == "message.ai")
    damaged = SqliteEventStore(tmp_path / "damaged.db")
    damaged.append([e for e in events if e.event_id != victim.event_id])
    report = verify(damaged, THREAD)
    assert not report["ok"] and report["diverged"] >= 1
    bad = [c for c in report["results"] if c["status"] == "diverged"]
    victim_id = victim.content["data"]["id"]
    assert all(
        p["message_id"] == victim_id and p["reason"] == "not_in_state"
        for c in bad
        for p in c["problems"]
    )
    first_user = next(
        call
        for call, received in zip(h.agent_calls(), h.model.calls, strict=True)
        if victim_id in [m.id for m in received]
    )
    assert bad[0]["llm_run_id"] == first_user.metadata["llm_run_id"]
    damaged.close()
    done = run_cli("verify", THREAD, "--store", f"sqlite:///{tmp_path / 'damaged.db'}")
    assert done.returncode == 1 and "diverged" in done.stdout
    healthy = tmp_path / "healthy.db"
    copy = SqliteEventStore(healthy)
    copy.append(events)
    copy.close()
    assert run_cli("verify", THREAD, "--store", f"sqlite:///{healthy}").returncode == 0


def test_cli_history_shows_each_removal(harness: Callable[..., Harness], tmp_path: Path) -> None:
    """`runjournal history` frames each removal as "N messages removed" where it happened."""
    import asyncio

    h = harness(chain(("trim", trim_by_id)), "sqlite")
    asyncio.run(h.play("sync", QUESTIONS[:4]))
    h.journal.close(timeout=10)
    url = f"sqlite:///{tmp_path / '0' / 'j.db'}"
    done = run_cli("history", THREAD, "--store", url, "--limit", "100")
    assert done.returncode == 0, done.stderr
    counts = [
        len(r.content["removed_message_ids"])
        for r in h.store.read(THREAD)
        if r.event_type == "message.remove"
    ]
    shown = [line for line in done.stdout.splitlines() if "removed" in line]
    assert all(f"{n} messages removed" in line for n, line in zip(counts, shown, strict=True))
    # the first trim happened when the third question arrived, before its answer
    first = done.stdout.index(f"{counts[0]} messages removed")
    assert done.stdout.index("question 3") < first
    assert "answer after 3 messages" in done.stdout[first:].split("question 4")[0]


def test_verify_names_a_message_whose_content_differs(
    harness: Callable[..., Harness], tmp_path: Path
) -> None:
    """A journal whose message or inlined copy was altered: verify names each by reason."""
    import asyncio

    h = harness(agent_builder(KeepLastThree()), model=agent_model)
    asyncio.run(h.play("sync", QUESTIONS[:2]))
    events = h.store.read(THREAD)
    altered = next(e for e in events if e.event_type == "message.tool")
    call = next(
        e for e in events if e.event_type == "llm.start" and e.metadata["context"]["inline"]
    )
    copies: list[Any] = []
    for event in events:
        data = event.model_dump(exclude={"seq"})
        if event.event_id == altered.event_id:
            data["content"]["data"]["content"] = "tampered"
        if event.event_id == call.event_id:
            inline = data["metadata"]["context"]["inline"]
            for content in inline.values():
                content["data"]["content"] = "tampered too"
        copies.append(data)
    damaged = MemoryEventStore()
    damaged.append(copies)
    report = verify(damaged, THREAD)
    reasons = {p["reason"] for c in report["results"] for p in c["problems"]}
    assert reasons == {"content_differs", "inline_digest_mismatch"}
    named = {p["message_id"] for c in report["results"] for p in c["problems"]}
    assert altered.content["data"]["id"] in named


def test_a_malformed_edit_never_breaks_the_journal(harness: Callable[..., Harness]) -> None:
    """A node output LangGraph cannot apply fails the run as LangGraph says; the journal
    records the failure, journals nothing of the edit and keeps working."""
    import asyncio

    def malformed(state: MessagesState) -> dict[str, Any]:
        if len(state["messages"]) > 2:
            return {"messages": [RemoveMessage(id=str(state["messages"][0].id)), 42]}
        return {}

    h = harness(chain(("malformed", malformed)))
    asyncio.run(h.run(QUESTIONS[0], "sync"))
    with pytest.raises(Exception) as failure:
        asyncio.run(h.run(QUESTIONS[1], "sync"))
    assert "journal" not in type(failure.value).__module__
    assert h.journal.flush(timeout=10)
    (error,) = h.store.read(THREAD, event_type="run.error")
    assert error.content["error_type"] == type(failure.value).__name__
    assert h.store.read(THREAD, event_type="message.remove") == []
    assert h.journal.dropped_events == 0


def test_a_restarted_journal_references_what_the_store_holds(
    harness: Callable[..., Harness], tmp_path: Path
) -> None:
    """After a restart, a call's record inlines no message the store already holds."""
    import asyncio

    h = harness(chain(("trim", trim_by_id)), "sqlite")
    asyncio.run(h.play("sync", QUESTIONS[:3]))
    h.journal.close(timeout=10)
    h.journal = RunJournal(h.store, spool_path=tmp_path / "second.jsonl")  # a new process
    asyncio.run(h.play("sync", QUESTIONS[3:]))
    first_after_restart = h.agent_calls()[3]
    assert first_after_restart.metadata["context"]["inline"] == {}
    assert "base" not in first_after_restart.metadata["context"]  # a whole record again
    h.assert_every_call_replays_exactly()
