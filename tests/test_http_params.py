"""HTTP parameters: unknown ones are refused, /events reads backwards, /history filters."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from history.server.app import create_app
from journal import MemoryEventStore
from tests.http_data import seed_conversation
from tests.test_timeline_filters import HINT, _journaled_thread


def _client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    """An app over thread ``conv`` (5 turns, compacted once) and ``t`` (two real runs)."""
    store, _ = _journaled_thread(runs=2)
    seed_conversation(store, "conv", turns=5, marker_after=2)
    async with _client(create_app(store)) as c:
        c.store = store  # type: ignore[attr-defined]
        yield c


def _api_get_paths() -> list[str]:
    """Every GET route under /api the OpenAPI document declares, with sample path values."""
    schema = create_app(MemoryEventStore()).openapi()
    return [
        path.replace("{thread_id}", "conv").replace("{run_id}", "r")
        for path, operations in schema["paths"].items()
        if path.startswith("/api") and "get" in operations
    ]


async def test_every_api_route_refuses_an_unknown_query_parameter(
    client: httpx.AsyncClient,
) -> None:
    """A misspelt parameter is a 422 naming it on every /api route, never silently ignored."""
    paths = _api_get_paths()
    assert {"/api/threads", "/api/threads/conv/history", "/api/threads/conv/events"} <= set(paths)
    for path in paths:
        answer = await client.get(path, params={"befor_seq": "3", "max_events": "1"})
        if path.endswith("/stream"):  # max_events is the stream's own: only the typo is named
            assert answer.status_code == 422, path
            assert [e["loc"] for e in answer.json()["detail"]] == [["query", "befor_seq"]]
            continue
        assert answer.status_code == 422, path
        names = {e["loc"][1] for e in answer.json()["detail"]}
        assert "befor_seq" in names, path
    delete = await client.delete("/api/threads/conv", params={"force": "1"})
    assert delete.status_code == 422
    assert (await client.get("/api/threads/conv/history")).status_code == 200  # not deleted


async def test_declared_parameters_still_work(client: httpx.AsyncClient) -> None:
    """Known parameters (repeatable filters included) pass the check."""
    answer = await client.get(
        "/api/threads/conv/events",
        params=[("category", "message"), ("category", "lifecycle"), ("limit", "5")],
    )
    assert answer.status_code == 200
    assert {e["category"] for e in answer.json()["events"]} <= {"message", "lifecycle"}


async def test_events_before_seq_reads_the_newest_page_below_it(
    client: httpx.AsyncClient,
) -> None:
    """Backward pages ascend, hold the newest events below the cursor, and walk to seq 1."""
    store: MemoryEventStore = client.store  # type: ignore[attr-defined]
    last = store.last_seq("conv")
    pages: list[list[int]] = []
    cursor = last + 1
    while True:
        body = (
            await client.get("/api/threads/conv/events", params={"before_seq": cursor, "limit": 7})
        ).json()
        seqs = [e["seq"] for e in body["events"]]
        assert seqs == sorted(seqs) and all(s < cursor for s in seqs)
        pages.append(seqs)
        if not body["has_more"]:
            assert body["next_before_seq"] is None
            break
        assert body["next_before_seq"] == seqs[0]
        cursor = body["next_before_seq"]
    assert pages[0][-1] == last
    assert [s for page in reversed(pages) for s in page] == list(range(1, last + 1))


async def test_events_before_seq_with_filters_and_a_window(client: httpx.AsyncClient) -> None:
    """``before_seq`` combines with ``after_seq`` (a window) and filters, like the store."""
    store: MemoryEventStore = client.store  # type: ignore[attr-defined]
    expected = [e.seq for e in store.read("conv", after_seq=3, before_seq=30, category="message")][
        -4:
    ]
    body = (
        await client.get(
            "/api/threads/conv/events",
            params={"after_seq": 3, "before_seq": 30, "limit": 4, "category": "message"},
        )
    ).json()
    assert [e["seq"] for e in body["events"]] == expected


async def test_history_hides_hidden_messages_unless_asked(client: httpx.AsyncClient) -> None:
    """/history leaves hide_from_ui messages out by default; include_hidden=true shows them."""
    default = (await client.get("/api/threads/t/history")).json()["items"]
    assert HINT not in [i.get("content") for i in default]
    every = (await client.get("/api/threads/t/history", params={"include_hidden": "true"})).json()[
        "items"
    ]
    hints = [i for i in every if i.get("content") == HINT]
    assert [h["hidden"] for h in hints] == [True, True]
    assert {h["caller"] for h in hints} == {"middleware:InjectContext"}
    assert {i["caller"] for i in default} == {"user", "agent"}


async def test_history_run_id_keeps_that_runs_items(client: httpx.AsyncClient) -> None:
    """/history?run_id= returns only that run's items; a malformed run id is a 422."""
    store: MemoryEventStore = client.store  # type: ignore[attr-defined]
    run_ids = list(dict.fromkeys(e.run_id for e in store.read("t")))
    for run_id in run_ids:
        items = (await client.get("/api/threads/t/history", params={"run_id": run_id})).json()[
            "items"
        ]
        assert items and {i["run_id"] for i in items} == {run_id}
    bad = await client.get("/api/threads/t/history", params={"run_id": " x"})
    assert bad.status_code == 422


async def test_a_422_repeats_a_long_rejected_value_only_in_part(
    client: httpx.AsyncClient,
) -> None:
    """A 422 stays small whatever was sent: long values and names are cut, errors are capped."""
    long_value = "9x" * 4000
    answer = await client.get("/api/threads/conv/history", params={"limit": long_value})
    assert answer.status_code == 422
    (error,) = answer.json()["detail"]
    assert error["loc"] == ["query", "limit"]
    assert error["input"].startswith(long_value[:100])
    assert f"({len(long_value)} characters)" in error["input"]
    assert len(answer.content) < 1000

    many = [(f"unknown_{n}_{'n' * 500}", "v" * 500) for n in range(60)]
    answer = await client.get("/api/threads/conv/events", params=many)
    assert answer.status_code == 422
    body = answer.json()
    assert len(body["detail"]) == 20 and body["more_errors"] == 40
    assert all(e["loc"][1].startswith("unknown_") for e in body["detail"])
    assert len(answer.content) < 20 * 600

    short = await client.get("/api/threads/conv/history", params={"limit": "abc"})
    assert short.status_code == 422
    assert short.json()["detail"][0]["input"] == "abc"  # short values are repeated whole
