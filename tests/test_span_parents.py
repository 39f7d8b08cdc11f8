"""Trace events name their parent span, and the run's spans nest by it: a lead agent whose
model calls two tools in one AI message, each tool running its own ``create_agent`` subagent,
in parallel (executor threads in sync runs, concurrent tasks in async runs)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.callbacks import BaseCallbackHandler, dispatch_custom_event
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.runtime import Runtime

from history._reads import run_plan
from history._spans import spans_plan
from journal import MemoryEventStore, RunEvent, RunJournal
from journal.catalog import PARENT_SPAN_KEY
from middleware import TrackingSummarizationMiddleware
from tests.fakes import ScriptedChatModel, ai, call

T = "parallel-subagents"
_TRACE_CALLS = ("llm.start", "llm.end", "tool.start", "tool.end")


class Chains(BaseCallbackHandler):
    """Records each chain's run id with its parent and LangGraph node (thread-safe)."""

    run_inline = True

    def __init__(self) -> None:
        self.parents: dict[str, str | None] = {}
        self.nodes: dict[str, str | None] = {}
        self._lock = threading.Lock()

    def on_chain_start(
        self,
        serialized: Any,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        with self._lock:
            self.parents[str(run_id)] = str(parent_run_id) if parent_run_id else None
            self.nodes[str(run_id)] = (metadata or {}).get("langgraph_node")


def _subagent(name: str, meet: threading.Barrier) -> Any:
    """A subagent with its own fake model (model name ``<name>-model``): a tool call, then an
    answer. Its first model call waits at ``meet`` for the other subagent's first call, so
    the two subagents' calls interleave (the model runs on a worker thread in both modes)."""

    @tool
    def note(text: str) -> str:
        """Keep a note."""
        return f"{name} noted {text}"

    def first(messages: list[BaseMessage]) -> AIMessage:
        meet.wait()
        return ai("", call("note", f"{name}-note", text=name))

    model = ScriptedChatModel([first, ai(f"{name} says hi")], model_name=f"{name}-model")
    return create_agent(model, [note], name=name)


def _lead(mode: str) -> Any:
    """The lead agent: one AI message calling ``ask_alpha`` and ``ask_beta``, each running its
    own subagent (sync tools on executor threads, or async tools as concurrent tasks). Each
    tool waits for the other to start before it runs its subagent: both tool calls are open
    while the subagents' calls interleave."""
    meet = threading.Barrier(2, timeout=10)
    alpha, beta = _subagent("alpha", meet), _subagent("beta", meet)
    if mode == "sync":
        started = threading.Barrier(2, timeout=10)

        @tool
        def ask_alpha(question: str) -> str:
            """Ask alpha."""
            started.wait()
            return str(alpha.invoke({"messages": [HumanMessage(question)]})["messages"][-1].content)

        @tool
        def ask_beta(question: str) -> str:
            """Ask beta."""
            started.wait()
            return str(beta.invoke({"messages": [HumanMessage(question)]})["messages"][-1].content)

        tools = [ask_alpha, ask_beta]
    else:
        both = asyncio.Barrier(2)

        @tool
        async def ask_alpha(question: str) -> str:
            """Ask alpha."""
            await asyncio.wait_for(both.wait(), 10)
            result = await alpha.ainvoke({"messages": [HumanMessage(question)]})
            return str(result["messages"][-1].content)

        @tool
        async def ask_beta(question: str) -> str:
            """Ask beta."""
            await asyncio.wait_for(both.wait(), 10)
            result = await beta.ainvoke({"messages": [HumanMessage(question)]})
            return str(result["messages"][-1].content)

        tools = [ask_alpha, ask_beta]
    lead_model = ScriptedChatModel(
        [
            ai(
                "",
                call("ask_alpha", "c-alpha", question="a?"),
                call("ask_beta", "c-beta", question="b?"),
            ),
            ai("both answered"),
        ],
        model_name="lead-model",
    )
    return create_agent(lead_model, tools, name="lead")


def _run(
    mode: str, tmp_path: Path, strip_parents: bool = False
) -> tuple[list[RunEvent], Chains, Any]:
    """Journal one lead run; return its events, the chains seen, and its spans (read from a
    store holding the events, without their parent keys if ``strip_parents``)."""
    store = MemoryEventStore()
    chains = Chains()
    config: Any = {"configurable": {"thread_id": T}, "callbacks": []}
    with RunJournal(store, spool_path=tmp_path / f"{mode}.jsonl") as journal:
        config["callbacks"] = [journal, chains]
        agent = _lead(mode)
        if mode == "sync":
            agent.invoke({"messages": [HumanMessage("go")]}, config)
        else:
            asyncio.run(agent.ainvoke({"messages": [HumanMessage("go")]}, config))
    events = store.read(T)
    (run_id,) = {e.run_id for e in events}
    if strip_parents:
        old = MemoryEventStore()
        old.append(
            [
                {
                    **e.model_dump(exclude={"seq"}),
                    "metadata": {k: v for k, v in e.metadata.items() if k != PARENT_SPAN_KEY},
                }
                for e in events
            ]
        )
        store = old
    return events, chains, run_plan(store, spans_plan(T, run_id))


def _tool_span(spans: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in spans.values() if s["kind"] == "tool" and s["name"] == name)


def _under(spans: dict[str, Any], span: dict[str, Any], ancestor: dict[str, Any]) -> bool:
    parent = span["parent"]
    while parent is not None:
        if parent == ancestor["id"]:
            return True
        parent = spans[parent]["parent"]
    return False


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_parallel_subagents_model_spans_sit_under_their_own_tool(mode: str, tmp_path: Path) -> None:
    """Each subagent's model and tool spans sit in a subagent span under the tool call that ran
    it, though both subagents run at once and their events interleave."""
    events, _, body = _run(mode, tmp_path)
    spans = {s["id"]: s for s in body["spans"]}
    starts = [e for e in events if e.event_type == "llm.start"]
    alpha_seqs = [e.seq for e in starts if e.metadata["model"] == "alpha-model"]
    beta_seqs = [e.seq for e in starts if e.metadata["model"] == "beta-model"]
    # the subagents really ran side by side: each one's first call precedes the other's last
    assert min(alpha_seqs) < max(beta_seqs) and min(beta_seqs) < max(alpha_seqs)
    for name in ("alpha", "beta"):
        own_tool = _tool_span(spans, f"ask_{name}")
        subagent = next(
            s for s in spans.values() if s["kind"] == "subagent" and s["parent"] == own_tool["id"]
        )
        assert subagent["name"] == name
        models = [
            s for s in spans.values() if s["kind"] == "model" and s.get("model") == f"{name}-model"
        ]
        assert len(models) == 2
        assert all(_under(spans, s, subagent) for s in models)
        notes = [
            s
            for s in spans.values()
            if s["kind"] == "tool" and s.get("tool_call_id") == f"{name}-note"
        ]
        assert len(notes) == 1 and _under(spans, notes[0], subagent)
    lead = [s for s in spans.values() if s["kind"] == "model" and s.get("model") == "lead-model"]
    assert len(lead) == 2 and all(spans[s["parent"]]["kind"] == "node" for s in lead)
    assert body["llm_calls"] == 6 and body["tool_calls"] == 4


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_every_trace_event_names_its_nearest_traced_ancestor(mode: str, tmp_path: Path) -> None:
    """A subagent's calls name the tool call that ran its graph; the lead's model and tool
    calls name their node of the root graph (the ``model`` / ``tools`` chain run)."""
    events, chains, _ = _run(mode, tmp_path)
    traces = [e for e in events if e.category == "trace"]
    assert traces and all(isinstance(e.metadata.get(PARENT_SPAN_KEY), str) for e in traces)
    tool_runs = {
        e.metadata["tool_call_id"]: e.metadata["tool_run_id"]
        for e in events
        if e.event_type == "tool.start"
    }
    for event in (e for e in events if e.event_type in _TRACE_CALLS):
        md = event.metadata
        caller = md["caller"]
        parent = md[PARENT_SPAN_KEY]
        if caller.startswith("subagent:"):
            # a subagent's call: under the lead's tool call that runs that subagent
            owner = "c-alpha" if _subagent_of(event) == "alpha" else "c-beta"
            assert parent == tool_runs[owner], event
        else:
            # the lead's call: its node of the root graph, a chain directly under the root
            assert chains.nodes[parent] == md["langgraph_node"], event
            root = chains.parents[parent]
            assert root is not None and chains.parents[root] is None
            assert root == event.run_id


def _subagent_of(event: RunEvent) -> str:
    """Which subagent made a traced call (by its model, or by its tool call's id)."""
    md = event.metadata
    if "model" in md:
        return str(md["model"]).removesuffix("-model")
    return str(md["tool_call_id"]).removesuffix("-note")


def test_events_without_parents_nest_by_the_order_rule(tmp_path: Path) -> None:
    """Events written before parents were named (the key stripped) keep the order rule: each
    subagent model call goes under the lead's latest tool call still open when it started."""
    events, _, body = _run("sync", tmp_path, strip_parents=True)
    spans = {s["id"]: s for s in body["spans"]}
    open_tools: list[str] = []
    expected: dict[str, str] = {}
    for event in events:
        md = event.metadata
        if md.get("caller") == "agent" and event.event_type == "tool.start":
            open_tools.append(md["tool_run_id"])
        elif md.get("caller") == "agent" and event.event_type == "tool.end":
            open_tools.remove(md["tool_run_id"])
        elif event.event_type == "llm.start" and md["caller"].startswith("subagent:"):
            expected[md["llm_run_id"]] = open_tools[-1]
    assert len(expected) == 4
    for llm, tool_run in expected.items():
        assert _under(spans, spans[f"llm:{llm}"], spans[f"tool:{tool_run}"])


def test_middleware_and_custom_events_name_the_run_they_happen_in(tmp_path: Path) -> None:
    """The summarizer's model call, its custom event and marker, and a recorded middleware
    event name their hook node of the root graph; a custom event dispatched inside a tool
    names that tool call, and its mark sits under the tool's span."""
    store = MemoryEventStore()
    chains = Chains()
    journal = RunJournal(store, spool_path=tmp_path / "m.jsonl")

    @tool
    def ping(text: str) -> str:
        """Dispatch a custom event from inside the tool."""
        dispatch_custom_event("pinged", {"text": text})
        return text

    class Redactor(AgentMiddleware):
        def before_model(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
            journal.record_middleware("redact", name="Redactor", hook="before_model", action="x")
            return None

    summarizer = ScriptedChatModel(lambda messages: ai("SUMMARY"), model_name="summarizer-model")
    summarize = TrackingSummarizationMiddleware(
        model=summarizer, trigger=("messages", 4), keep=("messages", 2)
    )
    script = [ai("", call("ping", text=str(i))) for i in range(2)] + [ai("done")]
    agent: Any = create_agent(ScriptedChatModel(script), [ping], middleware=[summarize, Redactor()])
    with journal:
        agent.invoke(
            {"messages": [HumanMessage("go")]},
            {"configurable": {"thread_id": T}, "callbacks": [journal, chains]},
        )
    events = store.read(T)
    named = [e for e in events if e.category in ("trace", "middleware")]
    assert named and all(isinstance(e.metadata.get(PARENT_SPAN_KEY), str) for e in named)

    def hook_run(node: str) -> set[str]:
        """The runs of the root graph's node ``node`` (one per step it ran in)."""
        root = events[0].run_id
        return {
            run
            for run, name in chains.nodes.items()
            if name == node and chains.parents[run] == root
        }

    marker = next(e for e in events if e.event_type == "middleware:summarize")
    summary_call = next(e for e in events if e.metadata.get("lc_source") == "summarization")
    for event in (
        marker,
        summary_call,
        *[e for e in events if e.event_type == "custom:summarization"],
    ):
        assert event.metadata[PARENT_SPAN_KEY] in hook_run(str(event.metadata["langgraph_node"]))
    redact = [e for e in events if e.event_type == "middleware:redact"]
    assert redact and all(
        e.metadata[PARENT_SPAN_KEY] in hook_run("Redactor.before_model") for e in redact
    )
    tool_runs = {e.metadata["tool_run_id"] for e in events if e.event_type == "tool.start"}
    pings = [e for e in events if e.event_type == "custom:pinged"]
    assert len(pings) == 2 and all(e.metadata[PARENT_SPAN_KEY] in tool_runs for e in pings)
    spans = {s["id"]: s for s in run_plan(store, spans_plan(T, events[0].run_id))["spans"]}
    for ping_event in pings:
        mark = spans[f"event:{ping_event.seq}"]
        assert mark["parent"] == f"tool:{ping_event.metadata[PARENT_SPAN_KEY]}"
