"""Attacks on runs, usage, the /history filters and the run routes, on real agent runs."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.runtime import Runtime

from history import thread_usage
from history._bounded import event_bytes
from history.server.app import create_app
from history.server.sse import StreamSettings
from journal import MemoryEventStore, NewEvent, RunEventStore, RunJournal, SqliteEventStore
from tests.cli_helpers import ROOT, cli_env, run_cli
from tests.fakes import ScriptedChatModel, ai, call

PAGE_BYTES = 12_000


class HiddenContext(AgentMiddleware[AgentState[Any], Any]):
    """Injects ``count`` pieces of context the user never typed (DeerFlow's hide_from_ui)."""

    def __init__(self, count: int) -> None:
        super().__init__()
        self.count = count

    def before_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any]:
        hidden = {"hide_from_ui": True}
        return {
            "messages": [
                HumanMessage(f"context {i}", additional_kwargs=hidden) for i in range(self.count)
            ]
        }


def _agent_thread(store: RunEventStore, *, runs: int, hidden: int, answer_chars: int) -> None:
    """``runs`` real runs on thread ``t``, each with hidden context and a long answer."""
    journal = RunJournal(store)
    agent = create_agent(
        ScriptedChatModel(lambda messages: ai("x" * answer_chars)),
        middleware=[HiddenContext(hidden)],
        checkpointer=InMemorySaver(),
    ).with_config(callbacks=[journal])
    for turn in range(runs):
        agent.invoke(
            {"messages": [{"role": "user", "content": f"question {turn}"}]},
            {"configurable": {"thread_id": "t"}},
        )
    journal.close()


@pytest.fixture
def hidden_thread() -> Iterator[MemoryEventStore]:
    """Six real runs whose hidden context sits between the long answers."""
    store = MemoryEventStore()
    _agent_thread(store, runs=6, hidden=2, answer_chars=8000)
    yield store
    store.close()


@pytest.mark.parametrize("limit", [3, 4, 5, 10])
async def test_history_pages_stay_within_the_byte_bound_when_hidden_items_are_left_out(
    hidden_thread: MemoryEventStore, limit: int
) -> None:
    """Every /history page (hidden context left out) fits the page size or holds one item,
    says size_limited when it stops short, and the walk shows each visible message once."""
    store = hidden_thread
    by_seq = {e.seq: e for e in store.read("t")}
    app = create_app(store, stream_settings=StreamSettings(page_bytes=PAGE_BYTES))
    transport = httpx.ASGITransport(app=app)
    seen: list[int] = []
    params: dict[str, Any] = {"limit": limit}
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        while True:
            page = (await client.get("/api/threads/t/history", params=params)).json()
            items = page["items"]
            size = sum(event_bytes(by_seq[item["seq"]]) for item in items)
            assert len(items) == 1 or size <= PAGE_BYTES, (len(items), size)
            if page["has_more"] and len(items) < limit:
                assert page.get("size_limited") is True
            assert not any(item["hidden"] for item in items)
            seen = [item["seq"] for item in items] + seen
            if not page["has_more"]:
                break
            params["before_seq"] = page["next_before_seq"]
    visible = [e.seq for e in store.read("t", category="message") if not e.metadata.get("hidden")]
    assert seen == visible


def test_usage_shows_the_running_run_whatever_run_limit(tmp_path: Any) -> None:
    """Read from inside a tool: active_run is the running run even with run_limit=0 (no runs
    listed), and its usage so far is there."""
    store = MemoryEventStore()
    journal = RunJournal(store)
    seen: list[Any] = []

    @tool
    def lookup(city: str) -> str:
        """Look a city up; meanwhile, read the thread's usage without listing runs."""
        journal.flush()
        seen.append(thread_usage(store, "t", run_limit=0))
        return f"{city}: sunny"

    agent = create_agent(
        ScriptedChatModel([ai("", call("lookup", city="Lisbon"), tokens=40), ai("Sunny.")]),
        tools=[lookup],
        checkpointer=InMemorySaver(),
    ).with_config(callbacks=[journal])
    agent.invoke(
        {"messages": [{"role": "user", "content": "Weather?"}]},
        {"configurable": {"thread_id": "t"}},
    )
    journal.close()
    [report] = seen
    assert report["by_run"] == []
    active = report["active_run"]
    assert active is not None and active["status"] == "running"
    assert active["usage"]["input_tokens"] == 40
    assert active["run_id"] == store.list_runs("t")[0].run_id


async def test_run_lookup_by_id_works_for_ids_with_a_slash() -> None:
    """/api/runs/{id} finds a run whose id holds '/', as thread ids may (imported runs)."""
    store = MemoryEventStore()
    _agent_thread(store, runs=1, hidden=0, answer_chars=10)
    real = store.read("t")
    store.append(  # the same run as another system's ids would name it
        [
            NewEvent(
                thread_id="team/a",
                run_id="batch/7",
                category=e.category,
                event_type=e.event_type,
                content=e.content,
                metadata=e.metadata,
            )
            for e in real
        ]
    )
    transport = httpx.ASGITransport(app=create_app(store))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        found = await client.get("/api/runs/batch%2F7")
        assert found.status_code == 200, found.text
        assert found.json()["thread_id"] == "team/a" and found.json()["status"] == "success"
        scoped = await client.get("/api/runs/batch/7", params={"thread_id": "team/a"})
        assert scoped.status_code == 200 and scoped.json()["run_id"] == "batch/7"
        bad = await client.get("/api/runs/batch%2F7", params={"thread_id": " team"})
        assert bad.status_code == 422
        assert (await client.get("/api/runs/batch%2F8")).status_code == 404


#: What a hostile web page could hold: retitle the terminal, clear it, recolour, ring.
ESCAPES = "\x1b]0;owned\x07\x1b[2J\x1b[5;35m\u202e"


def test_cli_never_passes_stored_escape_sequences_to_the_terminal(tmp_path: Path) -> None:
    """history, runs, usage and replay show stored text (a tool output, a run error, a model
    name) without the escape sequences in it, while the CLI's own colours stay."""
    store = SqliteEventStore(tmp_path / "j.db")
    journal = RunJournal(store)

    @tool
    def fetch(url: str) -> str:
        """Read a page (this one is hostile)."""
        if url == "bad":
            raise ValueError(f"cannot parse {ESCAPES}page")
        return f"page text {ESCAPES}end"

    answer = ai("", call("fetch", url="x"))
    answer.response_metadata = {"model_name": f"router{ESCAPES}model"}
    agent = create_agent(
        ScriptedChatModel(
            [answer, ai(f"It says {ESCAPES}hello"), ai("", call("fetch", url="bad"))]
        ),
        tools=[fetch],
        checkpointer=InMemorySaver(),
    ).with_config(callbacks=[journal])
    config = {"configurable": {"thread_id": "t"}}
    agent.invoke({"messages": [{"role": "user", "content": "Read x"}]}, config)
    with pytest.raises(ValueError, match="cannot parse"):
        agent.invoke({"messages": [{"role": "user", "content": "Read bad"}]}, config)
    journal.close()
    store.close()
    url = f"sqlite:///{tmp_path / 'j.db'}"
    for command in (["history", "--include-hidden"], ["runs"], ["usage"], ["replay"]):
        for color in ("0", "1"):
            env = cli_env(COLUMNS="200", **({"FORCE_COLOR": "1"} if color == "1" else {}))
            done = run_cli(command[0], "t", *command[1:], "--store", url, env=env)
            assert done.returncode == 0, done.stderr
            out = done.stdout
            for bad in ("\x1b]", "\x07", "\x1b[2J", "\x1b[5;35m", "\u202e"):
                assert bad not in out, (command, color, repr(bad))
            assert ("\x1b[" in out) == (color == "1"), command  # the CLI's own styles
    shown = run_cli("runs", "t", "--store", url, env=cli_env(COLUMNS="200")).stdout
    assert "ValueError: cannot parse ]0;owned[2J[5;35mpage" in shown
    assert "router]0;owned[2J[5;35mmodel" in shown


async def test_the_node_step_that_raised_is_an_error_span() -> None:
    """A run that fails in its tools node: that node step's span is an error, not ok."""
    store = MemoryEventStore()
    journal = RunJournal(store)

    @tool
    def boom(x: str) -> str:
        """Fail."""
        raise ValueError("tool broke")

    agent = create_agent(
        ScriptedChatModel([ai("", call("boom", x="a"))]), tools=[boom], checkpointer=InMemorySaver()
    ).with_config(callbacks=[journal])
    with pytest.raises(ValueError, match="tool broke"):
        await agent.ainvoke(
            {"messages": [{"role": "user", "content": "Go"}]}, {"configurable": {"thread_id": "t"}}
        )
    await journal.aclose()
    [run] = store.list_runs("t")
    transport = httpx.ASGITransport(app=create_app(store))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        spans = (await client.get("/api/threads/t/spans", params={"run_id": run.run_id})).json()
    assert spans["status"] == "error"
    [tools_step] = [s for s in spans["spans"] if s["kind"] == "node" and s["name"] == "tools"]
    assert tools_step["status"] == "error"
    assert spans["errors"] == 1  # the tool's failure, counted once (not again for its step)


_WRITER = """
import sys
from langchain.agents import create_agent
from langgraph.checkpoint.memory import InMemorySaver
from journal import RunJournal, SqliteEventStore
from tests.fakes import ScriptedChatModel, ai
store = SqliteEventStore(sys.argv[1])
journal = RunJournal(store)
agent = create_agent(
    ScriptedChatModel(lambda messages: ai("answer", tokens=10)), checkpointer=InMemorySaver()
).with_config(callbacks=[journal])
for turn in range(int(sys.argv[2])):
    agent.invoke({"messages": [{"role": "user", "content": f"q{turn}"}]},
                 {"configurable": {"thread_id": "t"}})
    journal.flush()
journal.close()
store.close()
"""


async def test_run_pages_walked_while_another_process_writes_lose_and_repeat_nothing(
    tmp_path: Path,
) -> None:
    """While a second OS process journals runs into the SQLite file, every walk of /runs
    back from its first page sees each older run once, newest first, and /usage never
    counts less than the runs it lists."""
    path = tmp_path / "j.db"
    SqliteEventStore(path).close()
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path), "40"], cwd=ROOT, env=cli_env()
    )
    store = SqliteEventStore(path)
    transport = httpx.ASGITransport(app=create_app(store))
    walks: list[list[tuple[str, int]]] = []
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            while writer.poll() is None or not walks:
                if (await client.get("/api/threads/t/runs")).status_code == 404:
                    continue  # nothing written yet
                walk: list[tuple[str, int]] = []
                params: dict[str, Any] = {"limit": 3}
                while True:
                    page = (await client.get("/api/threads/t/runs", params=params)).json()
                    walk += [(r["run_id"], r["first_seq"]) for r in page["runs"]]
                    if not page["has_more"]:
                        break
                    params["before_seq"] = page["next_before_seq"]
                walks.append(walk)
                usage = (await client.get("/api/threads/t/usage", params={"run_limit": 500})).json()
                listed = sum(r["usage"]["total_tokens"] for r in usage["by_run"])
                assert listed <= usage["totals"]["total_tokens"]
    finally:
        assert writer.wait(timeout=120) == 0
    final = [(r.run_id, r.first_seq) for r in reversed(store.list_runs("t"))]
    store.close()
    assert len(final) == 40
    for walk in walks:
        newest = walk[0][1]
        assert walk == [run for run in final if run[1] <= newest]
