"""A store takes any JSON as an event's content and metadata (``runjournal import``,
``copy_store`` and writers other than ``RunJournal`` put what they like there): every route
reads events of odd shapes without a 500, and one odd event never hides its thread."""

from __future__ import annotations

import random
from typing import Any

import pytest
from fastapi.testclient import TestClient

from history import create_app
from journal import MemoryEventStore
from journal.events import FIXED_EVENT_TYPES, NewEvent

THREAD = "t"
HELLO = NewEvent(
    thread_id=THREAD,
    run_id="r1",
    category="message",
    event_type="message.human",
    content={"type": "human", "data": {"content": "hello", "id": "h1"}},
)


@pytest.mark.parametrize(
    ("event_type", "content", "metadata"),
    [
        ("message.tool", {"type": "tool", "data": {"content": "ok", "name": 7}}, {}),
        ("message.tool", {"type": "tool", "data": {"content": "ok", "tool_call_id": 12}}, {}),
        ("message.tool", {"type": "tool", "data": {"content": "ok", "status": {"x": 1}}}, {}),
        ("message.ai", {"type": "ai", "data": {"content": "ok", "tool_calls": ["call"]}}, {}),
        ("llm.start", {"messages": [[1]]}, {"model": 4}),
        ("llm.start", {}, {"model": ["gpt", "x"], "llm_run_id": 3}),
    ],
)
def test_an_odd_event_leaves_the_thread_readable(
    event_type: str, content: Any, metadata: dict[str, Any]
) -> None:
    store = MemoryEventStore()
    category = "message" if event_type.startswith("message.") else "trace"
    odd = NewEvent(
        thread_id=THREAD,
        run_id="r1",
        category=category,
        event_type=event_type,
        content=content,
        metadata=metadata,
    )
    store.append([HELLO, odd])
    client = TestClient(create_app(store), raise_server_exceptions=False)
    history = client.get(f"/api/threads/{THREAD}/history")
    assert history.status_code == 200, history.text
    assert history.json()["items"][0]["content"] == "hello"
    for route in ("context/2", "calls", "spans?run_id=r1", "search?q=ok", "truncated"):
        answer = client.get(f"/api/threads/{THREAD}/{route}")
        assert answer.status_code in (200, 404, 422), (route, answer.text)


_VALUES: list[Any] = [None, 0, -1, 2**70, 1.5, "", "x", [], [1], [None], {}, {"a": 1}, True,
                      [{"id": 1}], {"type": "ai"}, {"data": None}, {"data": []},
                      {"data": {"content": 5}},
                      {"data": {"content": [{"type": "text", "text": 1}], "id": 3,
                                "tool_calls": "x"}}]  # fmt: skip
_KEYS = ["data", "type", "content", "id", "tool_calls", "replaced_message_ids",
         "removed_message_ids", "state_message_ids", "kept_message_ids", "all", "summary",
         "replaced_count", "summary_message", "messages", "output", "error", "name", "args",
         "usage", "input"]  # fmt: skip
_META_KEYS = ["model", "usage", "caller", "hidden", "message_id", "inferred", "context",
              "llm_run_id", "parent_span_run_id", "tool_run_id", "tool_call_id",
              "langgraph_node", "langgraph_step", "replacement", "truncated", "digest",
              "status", "error"]  # fmt: skip


def _value(rnd: random.Random, depth: int = 0) -> Any:
    if depth < 2 and rnd.random() < 0.3:
        keys = rnd.sample(_KEYS + _META_KEYS, rnd.randint(0, 4))
        return {key: _value(rnd, depth + 1) for key in keys}
    return rnd.choice(_VALUES)


@pytest.mark.parametrize("seed", [1, 4])
def test_no_route_answers_500_on_events_of_random_shapes(seed: int) -> None:
    """Events of every catalog type with random content and metadata: every read route,
    at every seq, answers without a 500."""
    rnd = random.Random(seed)
    kinds = [(c, t) for c, types in FIXED_EVENT_TYPES.items() for t in types]
    kinds += [("middleware", "middleware:summarize"), ("trace", "custom:x")]
    store = MemoryEventStore()
    for _ in range(150):
        category, event_type = rnd.choice(kinds)
        content = (
            {key: _value(rnd) for key in rnd.sample(_KEYS, rnd.randint(0, 6))}
            if rnd.random() < 0.8
            else _value(rnd)
        )
        metadata = {key: _value(rnd) for key in rnd.sample(_META_KEYS, rnd.randint(0, 8))}
        try:
            store.append([NewEvent(thread_id=THREAD, run_id=rnd.choice(["r1", "r2"]),
                                   category=category, event_type=event_type, content=content,
                                   metadata=metadata)])  # fmt: skip
        except ValueError:
            continue  # (the store refuses it: a clear error is what bad input gets)
    last = store.last_seq(THREAD)
    assert last > 100
    client = TestClient(create_app(store), raise_server_exceptions=False)
    routes = ["history?limit=200", "history?include_hidden=true&limit=200", "events?limit=1000",
              "runs", "usage", "calls", "search?q=x", "truncated", "spans?run_id=r1",
              "spans?run_id=r2"]  # fmt: skip
    routes += [f"context/{seq}" for seq in range(1, last + 1)]
    routes += [f"markers/{seq}/messages" for seq in range(1, last + 1)]
    failed = [
        (route, answer.text[:200])
        for route in routes
        if (answer := client.get(f"/api/threads/{THREAD}/{route}")).status_code >= 500
    ]
    assert failed == []


@pytest.mark.parametrize("thread", ["x/context", "x/context/3", "a/spans"])
def test_a_thread_id_ending_like_a_route_reaches_every_route(thread: str) -> None:
    """A thread id may hold ``/``: ``x/context`` is no model call at seq ``spans``."""
    store = MemoryEventStore()
    store.append([HELLO.model_copy(update={"thread_id": thread})])
    client = TestClient(create_app(store), raise_server_exceptions=False)
    quoted = thread.replace("/", "%2F")
    for route in ("spans?run_id=r1", "calls", "search?q=hello", "truncated", "history"):
        answer = client.get(f"/api/threads/{quoted}/{route}")
        assert answer.status_code == 200, (route, answer.text)
        assert answer.json()["thread_id"] == thread
    assert client.get(f"/api/threads/{quoted}/context/1").status_code in (200, 404)
