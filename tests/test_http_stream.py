"""The live stream ``/api/threads/{id}/stream`` over a real uvicorn server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from history.server.app import create_app
from history.server.run import serve_in_thread
from history.server.sse import StreamControl, StreamSettings, stream_events
from journal import MemoryEventStore, RunEvent, RunEventStore
from journal.sqlite import SqliteEventStore
from tests.logs import capture_logs

FAST = StreamSettings(poll_interval=0.02, heartbeat_interval=0.15)


def _event(thread_id: str, n: int, category: str = "trace") -> dict[str, Any]:
    event_type = "custom:tick" if category == "trace" else "run.start"
    return {
        "thread_id": thread_id,
        "run_id": "r",
        "category": category,
        "event_type": event_type,
        "content": {"n": n},
    }


async def sse_messages(response: httpx.Response) -> AsyncIterator[dict[str, str]]:
    """Parse an SSE body into messages (``id``/``event``/``data``; comments as ``comment``)."""
    fields: dict[str, str] = {}
    async for line in response.aiter_lines():
        if line == "":
            if fields:
                yield fields
            fields = {}
        elif line.startswith(":"):
            yield {"comment": line[1:].strip()}
        else:
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")
    if fields:
        yield fields


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunEventStore]:
    """A store (each backend) whose thread ``t`` already has one event."""
    store: RunEventStore = (
        MemoryEventStore() if request.param == "memory" else SqliteEventStore(tmp_path / "s.db")
    )
    store.append([_event("t", 0)])
    yield store
    store.close()


@pytest.fixture
def base_url(store: RunEventStore) -> Iterator[str]:
    """The app on a real uvicorn server, polling fast."""
    with serve_in_thread(create_app(store, stream_settings=FAST)) as url:
        yield url


async def _read(
    url: str,
    params: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    first_event: asyncio.Event | None = None,
    opened: asyncio.Event | None = None,
) -> list[dict[str, str]]:
    """The stream's messages until it ends; ``first_event`` is set once an event arrived,
    ``opened`` once the response began (the stream's resume point is fixed by then)."""
    async with (
        httpx.AsyncClient(base_url=url, timeout=20) as client,
        client.stream("GET", "/api/threads/t/stream", params=params, headers=headers) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        if opened is not None:
            opened.set()
        messages = []
        async for message in sse_messages(response):
            messages.append(message)
            if first_event is not None and "id" in message:
                first_event.set()
        return messages


async def test_reconnecting_client_gets_every_event_once_in_order(
    store: RunEventStore, base_url: str
) -> None:
    """A client that keeps disconnecting and resuming with Last-Event-ID while a writer
    appends receives every event exactly once, in seq order, with the stored data."""
    total_batches, rng = 60, random.Random(7)
    total = total_batches * 5 + 1
    received: list[RunEvent] = []
    connections = writing = 0
    writer_done = False

    async def writer() -> None:
        for batch in range(total_batches):
            await store.aappend([_event("t", batch * 5 + i) for i in range(5)])
            await asyncio.sleep(rng.uniform(0, 0.01))
        nonlocal writer_done
        writer_done = True

    async def reader() -> None:
        nonlocal connections, writing
        async with httpx.AsyncClient(base_url=base_url, timeout=20) as client:
            while len(received) < total:
                connections += 1
                writing += not writer_done
                headers = {"Last-Event-ID": str(received[-1].seq)} if received else {}
                params = {} if received else {"after_seq": 0}
                quota = rng.randint(3, 40)
                async with client.stream(
                    "GET", "/api/threads/t/stream", params=params, headers=headers
                ) as response:
                    async for message in sse_messages(response):
                        if "id" not in message:
                            continue
                        event = RunEvent.model_validate_json(message["data"])
                        assert message["id"] == str(event.seq)
                        assert message["event"] == event.event_type
                        received.append(event)
                        quota -= 1
                        if quota == 0 or len(received) == total:
                            break  # drop the connection mid-stream

    await asyncio.wait_for(asyncio.gather(writer(), reader()), timeout=60)
    assert [e.seq for e in received] == list(range(1, total + 1))
    assert received == store.read("t")
    assert connections > 5 and writing >= 2  # it reconnected while the writer appended


async def test_stream_starts_at_now_by_default_or_at_after_seq(
    store: RunEventStore, base_url: str
) -> None:
    """Without a resume point only new events come; ``after_seq`` replays from a seq."""
    store.append([_event("t", n) for n in range(1, 4)])
    opened = asyncio.Event()

    async def later() -> None:  # once "now" is fixed, however slow the server is to get there
        await opened.wait()
        await store.aappend([_event("t", 99)])

    task = asyncio.create_task(later())
    fresh = await _read(base_url, {"max_events": 1, "timeout": 10}, opened=opened)
    await task
    assert [m["id"] for m in fresh if "id" in m] == ["5"]
    replay = await _read(base_url, {"after_seq": 2, "max_events": 3})
    assert [m["id"] for m in replay if "id" in m] == ["3", "4", "5"]
    resumed = await _read(base_url, {"after_seq": 0, "max_events": 2}, {"Last-Event-ID": "3"})
    assert [m["id"] for m in resumed if "id" in m] == ["4", "5"]


async def test_stream_filters_keep_seq_as_id(store: RunEventStore, base_url: str) -> None:
    """A category filter sends only matching events, each with its own seq as id."""
    store.append(
        [_event("t", 1), _event("t", 2, "lifecycle"), _event("t", 3), _event("t", 4, "lifecycle")]
    )
    messages = await _read(base_url, {"after_seq": 0, "category": "lifecycle", "max_events": 2})
    events = [(m["id"], m["event"]) for m in messages if "id" in m]
    assert events == [("3", "run.start"), ("5", "run.start")]


async def test_idle_stream_sends_heartbeats_and_ends_at_timeout(base_url: str) -> None:
    """An idle stream emits ``: ping`` comments and closes cleanly after ``timeout``."""
    started = time.monotonic()
    messages = await _read(base_url, {"timeout": 0.8})
    elapsed = time.monotonic() - started
    assert 0.7 < elapsed < 5
    assert len([m for m in messages if m.get("comment") == "ping"]) >= 2
    assert all("id" not in m for m in messages)


async def test_deleting_the_thread_ends_its_streams(store: RunEventStore, base_url: str) -> None:
    """A thread deleted while streamed gets a final ``thread_deleted`` message."""

    streamed = asyncio.Event()

    async def delete_soon() -> None:
        await streamed.wait()  # the stream has sent seq 1 and waits for more
        async with httpx.AsyncClient(base_url=base_url) as client:
            assert (await client.delete("/api/threads/t")).status_code == 200

    task = asyncio.create_task(delete_soon())
    messages = await _read(base_url, {"after_seq": 0, "timeout": 10}, first_event=streamed)
    await task
    assert [m["id"] for m in messages if "id" in m] == ["1"]
    assert messages[-1]["event"] == "thread_deleted"


def _stream_from_0(
    store: RunEventStore, connected: Callable[[], Awaitable[bool]], **filters: Any
) -> AsyncIterator[bytes]:
    """``stream_events`` of thread ``t`` from seq 0, polling fast, for at most 5 s."""
    return stream_events(
        store,
        "t",
        after_seq=0,
        settings=FAST,
        control=StreamControl(),
        is_disconnected=connected,
        timeout=5,
        **filters,
    )


async def test_a_thread_deleted_and_written_again_is_not_streamed_as_a_continuation(
    store: RunEventStore,
) -> None:
    """Deleted then re-created between two polls: ``thread_deleted``, no event of the new one."""

    async def connected() -> bool:
        return False

    received: list[bytes] = []
    async for message in _stream_from_0(store, connected):
        received.append(message)
        if len(received) == 1:  # the stream waits at its cursor, seq 1
            store.delete_thread("t")
            store.append([_event("t", n) for n in range(1, 4)])
    assert received[0].startswith(b"id: 1\n")
    assert received[1:] == [b'event: thread_deleted\ndata: {"thread_id": "t"}\n\n']


@pytest.mark.parametrize("rewritten", [False, True], ids=["deleted", "written-again"])
async def test_a_filtered_stream_that_sent_nothing_sees_the_deletion(
    store: RunEventStore, rewritten: bool
) -> None:
    """A stream whose filter matched no event yet (its cursor still 0) ends with
    ``thread_deleted`` too, and never sends the new thread's events."""
    store.delete_thread("t")
    store.append([_event("t", n) for n in range(1, 4)])  # trace events only
    polls = 0

    async def connected() -> bool:
        nonlocal polls
        polls += 1
        if polls == 2:  # the stream has polled and found nothing of its category
            store.delete_thread("t")
            if rewritten:
                store.append([_event("t", 1, category="lifecycle")])
        return False

    received = [m async for m in _stream_from_0(store, connected, category="lifecycle")]
    assert received == [b'event: thread_deleted\ndata: {"thread_id": "t"}\n\n']


async def test_a_stream_after_a_seq_the_thread_lacks_says_it_was_deleted(
    store: RunEventStore, base_url: str
) -> None:
    """A client that saw seq 5 of a thread that now ends at seq 1 saw a deleted thread."""
    messages = await _read(base_url, {"after_seq": 5, "timeout": 5})
    assert [m.get("event") for m in messages] == ["thread_deleted"]
    assert store.last_seq("t") == 1


async def test_server_shutdown_ends_open_streams_promptly(store: RunEventStore) -> None:
    """Stopping the server closes an endless stream at once instead of waiting for it."""
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(serve_in_thread(create_app(store, stream_settings=FAST)))
        streamed = asyncio.Event()
        reader = asyncio.create_task(_read(url, {"after_seq": 0}, first_event=streamed))
        await asyncio.wait_for(streamed.wait(), timeout=10)  # it sent seq 1 and waits for more
        started = time.monotonic()
        await asyncio.to_thread(stack.close)
        assert time.monotonic() - started < 3
    messages = await asyncio.wait_for(reader, timeout=5)
    assert [m["id"] for m in messages if "id" in m] == ["1"]


async def test_client_disconnect_ends_the_server_side_stream(base_url: str) -> None:
    """When the client goes away the server stops polling for it."""
    with capture_logs() as logs:
        async with (
            httpx.AsyncClient(base_url=base_url, timeout=10) as client,
            client.stream("GET", "/api/threads/t/stream", params={"after_seq": 0}) as response,
        ):
            async for message in sse_messages(response):
                if message.get("id") == "1":
                    break
        deadline = time.monotonic() + 5
        while not any(e["event"] == "stream_closed" for e in logs):
            assert time.monotonic() < deadline, "the stream kept running after the disconnect"
            await asyncio.sleep(0.05)
    closed = next(e for e in logs if e["event"] == "stream_closed")
    assert closed["thread_id"] == "t" and closed["count"] == 1
    assert closed["reason"] in ("disconnected", "client_gone")


async def test_store_failure_ends_the_stream_cleanly(store: RunEventStore, base_url: str) -> None:
    """If the store fails mid-stream the stream ends (the client reconnects), no crash."""

    streamed = asyncio.Event()

    async def close_soon() -> None:
        await streamed.wait()  # the stream has sent seq 1 and waits for more
        await store.aclose()

    task = asyncio.create_task(close_soon())
    with capture_logs() as logs:
        messages = await asyncio.wait_for(
            _read(base_url, {"after_seq": 0}, first_event=streamed), timeout=10
        )
    await task
    assert [m["id"] for m in messages if "id" in m] == ["1"]
    assert any(e["event"] == "stream_store_error" for e in logs)
