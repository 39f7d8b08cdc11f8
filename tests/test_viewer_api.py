"""The viewer's HTTP routes on real ``create_agent`` runs: a call's context, a run's spans, the
per-call token series, search, a marker's originals, truncation marks; 404/422, bounds."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from blockbuster import blockbuster_ctx
from langchain_core.messages.utils import count_tokens_approximately

from history import replay, verify
from history.server.app import create_app
from history.server.sse import StreamSettings
from journal import MemoryEventStore, RunEvent
from journal.messages import content_to_message
from journal.testing import ev
from tests.http_data import XSS, seed_conversation
from tests.test_viewer_scenario import (
    AGENT_MODEL,
    MARKUP_TOOL,
    RUN_ERROR,
    SUB_MODEL,
    RichThread,
    build_rich_thread,
    build_truncated_thread,
)

T = "viewer-rich"


@pytest.fixture(scope="module")
def rich(tmp_path_factory: pytest.TempPathFactory) -> RichThread:
    """The rich thread (see tests/test_viewer_scenario.py) and a hand-built one, ``conv``."""
    thread = build_rich_thread(MemoryEventStore(), tmp_path_factory.mktemp("api"))
    seed_conversation(thread.store, "conv", turns=3, marker_after=2)
    return thread


@pytest.fixture
async def http(rich: RichThread) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the app over the rich thread's store."""
    transport = httpx.ASGITransport(app=create_app(rich.store))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        yield client


async def get(http: httpx.AsyncClient, path: str, **params: Any) -> Any:
    """GET ``/api/threads/<T>/<path>`` and return the JSON of a 200."""
    given = {k: v for k, v in params.items() if v is not None}
    response = await http.get(f"/api/threads/{T}/{path}", params=given)
    assert response.status_code == 200, response.text
    return response.json()


async def context_messages(http: httpx.AsyncClient, seq: int) -> list[dict[str, Any]]:
    """Every message row of the context at ``seq``, page by page."""
    rows: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        body = await get(http, f"context/{seq}", offset=offset, limit=3)
        rows += body["messages"]
        offset = body["next_offset"]
    return rows


def messages_of(rows: list[dict[str, Any]]) -> list[Any]:
    """The rows' messages as LangChain messages."""
    return [content_to_message(r["message"]) for r in rows]


async def test_context_of_every_agent_call_is_what_the_model_received(
    http: httpx.AsyncClient, rich: RichThread
) -> None:
    """Each agent call's context equals the recording model's input and replay(view=model),
    also when asked by the seq of the AI message it produced; tokens are the provider's."""
    starts = rich.agent_starts()
    ai_seqs = {e.content["data"]["id"]: e.seq for e in rich.events("message.ai")}
    ends = {e.metadata["llm_run_id"]: e for e in rich.events("llm.end")}
    for start, received in zip(starts, rich.model.calls, strict=True):
        rows = await context_messages(http, start.seq)
        assert messages_of(rows) == received
        assert messages_of(rows) == replay(rich.store, T, upto_seq=start.seq, view="model")
        end = ends[start.metadata["llm_run_id"]]
        by_answer = await get(http, f"context/{ai_seqs[end.content['message_id']]}")
        by_end = await get(http, f"context/{end.seq}")
        assert by_answer["seq"] == by_end["seq"] == start.seq
        assert by_answer["tokens"] == {
            "count": 100 * len(received),
            "source": "provider",
            "input_tokens": 100 * len(received),
            "approximate": count_tokens_approximately(received),
        }
        assert by_answer["agent_call"] and by_answer["exact"] and by_answer["status"] == "ok"
        assert by_answer["model"] == AGENT_MODEL


async def test_context_marks_summary_edits_removals_and_journaled_seqs(
    http: httpx.AsyncClient, rich: RichThread
) -> None:
    """Rows from the state point at their message events; a cleared tool result is an edit of
    the journaled one; the summary and the removal are placed where they changed the input."""
    by_seq = {e.seq: e for e in rich.events()}
    summary = rich.events("middleware:summarize")[0]
    removal = next(e for e in rich.events("message.remove") if e.content["removed_message_ids"])
    seen: set[str] = set()
    for start in rich.agent_starts():
        body = await get(http, f"context/{start.seq}", limit=1000)
        rows = body["messages"]
        for row in rows:
            seen.add(row["origin"])
            if row["origin"] == "state":
                assert by_seq[row["seq"]].content == row["message"]
            elif row["origin"] == "edited":
                journaled = by_seq[row["original_seq"]]
                assert journaled.content["data"]["id"] == row["id"]
                assert journaled.content != row["message"]
                assert row["message"]["data"]["response_metadata"]["context_editing"]
            elif row["origin"] == "summary":
                assert row["marker_seq"] == summary.seq
                assert row["message"] == summary.content["summary_message"]
            else:
                assert row["origin"] == "added" and row["index"] == 0
                assert row["type"] == "system"
        markers = {m["kind"]: m for m in body["markers"]}
        if start.seq < summary.seq:
            assert markers == {}
            continue
        at = markers["summary"]["before_index"]
        assert rows[at]["origin"] == "summary" and markers["summary"]["seq"] == summary.seq
        if start.seq < removal.seq:
            assert "removal" not in markers
            continue
        gone = markers["removal"]
        assert gone["seq"] == removal.seq and gone["count"] == 2
        assert gone["message_ids"] == removal.content["removed_message_ids"]
        assert all(r.get("id") not in gone["message_ids"] for r in rows)
        later = [r for r in rows if (r.get("seq") or 0) > gone["last_seq"]]
        assert rows[gone["before_index"]] == later[0]
    assert seen == {"added", "state", "edited", "summary"}


async def test_context_of_subagent_and_summarizer_calls(
    http: httpx.AsyncClient, rich: RichThread
) -> None:
    """A subagent's and the summarizer's calls show their own input; the summarizer reports no
    usage, so its token count is the approximate one."""
    starts = rich.events("llm.start")
    sub = [e for e in starts if e.metadata["caller"] == "subagent:researcher"]
    for start, received in zip(sub, rich.sub_model.calls, strict=True):
        body = await get(http, f"context/{start.seq}")
        assert messages_of(body["messages"]) == received
        assert not body["agent_call"] and body["model"] == SUB_MODEL
        assert {r["origin"] for r in body["messages"]} == {"added"}
    summarizing = next(e for e in starts if e.metadata["caller"].startswith("middleware:"))
    body = await get(http, f"context/{summarizing.seq}")
    assert messages_of(body["messages"]) == rich.summarizer.calls[0]
    approx = count_tokens_approximately(rich.summarizer.calls[0])
    assert body["tokens"] == {
        "count": approx,
        "source": "approximate",
        "input_tokens": None,
        "approximate": approx,
    }


def spans_by_id(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The spans of a spans answer by id, after checking the tree's shape."""
    spans = {s["id"]: s for s in body["spans"]}
    order = [s["id"] for s in body["spans"]]
    for span in body["spans"][1:]:
        parent = spans[span["parent"]]
        assert order.index(parent["id"]) < order.index(span["id"])
        assert parent["start_ms"] <= span["start_ms"]
        if parent["end_ms"] is not None and span["end_ms"] is not None:
            assert span["end_ms"] <= parent["end_ms"]
    return spans


async def test_spans_nest_the_subagent_under_its_tool_with_totals(
    http: httpx.AsyncClient, rich: RichThread
) -> None:
    """Run 1: model calls under their node steps, the subagent's calls under the research
    tool; each call's tokens as its llm.end says; the run's totals as run.end says."""
    run = rich.run_ids[0]
    body = await get(http, "spans", run_id=run)
    spans = spans_by_id(body)
    run_end = next(e for e in rich.events("run.end") if e.run_id == run)
    assert body["status"] == "success" and body["duration_ms"] == run_end.content["duration_ms"]
    promised = ("input_tokens", "output_tokens", "total_tokens", "cache_read_tokens")
    assert {k: body["usage"][k] for k in promised} == {
        k: run_end.content["usage"][k] for k in promised
    }
    assert body["models"] == [AGENT_MODEL, SUB_MODEL]
    research = next(s for s in spans.values() if s["name"] == "research")
    subagent = next(s for s in spans.values() if s["kind"] == "subagent")
    assert subagent["parent"] == research["id"] and subagent["name"] == "researcher"
    inner = [s for s in spans.values() if s["kind"] == "model" and s["model"] == SUB_MODEL]
    assert len(inner) == 2 and all(spans[s["parent"]]["parent"] == subagent["id"] for s in inner)
    ends = {e.metadata["llm_run_id"]: e for e in rich.events("llm.end") if e.run_id == run}
    for span in (s for s in spans.values() if s["kind"] == "model"):
        end = ends[span["id"].removeprefix("llm:")]
        assert span["usage"]["input_tokens"] == end.metadata["usage"]["input_tokens"]
        assert span["duration_ms"] == end.metadata["latency_ms"] and span["status"] == "ok"
        assert span["end_seq"] == end.seq and span["context"] is True
    assert research["usage"]["input_tokens"] == sum(s["usage"]["input_tokens"] for s in inner)
    assert research["output"] == "Tides: twice a day (2+2=4)."


async def test_spans_show_failed_tools_markup_names_compaction_and_a_failed_run(
    http: httpx.AsyncClient, rich: RichThread
) -> None:
    """A tool error with its message; a tool named with markup; the summarizer's call and the
    compaction mark in their middleware node; the failed run's error and status."""
    second = spans_by_id(await get(http, "spans", run_id=rich.run_ids[1]))
    flaky = next(s for s in second.values() if s["name"] == "flaky")
    assert flaky["status"] == "error" and flaky["error_type"] == "ValueError"
    assert flaky["error"] == "lookup service down for harbour"
    markup = next(s for s in second.values() if s["name"] == MARKUP_TOOL)
    assert markup["status"] == "ok" and markup["parent"] == flaky["parent"]
    assert second[flaky["parent"]]["name"] == "tools"
    fourth = spans_by_id(await get(http, "spans", run_id=rich.run_ids[3]))
    node = next(s for s in fourth.values() if s["name"] == "SummarizationMiddleware.before_model")
    under = sorted((s["kind"], s["name"]) for s in fourth.values() if s["parent"] == node["id"])
    assert under == [("event", "middleware:summarize"), ("model", "summary-model")]
    last = await get(http, "spans", run_id=rich.run_ids[-1])
    assert last["status"] == "error" and last["error"] == RUN_ERROR
    assert last["error_type"] == "RuntimeError" and last["errors"] == 1
    explode = next(s for s in last["spans"] if s["name"] == "explode")
    assert explode["status"] == "error" and explode["error"] == RUN_ERROR


async def test_a_running_run_has_open_spans(http: httpx.AsyncClient, rich: RichThread) -> None:
    """A run without its terminal event is running; a call without its end runs too."""
    store = rich.store
    md = {"caller": "agent", "langgraph_node": "model", "langgraph_step": 1, "llm_run_id": "x"}
    store.append([ev("live", category="lifecycle"), ev("live", metadata=md)])
    response = await http.get("/api/threads/live/spans", params={"run_id": "r1"})
    body = response.json()
    assert body["status"] == "running" and body["ended_at"] is None
    model = next(s for s in body["spans"] if s["kind"] == "model")
    assert model["status"] == "running" and model["end_ms"] is None
    assert next(s for s in body["spans"] if s["kind"] == "node")["status"] == "running"


async def test_calls_series_pages_both_ways_and_sums_to_the_runs(
    http: httpx.AsyncClient, rich: RichThread
) -> None:
    """The per-call series has every ended call once, in seq order, with its tokens; pages
    walk back and forth; its sums equal the runs' own totals."""
    ends = rich.events(["llm.end", "llm.error"])
    newest = await get(http, "calls", limit=4)
    pages, cursor = [newest["calls"]], newest["next_before_seq"]
    while cursor is not None:
        page = await get(http, "calls", limit=4, before_seq=cursor)
        pages.insert(0, page["calls"])
        cursor = page["next_before_seq"]
    backward = [c for page in pages for c in page]
    forward: list[dict[str, Any]] = []
    after = 0
    while True:
        page = await get(http, "calls", limit=5, after_seq=after)
        forward += page["calls"]
        after = page["next_after_seq"]
        if not page["has_more"]:
            break
    assert [c["seq"] for c in backward] == [c["seq"] for c in forward] == [e.seq for e in ends]
    for run in rich.run_ids:
        terminal = next(
            e
            for e in rich.events()
            if e.run_id == run and e.category == "lifecycle" and e.event_type != "run.start"
        )
        mine = [c for c in forward if c["run_id"] == run]
        assert sum(c["input_tokens"] for c in mine) == terminal.content["usage"]["input_tokens"]
    assert {c["model"] for c in forward} == {AGENT_MODEL, SUB_MODEL, "summary-model"}
    both = await http.get(f"/api/threads/{T}/calls", params={"before_seq": 9, "after_seq": 2})
    assert both.status_code == 422


async def test_search_finds_text_tools_and_errors_and_pages_back(
    http: httpx.AsyncClient, rich: RichThread
) -> None:
    """Hits newest first in messages, tool calls, tool events and errors, excerpts around the
    match; a small page and its cursor find the same hits as one big page."""
    body = await get(http, "search", q="HARBOUR")
    kinds = [(h["event_type"], h["field"]) for h in body["hits"]]
    assert ("message.human", "text") in kinds and ("tool.error", "error") in kinds
    assert ("message.ai", "tool_call") in kinds and ("tool.start", "args") in kinds
    assert [h["seq"] for h in body["hits"]] == sorted(
        (h["seq"] for h in body["hits"]), reverse=True
    )
    for hit in body["hits"]:
        match = hit["excerpt"][hit["match_start"] : hit["match_start"] + hit["match_length"]]
        assert match.lower() == "harbour"
    walked: list[int] = []
    cursor = None
    while True:
        page = await get(http, "search", q="harbour", limit=2, scan=7, before_seq=cursor)
        walked += [h["seq"] for h in page["hits"]]
        if not page["has_more"]:
            break
        cursor = page["next_before_seq"]
    assert walked == [h["seq"] for h in body["hits"]]
    markup = await get(http, "search", q=XSS)
    assert {h["event_type"] for h in markup["hits"]} >= {"message.human", "tool.start"}
    hidden = await get(http, "search", q="user is in Porto")
    assert [h["hidden"] for h in hidden["hits"] if h["event_type"] == "message.human"] == [True]


async def test_marker_originals_are_the_replaced_and_removed_messages(
    http: httpx.AsyncClient, rich: RichThread
) -> None:
    """The compaction's page(s) hold exactly its journaled replaced messages with their seqs;
    the removal's, the two removed; any other seq is a 404."""
    summary = rich.events("middleware:summarize")[0]
    ids = summary.content["replaced_message_ids"]
    expected = [
        e.seq
        for e in rich.events()
        if e.category == "message"
        and e.event_type != "message.remove"
        and e.content["data"]["id"] in ids
    ]
    items: list[dict[str, Any]] = []
    after = None
    while True:
        page = await get(http, f"markers/{summary.seq}/messages", limit=3, after_seq=after)
        items += page["items"]
        if not page["has_more"]:
            break
        after = page["next_after_seq"]
    assert [i["seq"] for i in items] == expected and {i["id"] for i in items} == set(ids)
    assert items[0]["content"] == f"Research tides {XSS} please"
    removal = next(e for e in rich.events("message.remove") if e.content["removed_message_ids"])
    body = await get(http, f"markers/{removal.seq}/messages")
    assert [i["id"] for i in body["items"]] == removal.content["removed_message_ids"]
    assert body["kind"] == "removal" and [i["type"] for i in body["items"]] == ["ai", "tool"]
    not_marker = await http.get(f"/api/threads/{T}/markers/{summary.seq - 1}/messages")
    assert not_marker.status_code == 404


async def test_truncated_events_are_listed_and_marked_in_context(tmp_path: Path) -> None:
    """A question the store cut to its cap is listed with its original size, and the context
    of the agent call that received it marks that message truncated and itself not exact."""
    store = build_truncated_thread(tmp_path)
    question = store.read("cut", event_type="message.human")[0]
    call = store.read("cut", event_type="llm.start")[0]
    transport = httpx.ASGITransport(app=create_app(store))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        listed = (await client.get("/api/threads/cut/truncated")).json()
        context = (await client.get(f"/api/threads/cut/context/{call.seq}")).json()
        walked: list[int] = []
        after = 0
        while True:  # two events at a time, through the whole window
            params = {"after_seq": after, "before_seq": call.seq + 5, "limit": 2}
            page = (await client.get("/api/threads/cut/truncated", params=params)).json()
            walked += [e["seq"] for e in page["events"]]
            after = page["next_after_seq"]
            if not page["has_more"]:
                break
    assert walked == [question.seq]
    assert [e["seq"] for e in listed["events"]] == [question.seq]
    assert listed["events"][0]["original_bytes"] > 10_000
    row = next(r for r in context["messages"] if r.get("seq") == question.seq)
    assert row["origin"] == "state" and row["truncated"] is True
    assert context["exact"] is False  # a cut message is not what the call received
    assert not verify(store, "cut")["ok"]  # as verify says of the same call


@pytest.mark.parametrize(
    ("path", "params", "status"),
    [
        ("/api/threads/nope/context/3", {}, 404),
        (f"/api/threads/{T}/context/99999", {}, 404),
        (f"/api/threads/{T}/context/1", {}, 404),
        (f"/api/threads/{T}/context/0", {}, 422),
        (f"/api/threads/{T}/context/3", {"limit": 0}, 422),
        ("/api/threads/nope/spans", {"run_id": "r"}, 404),
        (f"/api/threads/{T}/spans", {"run_id": "no-such-run"}, 404),
        (f"/api/threads/{T}/spans", {}, 422),
        (f"/api/threads/{T}/spans", {"run_id": "a\x00b"}, 422),
        (f"/api/threads/{T}/spans", {"run_id": "r", "limit": 10_001}, 422),
        ("/api/threads/nope/calls", {}, 404),
        (f"/api/threads/{T}/calls", {"limit": 1001}, 422),
        ("/api/threads/nope/search", {"q": "x"}, 404),
        (f"/api/threads/{T}/search", {"q": ""}, 422),
        (f"/api/threads/{T}/search", {"q": " "}, 422),
        (f"/api/threads/{T}/search", {"q": "\r\n\t"}, 422),
        (f"/api/threads/{T}/search", {"q": "\x1c\u2003"}, 422),
        (f"/api/threads/{T}/search", {"q": "x" * 201}, 422),
        (f"/api/threads/{T}/search", {"q": "x", "scan": 0}, 422),
        ("/api/threads/nope/markers/3/messages", {}, 404),
        (f"/api/threads/{T}/markers/99999/messages", {}, 404),
        (f"/api/threads/{T}/markers/3/messages", {"after_seq": -1}, 422),
        ("/api/threads/nope/truncated", {}, 404),
        (f"/api/threads/{T}/truncated", {"before_seq": 0}, 422),
    ],
)
async def test_bad_requests_get_404_or_422_never_500(
    http: httpx.AsyncClient, path: str, params: dict[str, Any], status: int
) -> None:
    """Unknown thread/run/seq/marker is 404 with a detail; a bad parameter is 422."""
    response = await http.get(path, params=params)
    assert response.status_code == status, response.text
    assert "detail" in response.json()


async def test_answers_are_bounded_in_bytes(rich: RichThread) -> None:
    """With a small page size, context, spans and originals pages end early, say so, and
    their cursors still reach everything."""
    settings = StreamSettings(page_bytes=3000)
    transport = httpx.ASGITransport(app=create_app(rich.store, stream_settings=settings))
    start = rich.agent_starts()[-1]
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        rows: list[Any] = []
        offset: int | None = 0
        while offset is not None:
            page = (
                await client.get(f"/api/threads/{T}/context/{start.seq}", params={"offset": offset})
            ).json()
            assert len(page["messages"]) >= 1
            rows += page["messages"]
            offset = page["next_offset"]
        assert messages_of(rows) == rich.model.calls[-1] and len(rows) > 2
        spans = (
            await client.get(f"/api/threads/{T}/spans", params={"run_id": rich.run_ids[0]})
        ).json()
        assert spans["size_limited"] and 1 < len(spans["spans"]) < 14
        capped = (
            await client.get(
                f"/api/threads/{T}/spans", params={"run_id": rich.run_ids[0], "limit": 2}
            )
        ).json()
        assert capped["truncated"] and len(capped["spans"]) == 3


async def test_viewer_routes_never_block_the_event_loop(rich: RichThread, tmp_path: Path) -> None:
    """Every viewer route on a SQLite store answers with no blocking call on the loop."""
    from journal import SqliteEventStore

    store = SqliteEventStore(tmp_path / "v.db")
    copy: list[RunEvent] = rich.events()
    store.append([e.model_dump(exclude={"seq"}) for e in copy])
    marker = rich.events("middleware:summarize")[0].seq
    paths = [
        (f"context/{rich.agent_starts()[-1].seq}", {}),
        ("spans", {"run_id": rich.run_ids[0]}),
        ("calls", {}),
        ("search", {"q": "tides"}),
        (f"markers/{marker}/messages", {}),
        ("truncated", {}),
    ]
    transport = httpx.ASGITransport(app=create_app(store))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        await client.get(f"/api/threads/{T}/context/{rich.agent_starts()[0].seq}")  # imports
        with blockbuster_ctx():
            for path, params in paths:
                response = await client.get(f"/api/threads/{T}/{path}", params=params)
                assert response.status_code == 200, (path, response.text)
    store.close()


async def test_readers_answer_the_same_when_they_read_in_tiny_pages(
    http: httpx.AsyncClient, rich: RichThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Context, spans, calls, search, originals and truncation marks give the same answers
    when every store read returns a few events (long threads read in many pages)."""
    import history._context as context_module
    import history._search as search_module
    import history._spans as spans_module

    summary = rich.events("middleware:summarize")[0].seq
    last = rich.events()[-1].seq
    paths = [
        *((f"context/{e.seq}", {"limit": 1000}) for e in rich.events("llm.start")),
        *(("spans", {"run_id": run}) for run in rich.run_ids),
        ("calls", {}),
        ("search", {"q": "e"}),
        (f"markers/{summary}/messages", {}),
        ("truncated", {"after_seq": 0, "before_seq": last}),
    ]
    normal = [await get(http, path, **params) for path, params in paths]
    for module, name in [
        (context_module, "_PAGE"),
        (search_module, "_SCAN"),
        (search_module, "_CALL_CHUNK"),
        (search_module, "_CHUNK"),
        (spans_module, "_PAGE"),
    ]:
        monkeypatch.setattr(module, name, 3)
    tiny = [await get(http, path, **params) for path, params in paths]
    for (path, _), before, after in zip(paths, normal, tiny, strict=True):
        assert after == before, path


async def test_cached_walks_give_the_same_contexts_in_any_order(
    rich: RichThread, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With a checkpoint every few events, contexts asked in any order equal the uncached
    ones; a thread deleted and written again under its id is never answered from old walks."""
    import random

    import history._context as context_module
    from history._context import context_plan
    from history._reads import run_plan
    from history.server.api_viewer_models import ModelContext

    monkeypatch.setattr(context_module, "CHECKPOINT_EVERY", 4)
    monkeypatch.setattr(context_module, "_PAGE", 3)

    def uncached(store: Any, thread: str, seq: int, limit: int) -> Any:
        body = run_plan(store, context_plan(thread, seq, limit=limit))
        return ModelContext.model_validate(body).model_dump(mode="json")

    starts = [e.seq for e in rich.events("llm.start")]
    fresh = {s: uncached(rich.store, T, s, 1000) for s in starts}
    order = starts * 2
    random.Random(7).shuffle(order)
    transport = httpx.ASGITransport(app=create_app(rich.store))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        for seq in order:
            response = await client.get(f"/api/threads/{T}/context/{seq}", params={"limit": 1000})
            assert response.json() == fresh[seq], seq
        store = MemoryEventStore()
        first = build_rich_thread(store, tmp_path / "a", thread_id="again")
        transport2 = httpx.ASGITransport(app=create_app(store))
        async with httpx.AsyncClient(transport=transport2, base_url="http://test") as other:
            last = first.agent_starts()[-1].seq
            before = (await other.get(f"/api/threads/again/context/{last}")).json()
            store.delete_thread("again")
            seed_conversation(store, "again", turns=20)
            # a call of the new thread below the old walks' checkpoints
            call = max(e.seq for e in store.read("again", event_type="llm.start") if e.seq <= last)
            after = await other.get(f"/api/threads/again/context/{call}")
            expected = uncached(store, "again", call, 200)
            assert after.json() == expected and expected["messages"] != before["messages"]


async def test_run_spans_agree_with_the_stores_run_summary(
    http: httpx.AsyncClient, rich: RichThread
) -> None:
    """The run page's header (from the run's events) says what /api/runs/{id} (the store's
    projection) says: status, duration, error, models, tokens, call counts."""
    for run in rich.run_ids:
        spans = await get(http, "spans", run_id=run)
        summary = (await http.get(f"/api/runs/{run}")).json()
        assert spans["status"] == summary["status"]
        assert spans["duration_ms"] == summary["duration_ms"]
        assert (spans["error_type"], spans["error"]) == (summary["error_type"], summary["error"])
        assert spans["models"] == summary["models"]
        assert spans["usage"] == summary["usage"]
        assert (spans["llm_calls"], spans["tool_calls"]) == (
            summary["llm_calls"],
            summary["tool_calls"],
        )
