"""Runs and usage on real agent runs: the runs page, thread usage, and their HTTP and CLI forms."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.runtime import Runtime

from history import runs_page, thread_usage
from history.errors import ThreadNotFoundError
from history.server.app import create_app
from journal import MemoryEventStore, RunEventStore, RunJournal, SqliteEventStore
from tests.cli_helpers import invoke_cli, invoke_json
from tests.fakes import ScriptedChatModel, call

ROUTED = "provider-model-2025-01-01"  # what the router's response names


def answer(text: str, *calls: dict[str, Any], tokens: int = 100, **usage: Any) -> AIMessage:
    """A model answer whose response names ROUTED and reports ``tokens`` in, 20 out."""
    return AIMessage(
        content=text,
        tool_calls=list(calls),
        response_metadata={"model_name": ROUTED},
        usage_metadata={
            "input_tokens": tokens,
            "output_tokens": 20,
            "total_tokens": usage.pop("total_tokens", tokens + 20),
            **usage,
        },
    )


class TitleMiddleware(AgentMiddleware[AgentState[Any], Any]):
    """Names the conversation with its own model call before the first turn (DeerFlow-style)."""

    def __init__(self) -> None:
        super().__init__()
        self.model = ScriptedChatModel(
            lambda messages: AIMessage(
                "Trip planning",
                usage_metadata={"input_tokens": 7, "output_tokens": 3, "total_tokens": 10},
            )
        )

    def before_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> None:
        self.model.invoke([HumanMessage("Give this conversation a title.")])


class Thread:
    """Runs of one create_agent on thread ``t`` into ``store``, journaled."""

    def __init__(self, store: RunEventStore, script: list[Any]) -> None:
        self.store = store
        self.journal = RunJournal(store)
        self.seen_while_running: list[dict[str, Any]] = []

        @tool
        def lookup(city: str) -> str:
            """Look a city up; meanwhile, read what the running thread has cost so far."""
            self.journal.flush()
            self.seen_while_running.append(thread_usage(store, "t"))
            return f"{city}: sunny"

        self.agent = create_agent(
            ScriptedChatModel(script),
            tools=[lookup],
            middleware=[TitleMiddleware()],
            checkpointer=InMemorySaver(),
        ).with_config(callbacks=[self.journal])

    def ask(self, question: str) -> None:
        """One run; a failing model call fails the run (the error is journaled)."""
        config = {"configurable": {"thread_id": "t"}}
        try:
            self.agent.invoke({"messages": [{"role": "user", "content": question}]}, config)
        finally:
            self.journal.flush()


SCRIPT = [
    answer("", call("lookup", city="lisbon"), tokens=100, input_token_details={"cache_read": 40}),
    answer("Lisbon is sunny.", tokens=150, output_token_details={"reasoning": 12}),
    RuntimeError("provider down"),
    answer("Porto, then.", tokens=200, total_tokens=0),  # a provider that reports no total
]


def _journaled(store: RunEventStore) -> Thread:
    thread = Thread(store, SCRIPT)
    thread.ask("Weather in Lisbon?")
    with pytest.raises(RuntimeError, match="provider down"):
        thread.ask("And Madrid?")
    thread.ask("Porto?")
    thread.journal.close()
    return thread


@pytest.fixture(params=["memory", "sqlite"])
def journaled(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Thread]:
    """Three real runs on thread ``t`` (one failed), on a memory or a SQLite store."""
    store: RunEventStore = (
        MemoryEventStore() if request.param == "memory" else SqliteEventStore(tmp_path / "j.db")
    )
    yield _journaled(store)
    store.close()


def _llm_usage(store: RunEventStore, run_id: str | None = None) -> list[dict[str, Any]]:
    return [
        e.metadata["usage"]
        for e in store.read("t", event_type="llm.end", run_id=run_id)
        if e.metadata.get("usage")
    ]


def test_runs_page_lists_runs_newest_first_with_what_each_did(journaled: Thread) -> None:
    """Status, error, previews, models, tokens and times of each run, newest run first."""
    store = journaled.store
    page = runs_page(store, "t", limit=10)
    assert page["has_more"] is False and page["next_before_seq"] is None
    newest, failed, first = page["runs"]
    assert [r["status"] for r in page["runs"]] == ["success", "error", "success"]
    assert failed["error_type"] == "RuntimeError" and "provider down" in failed["error"]
    assert first["first_human"] == "Weather in Lisbon?"
    assert first["last_ai"] == "Lisbon is sunny."
    assert newest["first_human"] == "Porto?" and newest["last_ai"] == "Porto, then."
    assert failed["last_ai"] is None
    for run in page["runs"]:
        assert run["ended_at"] is not None and run["duration_ms"] > 0
        usage = _llm_usage(store, run["run_id"])
        assert run["usage"]["input_tokens"] == sum(u["input_tokens"] for u in usage)
        calls = store.read("t", run_id=run["run_id"], event_type=["llm.end", "llm.error"])
        assert run["llm_calls"] == len(calls)
    assert first["models"][0] == "scripted-model"  # the title model answers without a name
    assert ROUTED in first["models"]
    assert first["usage"]["cache_read_tokens"] == 40
    assert first["usage"]["reasoning_tokens"] == 12
    assert first["tool_calls"] == 1
    assert newest["usage"]["total_tokens"] == 10 + 220  # title call + 200 in, 20 out


def test_runs_pages_walk_back_to_the_first_run(journaled: Thread) -> None:
    """Following next_before_seq visits every run exactly once, newest to oldest."""
    store = journaled.store
    seen: list[str] = []
    before = None
    while True:
        page = runs_page(store, "t", limit=1, before_seq=before)
        seen += [r["run_id"] for r in page["runs"]]
        if not page["has_more"]:
            break
        before = page["next_before_seq"]
    assert seen == [r.run_id for r in reversed(store.list_runs("t"))]
    assert len(seen) == 3


def test_thread_usage_buckets_by_answering_model_and_caller(journaled: Thread) -> None:
    """Totals equal the sum over runs; the router's answer is billed to the model it names."""
    store = journaled.store
    report = thread_usage(store, "t", run_limit=10)
    every = _llm_usage(store)
    assert report["totals"]["input_tokens"] == sum(u["input_tokens"] for u in every)
    assert report["totals"]["total_tokens"] == sum(
        r["usage"]["total_tokens"] for r in report["by_run"]
    )
    assert report["run_count"] == 3 and len(report["by_run"]) == 3
    assert report["by_model"][ROUTED]["calls"] == 3
    assert report["by_model"][ROUTED]["input_tokens"] == 450
    assert report["by_model"]["scripted-model"]["calls"] == 3  # one title per run
    assert set(report["by_caller"]) == {"agent", "middleware:TitleMiddleware"}
    assert report["by_caller"]["middleware:TitleMiddleware"]["total_tokens"] == 30
    assert report["totals"]["cache_read_tokens"] == 40
    assert report["active_run"] is None


def test_a_running_runs_usage_is_there_before_it_ends(journaled: Thread) -> None:
    """Read from inside a tool of the first run: its model calls so far are counted, running."""
    [seen] = journaled.seen_while_running
    active = seen["active_run"]
    assert active is not None and active["status"] == "running"
    assert active["usage"]["input_tokens"] == 7 + 100  # the title call and the first answer
    assert seen["totals"]["input_tokens"] == 107


def test_unknown_thread_and_bad_arguments(journaled: Thread) -> None:
    """An unknown thread raises ThreadNotFoundError; a bad limit is a caller error."""
    with pytest.raises(ThreadNotFoundError):
        runs_page(journaled.store, "nope")
    with pytest.raises(ThreadNotFoundError):
        thread_usage(journaled.store, "nope")
    with pytest.raises(ValueError, match="limit"):
        runs_page(journaled.store, "t", limit=0)
    with pytest.raises(TypeError, match="run_limit"):
        thread_usage(journaled.store, "t", run_limit="3")  # type: ignore[arg-type]


@pytest.fixture
async def client() -> AsyncIterator[tuple[httpx.AsyncClient, RunEventStore]]:
    """An HTTP client of an app over the three journaled runs."""
    store = MemoryEventStore()
    _journaled(store)
    transport = httpx.ASGITransport(app=create_app(store))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        yield c, store


async def test_http_runs_usage_and_run_lookup(
    client: tuple[httpx.AsyncClient, RunEventStore],
) -> None:
    """/runs pages newest first, /runs/{id} finds a run alone, /usage matches the library."""
    c, store = client
    first = (await c.get("/api/threads/t/runs", params={"limit": 2})).json()
    assert first["has_more"] is True and len(first["runs"]) == 2
    rest = (
        await c.get("/api/threads/t/runs", params={"before_seq": first["next_before_seq"]})
    ).json()
    assert [r["run_id"] for r in first["runs"] + rest["runs"]] == [
        r.run_id for r in reversed(store.list_runs("t"))
    ]
    failed = first["runs"][1]
    one = (await c.get(f"/api/runs/{failed['run_id']}")).json()
    assert one == failed and one["status"] == "error"
    assert (await c.get("/api/runs/no-such-run")).status_code == 404
    assert (await c.get("/api/runs/%20x")).status_code == 422
    usage = (await c.get("/api/threads/t/usage")).json()
    library = thread_usage(store, "t")
    for key in ("totals", "by_model", "by_caller", "run_count"):
        assert usage[key] == library[key], key
    assert [r["run_id"] for r in usage["by_run"]] == [r["run_id"] for r in library["by_run"]]
    assert usage["totals"]["calls"] == 6
    assert (await c.get("/api/threads/nope/usage")).status_code == 404
    assert (await c.get("/api/threads/t/runs", params={"limit": 0})).status_code == 422


def test_cli_runs_and_usage(tmp_path: Any) -> None:
    """`runs` shows status, error and previews newest first; `usage` the model and caller tables."""
    store = SqliteEventStore(tmp_path / "j.db")
    _journaled(store)
    store.close()
    url = f"sqlite:///{tmp_path / 'j.db'}"
    shown = invoke_cli("runs", "t", "--store", url, env={"COLUMNS": "220"})
    assert shown.returncode == 0, shown.stderr
    assert "RuntimeError: provider down" in shown.stdout
    assert "Porto? → Porto, then." in shown.stdout
    assert shown.stdout.index("Porto?") < shown.stdout.index("Weather in Lisbon?")
    page = invoke_json("runs", "t", "--store", url, "--limit", "1")
    assert page["has_more"] is True and page["runs"][0]["first_human"] == "Porto?"
    usage = invoke_cli("usage", "t", "--store", url)
    assert ROUTED in usage.stdout and "middleware:TitleMiddleware" in usage.stdout
    assert "3 runs, 6 model calls" in usage.stdout
    report = invoke_json("usage", "t", "--store", url)
    assert report["by_model"][ROUTED]["calls"] == 3
