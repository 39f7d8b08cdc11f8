"""Bounded responses: pages and stream batches bounded in bytes; an OpenAPI schema that is exact."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from history.server.app import create_app
from history.server.run import serve_in_thread
from history.server.sse import StreamControl, StreamSettings, stream_events
from journal import MemoryEventStore, RunEvent, RunEventStore
from journal.events import validate_id
from journal.store import ReadQuery
from journal.testing import ev

BIG = 100_000  # characters of one message
SETTINGS = StreamSettings(poll_interval=0.02, heartbeat_interval=5, page_bytes=350_000)


def big_thread(store: RunEventStore, count: int = 12) -> list[RunEvent]:
    """``count`` human messages of ``BIG`` characters each in thread ``big``."""
    return store.append(
        [
            ev(
                "big",
                category="message",
                event_type="message.human",
                content={"type": "human", "data": {"content": f"{n}" * BIG, "id": f"m{n}"}},
            )
            for n in range(count)
        ]
    )


@pytest.fixture
async def client() -> AsyncIterator[tuple[httpx.AsyncClient, MemoryEventStore]]:
    """A client of an app whose pages hold at most ~350 KB, and its store."""
    store = MemoryEventStore()
    app = create_app(store, stream_settings=SETTINGS)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        yield c, store


async def test_events_page_ends_early_by_bytes_and_the_cursor_walks_everything(
    client: tuple[httpx.AsyncClient, MemoryEventStore],
) -> None:
    """/events?limit=1000 on huge events returns a short page saying so; the cursor gets all."""
    http, store = client
    stored = big_thread(store)
    seen: list[int] = []
    cursor = 0
    while True:
        response = await http.get(
            "/api/threads/big/events", params={"after_seq": cursor, "limit": 1000}
        )
        body = response.json()
        assert len(response.content) < 3 * 350_000
        seen += [e["seq"] for e in body["events"]]
        cursor = body["next_after_seq"]
        if not body["has_more"]:
            assert not body["size_limited"]
            break
        assert body["size_limited"] and 1 <= len(body["events"]) < 12
    assert seen == [e.seq for e in stored]


async def test_history_page_ends_early_by_bytes_and_walks_back_to_the_start(
    client: tuple[httpx.AsyncClient, MemoryEventStore],
) -> None:
    """/history on huge messages returns the newest items that fit; next_before_seq gets all."""
    http, store = client
    stored = big_thread(store)
    seen: list[int] = []
    params: dict[str, Any] = {"limit": 1000}
    while True:
        response = await http.get("/api/threads/big/history", params=params)
        body = response.json()
        assert len(response.content) < 3 * 350_000
        seen = [item["seq"] for item in body["items"]] + seen
        if not body["has_more"]:
            break
        assert body["size_limited"] and len(body["items"]) < 12
        params["before_seq"] = body["next_before_seq"]
    assert seen == [e.seq for e in stored]


class CountingStore(MemoryEventStore):
    """Remembers the most events any one read returned."""

    most = 0

    def _read(self, query: ReadQuery) -> list[RunEvent]:
        found = super()._read(query)
        self.most = max(self.most, len(found))
        return found


async def test_stream_batches_are_bounded_in_bytes_and_deliver_everything() -> None:
    """A stream over a huge backlog reads a few events at a time, yet sends all in order."""
    store = CountingStore()
    stored = big_thread(store, count=30)

    async def connected() -> bool:
        return False

    ids = [
        int(message.split(b"\n", 1)[0].removeprefix(b"id: "))
        async for message in stream_events(
            store,
            "big",
            after_seq=0,
            settings=SETTINGS,
            control=StreamControl(),
            is_disconnected=connected,
            max_events=30,
        )
    ]
    assert ids == [e.seq for e in stored]
    assert store.most <= 8  # the first read of a batch; the next ones fit ~350 KB


def _parameter(schema: dict[str, Any], path: str, name: str) -> dict[str, Any]:
    for parameter in schema["paths"][path]["get"]["parameters"]:
        if parameter["name"] == name:
            return parameter  # type: ignore[no-any-return]
    raise AssertionError(f"{name} not documented on {path}")


async def test_openapi_says_exactly_which_last_event_ids_are_accepted() -> None:
    """A Last-Event-ID the schema allows is accepted; one it forbids is a 422."""
    store = MemoryEventStore()
    store.append([ev("t")])
    transport = httpx.ASGITransport(app=create_app(store, stream_settings=SETTINGS))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        schema = (await http.get("/openapi.json")).json()
        header = _parameter(schema, "/api/threads/{thread_id}/stream", "Last-Event-ID")["schema"]
        pattern = re.compile(header["anyOf"][0]["pattern"])
        for value in ["0", "1", "9007199254740991", "99999999999999999999", "abc", "-1", "1.5",
                      "+1", "0x10", "1 2"]:  # fmt: skip
            allowed = bool(pattern.search(value)) and len(value) <= header["anyOf"][0].get(
                "maxLength", len(value)
            )
            response = await http.get(
                "/api/threads/t/stream",
                params={"timeout": 0.05},
                headers={"Last-Event-ID": value},
            )
            assert (response.status_code != 422) == allowed, (value, response.status_code)


async def test_openapi_says_exactly_which_thread_ids_are_accepted() -> None:
    """A thread id the path schema allows reaches the thread (404 here); others are a 422."""
    transport = httpx.ASGITransport(app=create_app(MemoryEventStore()))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        schema = (await http.get("/openapi.json")).json()
        path_schema = _parameter(schema, "/api/threads/{thread_id}/events", "thread_id")["schema"]
        pattern = re.compile(path_schema["pattern"])
        for value in ["x", "a b", "é/ü", " x", "x ", "\u00a0x", "x\u3000", "\u2028", "x" * 256,
                      "x" * 257, "a\tb", "\u0085x"]:  # fmt: skip
            allowed = bool(pattern.search(value)) and len(value) <= path_schema["maxLength"]
            valid = True
            try:
                validate_id(value, "thread_id")
            except ValueError:
                valid = False
            assert allowed == valid, value
            response = await http.get(f"/api/threads/{quote(value, safe='/')}/events")
            assert response.status_code == (404 if allowed else 422), value


class StuckStore(MemoryEventStore):
    """Reads of thread ``stuck`` hang until ``release`` is set (a slow disk, a huge backlog)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.stuck = 0
        self.most_stuck = 0
        self._count = threading.Lock()

    def _read(self, query: ReadQuery) -> list[RunEvent]:
        if query.thread_id == "stuck" and not self.release.is_set():
            with self._count:
                self.stuck += 1
                self.most_stuck = max(self.most_stuck, self.stuck)
            self.release.wait(60)
            with self._count:
                self.stuck -= 1
        return super()._read(query)


async def test_streams_stuck_reading_never_starve_other_requests() -> None:
    """Eight streams whose reads hang take one worker; other requests are still answered."""
    store = StuckStore()
    store.append([ev("stuck"), ev("other")])
    settings = StreamSettings(poll_interval=0.02, heartbeat_interval=5, stream_reads=1)

    async def open_stream(client: httpx.AsyncClient) -> None:
        params = {"after_seq": 0, "max_events": 1}
        async with client.stream("GET", "/api/threads/stuck/stream", params=params) as response:
            async for _ in response.aiter_bytes():
                pass

    with serve_in_thread(create_app(store, stream_settings=settings)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            streams = [asyncio.create_task(open_stream(client)) for _ in range(8)]
            while store.stuck == 0:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.3)  # give every stream the chance to start reading
            response = await client.get("/api/threads/other/events")
            assert response.status_code == 200 and len(response.json()["events"]) == 1
            assert store.most_stuck == 1
            store.release.set()
            await asyncio.gather(*streams)
