"""The JSON API of ``history.create_app``: every route, cursors, filters, errors, auth, CORS."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from blockbuster import blockbuster_ctx

from history.server.app import create_app
from journal import MemoryEventStore, RunEvent
from tests.http_data import seed_conversation

TOKEN = "s3cret-token"
THREAD_ROUTES = ["history", "events", "runs", "stream"]


@pytest.fixture
def store() -> MemoryEventStore:
    """Two threads: ``conv`` (5 turns, compacted after turn 2) and ``team/alpha`` (1 turn)."""
    store = MemoryEventStore()
    seed_conversation(store, "conv", turns=5, marker_after=2)
    seed_conversation(store, "team/alpha", turns=1)
    return store


def _client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


@pytest.fixture
async def client(store: MemoryEventStore) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client of an app without a token."""
    async with _client(create_app(store)) as c:
        yield c


def _timeline_seqs(store: MemoryEventStore, thread_id: str) -> list[int]:
    return [
        e.seq
        for e in store.read(thread_id)
        if e.category == "message" or e.event_type == "middleware:summarize"
    ]


async def test_threads_are_listed_most_recent_first_with_paging(
    client: httpx.AsyncClient, store: MemoryEventStore
) -> None:
    """``/api/threads`` returns summaries newest first; limit/offset/has_more page through."""
    body = (await client.get("/api/threads")).json()
    assert [t["thread_id"] for t in body["threads"]] == ["team/alpha", "conv"]
    assert body["threads"][1]["event_count"] == store.last_seq("conv")
    assert body["has_more"] is False
    first = (await client.get("/api/threads", params={"limit": 1})).json()
    second = (await client.get("/api/threads", params={"limit": 1, "offset": 1})).json()
    assert [first["has_more"], second["has_more"]] == [True, False]
    assert first["threads"] + second["threads"] == body["threads"]


async def test_history_walks_back_to_seq_one_without_loss_or_repeat(
    client: httpx.AsyncClient, store: MemoryEventStore
) -> None:
    """Following ``next_before_seq`` from the newest page visits every item exactly once."""
    pages: list[list[dict[str, Any]]] = []
    params: dict[str, Any] = {"limit": 3}
    while True:
        body = (await client.get("/api/threads/conv/history", params=params)).json()
        assert [i["seq"] for i in body["items"]] == sorted(i["seq"] for i in body["items"])
        pages.append(body["items"])
        if not body["has_more"]:
            assert body["next_before_seq"] is None
            break
        params["before_seq"] = body["next_before_seq"]
    seqs = [item["seq"] for page in reversed(pages) for item in page]
    assert seqs == _timeline_seqs(store, "conv")
    assert len(pages) == -(-len(seqs) // 3)


async def test_history_places_the_marker_and_can_leave_it_out(
    client: httpx.AsyncClient, store: MemoryEventStore
) -> None:
    """The summary marker sits at its seq with its count; ``include_markers=false`` drops it."""
    items = (await client.get("/api/threads/conv/history", params={"limit": 100})).json()["items"]
    marker = next(i for i in items if i["type"] == "summary_marker")
    stored = next(e for e in store.read("conv") if e.event_type == "middleware:summarize")
    assert marker["seq"] == stored.seq and marker["id"] == f"summary-marker-{stored.seq}"
    assert marker["replaced_count"] == 8 and marker["summary"] == stored.content["summary"]
    before = [i for i in items if i["seq"] < marker["seq"]]
    assert {i["id"] for i in before} == set(marker["replaced_message_ids"])
    assert [i["type"] for i in before[:4]] == ["human", "ai", "tool", "ai"]
    assert before[1]["tool_calls"][0]["name"] == "lookup" and before[2]["status"] == "success"
    plain = (
        await client.get(
            "/api/threads/conv/history", params={"limit": 100, "include_markers": False}
        )
    ).json()["items"]
    assert [i for i in items if i["type"] != "summary_marker"] == plain


async def test_events_page_forward_with_next_after_seq(
    client: httpx.AsyncClient, store: MemoryEventStore
) -> None:
    """Raw events page forward from ``after_seq`` and cover the thread exactly once."""
    seqs: list[int] = []
    after = 0
    while True:
        body = (
            await client.get("/api/threads/conv/events", params={"after_seq": after, "limit": 7})
        ).json()
        seqs += [e["seq"] for e in body["events"]]
        after = body["next_after_seq"]
        if not body["has_more"]:
            break
    assert seqs == list(range(1, store.last_seq("conv") + 1))
    tail = (await client.get("/api/threads/conv/events", params={"after_seq": after})).json()
    assert tail["events"] == [] and tail["next_after_seq"] == after
    event = (await client.get("/api/threads/conv/events", params={"limit": 1})).json()["events"][0]
    assert RunEvent.model_validate(event) == store.read("conv", limit=1)[0]


@pytest.mark.parametrize(
    ("params", "keep"),
    [
        ({"category": "lifecycle"}, lambda e: e.category == "lifecycle"),
        (
            {"category": ["message", "middleware"]},
            lambda e: e.category in ("message", "middleware"),
        ),
        (
            {"event_type": ["message.tool", "run.end"]},
            lambda e: e.event_type in ("message.tool", "run.end"),
        ),
        (
            {"run_id": "run-2", "category": "trace"},
            lambda e: e.run_id == "run-2" and e.category == "trace",
        ),
        ({"event_type": "no.such.type"}, lambda e: False),
    ],
)
async def test_event_filters_apply_before_the_limit(
    client: httpx.AsyncClient, store: MemoryEventStore, params: dict[str, Any], keep: Any
) -> None:
    """Category, event_type and run_id filters (repeatable) select exactly the matching events."""
    body = (await client.get("/api/threads/conv/events", params={**params, "limit": 1000})).json()
    assert [e["seq"] for e in body["events"]] == [e.seq for e in store.read("conv") if keep(e)]
    limited = (await client.get("/api/threads/conv/events", params={**params, "limit": 2})).json()
    assert limited["events"] == body["events"][:2]


async def test_runs_report_their_span_and_status(client: httpx.AsyncClient) -> None:
    """``/runs`` lists each run once, newest first, with its seq span and lifecycle status."""
    body = (await client.get("/api/threads/conv/runs")).json()
    runs = body["runs"]
    assert [r["run_id"] for r in runs] == [f"run-{i}" for i in range(5, 0, -1)]
    assert all(r["status"] == "success" for r in runs)
    assert runs[-1]["first_seq"] == 1 and runs[-2]["first_seq"] == runs[-1]["last_seq"] + 1
    assert body["has_more"] is False and body["next_before_seq"] is None


async def test_thread_ids_with_slashes_reach_their_thread(client: httpx.AsyncClient) -> None:
    """A thread id containing '/' works escaped or not, on every read route."""
    for path in ("/api/threads/team/alpha/history", "/api/threads/team%2Falpha/history"):
        body = (await client.get(path)).json()
        assert body["thread_id"] == "team/alpha" and len(body["items"]) == 4
    runs = (await client.get("/api/threads/team/alpha/runs")).json()
    assert [r["run_id"] for r in runs["runs"]] == ["run-1"]


async def test_delete_removes_the_thread_then_it_is_unknown(
    client: httpx.AsyncClient, store: MemoryEventStore
) -> None:
    """DELETE reports how many events went; afterwards the thread is 404 everywhere."""
    count = store.last_seq("conv")
    response = await client.delete("/api/threads/conv")
    assert response.status_code == 200
    assert response.json() == {"thread_id": "conv", "deleted": count}
    assert store.last_seq("conv") == 0
    assert (await client.get("/api/threads/conv/history")).status_code == 404
    assert (await client.delete("/api/threads/conv")).status_code == 404
    assert store.last_seq("team/alpha") > 0


@pytest.mark.parametrize("route", THREAD_ROUTES)
async def test_unknown_thread_is_404(client: httpx.AsyncClient, route: str) -> None:
    """Every thread route answers 404 with a JSON detail for a thread without events."""
    response = await client.get(f"/api/threads/nobody/{route}")
    assert response.status_code == 404
    assert "nobody" in response.json()["detail"]


@pytest.mark.parametrize(
    ("path", "params", "headers"),
    [
        ("/api/threads", {"limit": 0}, {}),
        ("/api/threads", {"limit": 1001}, {}),
        ("/api/threads", {"offset": -1}, {}),
        ("/api/threads/conv/history", {"limit": 0}, {}),
        ("/api/threads/conv/history", {"limit": "ten"}, {}),
        ("/api/threads/conv/history", {"before_seq": 0}, {}),
        ("/api/threads/conv/history", {"before_seq": -5}, {}),
        ("/api/threads/conv/events", {"after_seq": -1}, {}),
        ("/api/threads/conv/events", {"after_seq": 2**80}, {}),
        ("/api/threads/conv/events", {"category": "bogus"}, {}),
        ("/api/threads/conv/events", {"event_type": ""}, {}),
        ("/api/threads/conv/events", {"run_id": "a\x00b"}, {}),
        ("/api/threads/a%00b/history", {}, {}),
        ("/api/threads/%0Aconv/events", {}, {}),
        ("/api/threads/%20conv/runs", {}, {}),
        ("/api/threads/" + "x" * 257 + "/history", {}, {}),
        ("/api/threads/conv/stream", {"max_events": 0}, {}),
        ("/api/threads/conv/stream", {"timeout": 0}, {}),
        ("/api/threads/conv/stream", {"timeout": "nan"}, {}),
        ("/api/threads/conv/stream", {"after_seq": -1}, {}),
        ("/api/threads/conv/stream", {}, {"Last-Event-ID": "seven"}),
        ("/api/threads/conv/stream", {}, {"Last-Event-ID": "-3"}),
    ],
)
async def test_bad_parameters_are_422(
    client: httpx.AsyncClient, path: str, params: dict[str, Any], headers: dict[str, str]
) -> None:
    """Out-of-range cursors and limits, unknown categories and malformed ids are 422."""
    response = await client.get(path, params=params, headers=headers)
    assert response.status_code == 422, response.text
    assert response.json()["detail"]


async def test_bad_thread_id_on_delete_is_422_and_deletes_nothing(
    client: httpx.AsyncClient, store: MemoryEventStore
) -> None:
    """DELETE validates the id like the read routes and leaves the store untouched."""
    assert (await client.delete("/api/threads/%20conv")).status_code == 422
    assert store.last_seq("conv") > 0


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/api/threads"), ("DELETE", "/api/threads/conv"), ("GET", "/openapi.json")]
    + [("GET", f"/api/threads/conv/{route}") for route in THREAD_ROUTES],
)
async def test_token_protects_every_route(store: MemoryEventStore, method: str, path: str) -> None:
    """With a token, a request without it or with a wrong one is 401 and changes nothing."""
    async with _client(create_app(store, token=TOKEN)) as c:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}):
            response = await c.request(method, path, headers=headers)
            assert response.status_code == 401
            assert response.headers["www-authenticate"] == "Bearer"
        assert store.last_seq("conv") > 0
        stream = path.endswith("/stream")  # bounded so the answer ends
        ok = await c.request(
            method,
            path,
            headers={"Authorization": f"Bearer {TOKEN}"},
            params={"max_events": 1, "after_seq": 0} if stream else None,
        )
        assert ok.status_code == 200


async def test_viewer_shell_stays_public_and_locked_down(store: MemoryEventStore) -> None:
    """The viewer's pages and assets load without the token and carry a strict CSP."""
    async with _client(create_app(store, token=TOKEN)) as c:
        for path in ("/", "/threads/conv", "/threads/team/alpha"):
            page = await c.get(path)
            assert page.status_code == 200 and "viewer.js" in page.text
            csp = page.headers["content-security-policy"]
            assert "script-src 'self'" in csp and "unsafe-inline" not in csp
        for asset in ("/static/viewer.js", "/static/viewer.css"):
            assert (await c.get(asset)).status_code == 200
        assert (await c.get("/docs")).status_code == 404


async def test_openapi_documents_every_route_with_response_models(
    client: httpx.AsyncClient,
) -> None:
    """The schema names each route's response model and its 404/422 answers."""
    schema = (await client.get("/openapi.json")).json()
    paths = schema["paths"]
    expected = {
        ("/api/threads", "get"): "ThreadList",
        ("/api/threads/{thread_id}/history", "get"): "HistoryPage",
        ("/api/threads/{thread_id}/events", "get"): "EventPage",
        ("/api/threads/{thread_id}/runs", "get"): "RunList",
        ("/api/threads/{thread_id}", "delete"): "DeleteResult",
    }
    for (path, method), model in expected.items():
        ok = paths[path][method]["responses"]["200"]["content"]["application/json"]["schema"]
        assert ok["$ref"].endswith("/" + model)
        if path != "/api/threads":
            assert {"404", "422"} <= set(paths[path][method]["responses"])
    stream = paths["/api/threads/{thread_id}/stream"]["get"]["responses"]["200"]["content"]
    assert list(stream) == ["text/event-stream"]
    assert {"HumanItem", "AiItem", "ToolItem", "SummaryMarkerItem", "RunEvent"} <= set(
        schema["components"]["schemas"]
    )


async def test_cors_allows_only_configured_origins(store: MemoryEventStore) -> None:
    """``cors_origins`` answers preflights for listed origins only; none by default."""
    preflight = {
        "Access-Control-Request-Method": "GET",
        "Access-Control-Request-Headers": "authorization",
    }
    async with _client(create_app(store, cors_origins=["http://app.example"])) as c:
        ok = await c.options("/api/threads", headers={"Origin": "http://app.example", **preflight})
        assert ok.headers["access-control-allow-origin"] == "http://app.example"
        other = await c.get("/api/threads", headers={"Origin": "http://evil.example"})
        assert "access-control-allow-origin" not in other.headers
    async with _client(create_app(store)) as c:
        plain = await c.get("/api/threads", headers={"Origin": "http://app.example"})
        assert "access-control-allow-origin" not in plain.headers


async def test_store_failure_is_503_not_500(store: MemoryEventStore) -> None:
    """A failing store (here: closed) yields 503 with a generic detail."""
    async with _client(create_app(store)) as c:
        store.close()
        for path in ("/api/threads", "/api/threads/conv/history", "/api/threads/conv/events"):
            response = await c.get(path)
            assert response.status_code == 503
            assert response.json() == {"detail": "the event store is unavailable"}


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"token": ""}, ValueError),
        ({"token": "   "}, ValueError),
        ({"cors_origins": "http://a.example"}, TypeError),
        ({"cors_origins": [1]}, TypeError),
    ],
)
def test_create_app_rejects_bad_arguments(kwargs: dict[str, Any], error: type[Exception]) -> None:
    """Caller mistakes in ``create_app`` raise with a message saying what to pass."""
    with pytest.raises(error):
        create_app(MemoryEventStore(), **kwargs)
    with pytest.raises(TypeError, match="RunEventStore"):
        create_app("sqlite:///x.db")  # type: ignore[arg-type]


async def test_routes_never_block_the_event_loop(tmp_path: Any) -> None:
    """Every JSON route on a SQLite store runs without a blocking call on the event loop."""
    from journal.sqlite import SqliteEventStore

    store = SqliteEventStore(tmp_path / "j.db")
    seed_conversation(store, "conv", turns=2, marker_after=1)
    async with _client(create_app(store)) as c:
        with blockbuster_ctx():
            for path in ["/api/threads"] + [f"/api/threads/conv/{r}" for r in THREAD_ROUTES]:
                stream = {"max_events": 3, "after_seq": 0} if path.endswith("/stream") else None
                response = await c.get(path, params=stream)
                assert response.status_code == 200, path
            assert (await c.delete("/api/threads/conv")).status_code == 200
    store.close()


def test_category_parameter_matches_the_event_model() -> None:
    """The API's ``category`` values are exactly the journal's categories."""
    from typing import get_args

    from history.server.api import Category
    from journal import CATEGORIES

    assert set(get_args(Category)) == CATEGORIES
