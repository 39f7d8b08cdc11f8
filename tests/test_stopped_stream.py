"""A stream the caller stops early is a cancelled run whose last step stays in the journal.

Stopping a stream (``break`` out of ``stream``, ``close()``, ``aclose()`` after ``async for``)
throws ``GeneratorExit`` into LangGraph's loop, which reports it to the root's
``on_chain_error``. The journal wrote ``run.error`` for it, and dropped the edits of the last
superstep as not applied — but LangGraph only yields between tasks or between supersteps, and
on its way out it saves every finished task's writes (applied, or as pending writes that
``get_state`` applies), whatever the durability. A summarization in that step was in the
checkpoint and not in the journal: replay's state differed from ``get_state`` and the timeline
had no summary marker. When the stream stopped between the tasks of that step, a new input
next makes LangGraph drop those pending writes: the next run's resync journals the state's
order, and replay must bring back the messages the summary had replaced.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from history import build_timeline, replay, verify
from journal import RunEvent, RunJournal, SqliteEventStore
from tests.fakes import ScriptedChatModel, ai, call
from tests.test_summarization_middleware import lookup

THREAD = "stopped"
SUMMARIZER = "SummarizationMiddleware.before_model"
#: How the caller stops the stream, sync and async.
STOPS = ["break", "close", "async-aclose", "async-break"]
#: ``values``/``updates`` yield between supersteps (the step is applied); with ``custom`` the
#: loop yields as each task finishes (its writes are pending writes of the checkpoint).
STREAM_MODES: dict[str, Any] = {
    "values": "values",
    "updates": "updates",
    "mid-step": ["updates", "custom"],
}


def has_summary(messages: list[BaseMessage]) -> bool:
    """Whether ``messages`` hold the summary message a stock summarization injects."""
    return any(m.additional_kwargs.get("lc_source") == "summarization" for m in messages)


def summarized(mode: str, chunk: Any) -> bool:
    """Whether ``chunk`` (of stream mode ``mode``) shows the summarizing step."""
    if mode == "values":
        return has_summary(chunk["messages"])
    if mode == "mid-step":
        kind, chunk = chunk
        if kind != "updates":
            return False
    return bool(chunk.get(SUMMARIZER))


class Thread:
    """One thread of a stock-summarizing agent, journaled into SQLite."""

    def __init__(self, tmp_path: Path) -> None:
        self.store = SqliteEventStore(tmp_path / "journal.db")
        self.journal = RunJournal(self.store, spool_path=tmp_path / "spool")
        answers = [ai("", call("lookup", city=f"c{i}")) for i in range(4)]
        self.model = ScriptedChatModel([*answers, *(ai(f"answer {i}") for i in range(6))])
        counter = itertools.count(1)
        summary_model = ScriptedChatModel(lambda _: AIMessage(f"summary {next(counter)}"))
        middleware = SummarizationMiddleware(
            summary_model, trigger=("messages", 4), keep=("messages", 2)
        )
        self.agent: Any = create_agent(
            self.model, tools=[lookup], middleware=[middleware], checkpointer=InMemorySaver()
        )
        self.config: RunnableConfig = {
            "configurable": {"thread_id": THREAD},
            "callbacks": [self.journal],
        }

    async def stop_after_summary(self, stop: str, mode: str, durability: str) -> None:
        """Stream a run and stop it at the first chunk that shows the summarizing step."""
        text = {"messages": [HumanMessage("plan a trip")]}
        kw: dict[str, Any] = {"stream_mode": STREAM_MODES[mode], "durability": durability}
        if stop == "break":
            for chunk in self.agent.stream(text, self.config, **kw):
                if summarized(mode, chunk):
                    break
        elif stop == "close":
            stream = self.agent.stream(text, self.config, **kw)
            for chunk in stream:
                if summarized(mode, chunk):
                    break
            stream.close()
        else:
            astream = self.agent.astream(text, self.config, **kw)
            async for chunk in astream:
                if summarized(mode, chunk):
                    break
            if stop == "async-aclose":
                await astream.aclose()
            else:  # dropped: a task of the event loop's finalizer closes it
                del astream
                gc.collect()
                await self.until_ended()
        assert self.journal.flush(timeout=10)

    async def until_ended(self, timeout: float = 10) -> None:
        """Wait until the thread's run has its last lifecycle event."""
        deadline = time.monotonic() + timeout
        while len(self.lifecycle()) < 2 and time.monotonic() < deadline:
            assert await self.journal.aflush(timeout)
            await asyncio.sleep(0.01)

    def state(self) -> list[Any]:
        return list(self.agent.get_state(self.config).values["messages"])

    def lifecycle(self) -> list[RunEvent]:
        return [e for e in self.store.read(THREAD) if e.category == "lifecycle"]

    def assert_replays_the_checkpoint(self) -> None:
        assert replay(self.store, THREAD, view="state") == self.state()
        report = verify(self.store, THREAD)
        assert report["ok"], report


@pytest.fixture
def thread(tmp_path: Path) -> Iterator[Callable[[], Thread]]:
    made: list[Thread] = []

    def factory() -> Thread:
        path = tmp_path / str(len(made))
        path.mkdir()
        made.append(Thread(path))
        return made[-1]

    yield factory
    for t in made:
        t.journal.close(timeout=10)
        t.store.close()


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
@pytest.mark.parametrize("mode", list(STREAM_MODES))
@pytest.mark.parametrize("stop", STOPS)
async def test_a_stopped_stream_is_a_cancel_that_keeps_its_last_step(
    thread: Callable[[], Thread], stop: str, mode: str, durability: str
) -> None:
    """A stream stopped right after a summarizing step is run.cancel (reason GeneratorExit),
    replay's state equals the checkpoint and the timeline shows the summary marker."""
    t = thread()
    await t.stop_after_summary(stop, mode, durability)
    lifecycle = t.lifecycle()
    assert [e.event_type for e in lifecycle] == ["run.start", "run.cancel"]
    assert lifecycle[-1].content["status"] == "cancelled"
    assert lifecycle[-1].content["reason"] == "GeneratorExit"
    (run,) = t.store.list_runs(THREAD)
    assert run.status == "cancelled" and run.error_type is None
    assert has_summary(t.state())  # LangGraph kept the step the stream stopped after
    t.assert_replays_the_checkpoint()
    items = build_timeline(t.store, THREAD)["items"]
    assert [i["type"] for i in items].count("summary_marker") == 1


class FirstNodeState(BaseCallbackHandler):
    """Keeps the messages the first node of a run reads (the state as the run starts)."""

    def __init__(self) -> None:
        self.messages: list[BaseMessage] | None = None

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if self.messages is None and (metadata or {}).get("langgraph_node"):
            self.messages = list(inputs["messages"])


@pytest.mark.parametrize("resume", [False, True], ids=["new-input", "resumed"])
@pytest.mark.parametrize("stop", ["close", "async-aclose"])
async def test_the_run_after_a_stream_stopped_mid_step_replays_its_state(
    thread: Callable[[], Thread], stop: str, resume: bool
) -> None:
    """After a stream stopped between the tasks of a summarizing step, the next run's state
    (new input: LangGraph drops the pending summary; resumed: it applies it) replays exactly,
    from its first model call on."""
    t = thread()
    await t.stop_after_summary(stop, "mid-step", "sync")
    t.assert_replays_the_checkpoint()
    first = FirstNodeState()
    config: RunnableConfig = {**t.config, "callbacks": [t.journal, first]}
    follow_up = None if resume else {"messages": [HumanMessage("and then?")]}
    if stop == "close":
        t.agent.invoke(follow_up, config)
    else:
        await t.agent.ainvoke(follow_up, config)
    assert t.journal.flush(timeout=10)
    assert [e.event_type for e in t.lifecycle()][-1] == "run.end"
    t.assert_replays_the_checkpoint()
    # the first model call of the run (the summarizer's, or the agent's) saw that state
    run_id = t.lifecycle()[-1].run_id
    call = next(e for e in t.store.read(THREAD, event_type="llm.start") if e.run_id == run_id)
    assert replay(t.store, THREAD, upto_seq=call.seq, view="state") == first.messages
