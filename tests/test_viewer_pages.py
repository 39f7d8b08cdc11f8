"""The viewer's run, context, marker, search and sparkline views in a real headless Chromium
against a real uvicorn server, on the demo thread and on real ``create_agent`` runs (subagent
in a tool, failed tool, stock summarization, removal, failed run): every number shown is the
API's, every context is what the model received, every stored text stays text."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_core.messages import BaseMessage

from history.cli.demo import DemoResult, run_demo
from history.server.app import create_app
from history.server.run import serve_in_thread
from journal import MemoryEventStore
from journal.testing import ev
from tests.http_data import XSS
from tests.test_viewer_browser import ARTIFACTS, chromium, recording_page, scroll_until
from tests.test_viewer_scenario import (
    AGENT_MODEL,
    MARKUP_TOOL,
    RUN_ERROR,
    RichThread,
    build_rich_thread,
    build_truncated_thread,
)

pytestmark = pytest.mark.browser

ROLES = {"human": "Human", "ai": "AI", "system": "System", "tool": "Tool"}
SPARK_HEIGHT = 44  # spark.js HEIGHT


class Served:
    """The rich thread and the demo thread in one store, served by uvicorn."""

    def __init__(self, rich: RichThread, demo: DemoResult, url: str) -> None:
        self.rich = rich
        self.demo = demo
        self.url = url
        self.http = httpx.Client(base_url=url)

    def api(self, path: str, **params: Any) -> Any:
        """GET an /api path (200 expected)."""
        given = {k: v for k, v in params.items() if v is not None}
        response = self.http.get("/api" + path, params=given)
        assert response.status_code == 200, response.text
        return response.json()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The server of the module's store."""
    store = MemoryEventStore()
    folder = tmp_path_factory.mktemp("pages")
    rich = build_rich_thread(store, folder)
    demo = run_demo(store, spool_path=folder / "demo-spool.jsonl")
    with serve_in_thread(create_app(store)) as url:
        yield Served(rich, demo, url)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """The module's Chromium."""
    with chromium() as launched:
        yield launched


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A recording page, wide enough for the run view."""
    with recording_page(browser, width=1200, height=900) as tab:
        yield tab


def assert_inert(page: Any) -> None:
    """No stored markup became an element and no script ran."""
    assert page.locator("img").count() == 0
    assert page.dialogs == []


def expected_text(message: BaseMessage) -> str:
    """What the viewer shows as a message's text."""
    content = message.content
    if isinstance(content, str):
        return content
    return "\n".join(b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text")


def shown_context(page: Any, start_seq: int) -> list[dict[str, Any]]:
    """The context drawer's rows once it shows the call at ``start_seq``."""
    page.wait_for_function(
        "t => document.querySelector('.drawer h2')?.textContent === t",
        arg=f"Context of model call #{start_seq}",
    )
    return page.eval_on_selector_all(
        ".drawer .ctx-msg, .drawer .ctx-marker",
        """els => els.map(e => e.classList.contains('ctx-marker')
            ? {marker: e.classList.contains('summary') ? 'summary' : 'removal'}
            : {index: Number(e.dataset.index), origin: e.dataset.origin,
               role: e.querySelector('.who').textContent,
               text: e.querySelector('.ctx-text')?.textContent ?? null})""",
    )


def check_contexts(page: Any, served: Served, thread: str, calls: list[list[BaseMessage]]) -> None:
    """Each AI message's context button shows exactly what the model received, with the
    API's origins, markers at the API's places and its token count."""
    page.goto(f"{served.url}/threads/{thread}?limit=1000")
    page.wait_for_selector(".timeline > .item.ai")
    ai_seqs = [
        int(s)
        for s in page.eval_on_selector_all(
            ".timeline > .item.ai", "els => els.map(e => e.dataset.seq)"
        )
    ]
    assert len(ai_seqs) == len(calls)
    for seq, received in zip(ai_seqs, calls, strict=True):
        body = served.api(f"/threads/{thread}/context/{seq}", limit=1000)
        page.locator(f'.item.ai[data-seq="{seq}"] .ctx-btn').click()
        rows = shown_context(page, body["seq"])
        messages = [r for r in rows if "marker" not in r]
        assert [(r["role"], r["text"]) for r in messages] == [
            (ROLES[m.type], expected_text(m)) for m in received
        ]
        assert [r["origin"] for r in messages] == [m["origin"] for m in body["messages"]]
        markers = [
            (row["marker"], rows[i + 1]["index"]) for i, row in enumerate(rows) if "marker" in row
        ]
        assert markers == [(m["kind"], m["before_index"]) for m in body["markers"]]
        tokens = page.locator(".drawer .ctx-tokens")
        assert tokens.get_attribute("data-count") == str(body["tokens"]["count"])
        assert tokens.get_attribute("data-source") == body["tokens"]["source"]
        page.locator(".drawer .close").click()
        page.wait_for_selector(".drawer", state="hidden")
    assert_inert(page)


def test_demo_thread_contexts_are_what_the_model_received(page: Any, served: Served) -> None:
    """On the demo thread every AI message's context equals the recording model's input."""
    check_contexts(page, served, served.demo.thread_id, served.demo.model_calls)


def test_rich_thread_contexts_are_what_the_model_received(page: Any, served: Served) -> None:
    """On real runs with a compaction, context edits and a removal, every AI message's context
    equals the model's input; a marker in it expands to the originals the API lists."""
    rich = served.rich
    check_contexts(page, served, rich.thread_id, rich.model.calls)
    last = rich.agent_starts()[-1]
    page.goto(f"{served.url}/threads/{rich.thread_id}#context-{last.seq}")
    shown_context(page, last.seq)
    assert page.locator(".drawer .ctx-model").inner_text() == AGENT_MODEL
    removal = page.locator(".drawer .ctx-marker.removal")
    removal.locator("summary").click()
    removal.locator(".original").first.wait_for()
    marker_seq = int(removal.locator(".condensed-range").inner_text().removeprefix("marker #"))
    originals = served.api(f"/threads/{rich.thread_id}/markers/{marker_seq}/messages")
    shown = removal.locator(".original .seq").all_inner_texts()
    assert shown == [f"#{i['seq']}" for i in originals["items"]] and len(shown) == 2
    assert page.locator('.drawer .ctx-msg[data-origin="summary"]').count() == 1
    hidden = page.locator(".drawer .ctx-msg", has=page.locator(".tag.hidden"))
    assert hidden.locator(".ctx-text").all_inner_texts() == ["(context: the user is in Porto)"]
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "viewer-context.png"))
    edited_call = next(
        e.seq
        for e in rich.agent_starts()
        if any(
            r["origin"] == "edited"
            for r in served.api(f"/threads/{rich.thread_id}/context/{e.seq}")["messages"]
        )
    )
    page.goto(f"{served.url}/threads/{rich.thread_id}#context-{edited_call}")
    shown_context(page, edited_call)
    row = page.locator('.drawer .ctx-msg[data-origin="edited"]').first
    assert row.locator(".ctx-text").inner_text() == "[cleared]"
    row.locator("button").click()
    original = row.locator(".ctx-original pre")
    original.wait_for()
    by_seq = {e.seq: e for e in rich.events("message.tool")}
    seq = int(row.locator("button").inner_text().rsplit("#", 1)[1])
    assert original.inner_text() == by_seq[seq].content["data"]["content"]
    assert_inert(page)


def test_marker_cards_expand_to_their_original_messages(page: Any, served: Served) -> None:
    """In the timeline, the compaction and the removal cards list the journaled messages
    they took away, with the seqs the API gives."""
    rich = served.rich
    page.goto(f"{served.url}/threads/{rich.thread_id}?limit=1000")
    page.wait_for_selector(".timeline > .item.marker")
    for event_type in ("middleware:summarize", "message.remove"):
        seq = next(
            e.seq
            for e in rich.events(event_type)
            if event_type != "message.remove" or e.content["removed_message_ids"]
        )
        body = served.api(f"/threads/{rich.thread_id}/markers/{seq}/messages", limit=50)
        card = page.locator(f'.item.marker[data-seq="{seq}"]')
        card.locator("summary").first.click()
        card.locator(".original .seq").first.wait_for()
        assert card.locator(".original .seq").all_inner_texts() == [
            f"#{i['seq']}" for i in body["items"]
        ]
        if event_type == "middleware:summarize":
            first = card.locator(".original .text").first.inner_text()
            assert first == f"Research tides {XSS} please"
        else:
            assert card.locator(".original .who").all_inner_texts() == ["AI", "Tool"]
    assert_inert(page)


def dfs(spans: list[dict[str, Any]]) -> list[str]:
    """Span ids in the order the waterfall draws them."""
    children: dict[str, list[dict[str, Any]]] = {}
    for span in spans[1:]:
        children.setdefault(span["parent"], []).append(span)
    order: list[str] = []

    def walk(span: dict[str, Any]) -> None:
        order.append(span["id"])
        for child in sorted(children.get(span["id"], []), key=lambda s: (s["start_ms"], s["seq"])):
            walk(child)

    walk(spans[0])
    return order


def test_run_pages_draw_the_api_spans_to_scale(page: Any, served: Served) -> None:
    """Every run's page shows the API's header numbers and spans, nested as the API nests
    them, each bar where its times put it; errors and markup names show as text."""
    rich = served.rich
    for index, run in enumerate(rich.run_ids):
        body = served.api(f"/threads/{rich.thread_id}/spans", run_id=run)
        page.goto(f"{served.url}/threads/{rich.thread_id}#run-{run}")
        page.wait_for_function(
            "n => document.querySelectorAll('.wf-row').length === n", arg=len(body["spans"])
        )
        rows = page.eval_on_selector_all(
            ".wf-row",
            """els => els.map(e => {
                const track = e.querySelector('.wf-track').getBoundingClientRect();
                const bar = e.querySelector('.wf-bar, .wf-mark').getBoundingClientRect();
                return {id: e.dataset.span, kind: e.dataset.kind, status: e.dataset.status,
                        left: bar.left - track.left, width: bar.width, track: track.width};
            })""",
        )
        assert [r["id"] for r in rows] == dfs(body["spans"])
        by_id = {s["id"]: s for s in body["spans"]}
        total = max(
            [body["duration_ms"] or 0]
            + [s["end_ms"] or 0 for s in body["spans"]]
            + [s["start_ms"] for s in body["spans"]]
        )
        for row in rows:
            span = by_id[row["id"]]
            assert (row["kind"], row["status"]) == (span["kind"], span["status"])
            px = row["track"] / total
            if span["kind"] == "event":
                assert abs(row["left"] + row["width"] / 2 - span["start_ms"] * px) < 1.5
                continue
            assert abs(row["left"] - span["start_ms"] * px) < 1.5
            length = ((span["end_ms"] or total) - span["start_ms"]) * px
            assert abs(row["width"] - max(length, 2)) < 1.5
        stats = dict(
            zip(
                page.locator(".stat .stat-label").all_text_contents(),
                page.locator(".stat .stat-value").all_text_contents(),
                strict=True,
            )
        )
        usage = body["usage"]
        assert stats["tokens"] == (
            f"{usage['total_tokens']:,} (in {usage['input_tokens']:,} · "
            f"out {usage['output_tokens']:,})"
        )
        assert stats["models"] == ", ".join(body["models"])
        assert stats["model calls"] == str(body["llm_calls"])
        assert stats["tool calls"] == str(body["tool_calls"])
        assert stats["errors"] == str(body["errors"])
        if index == 0:
            subagent = page.locator('.wf-row[data-kind="subagent"]')
            assert subagent.locator(".wf-name").inner_text() == "researcher"
            page.locator('.wf-row[data-kind="model"]').first.click()
            page.locator(".wf-details .ctx-btn").wait_for()
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "viewer-run.png"), full_page=True)
        if index == 1:
            tool = page.locator(".wf-row", has_text=MARKUP_TOOL)
            assert tool.locator(".wf-name").inner_text() == MARKUP_TOOL
            page.locator(".wf-row.error", has_text="flaky").click()
            assert page.locator(".wf-details pre.wf-error").inner_text() == (
                "lookup service down for harbour"
            )
        if index == len(rich.run_ids) - 1:
            assert page.locator(".run-error").inner_text() == f"RuntimeError: {RUN_ERROR}"
        assert_inert(page)


def test_model_call_span_opens_its_context(page: Any, served: Served) -> None:
    """The context button of a model-call span shows that call's input (a subagent's too)."""
    rich = served.rich
    run = rich.run_ids[0]
    page.goto(f"{served.url}/threads/{rich.thread_id}#run-{run}")
    sub_rows = page.locator('.wf-row[data-kind="model"]', has_text="researcher-model")
    sub_rows.first.wait_for()
    sub_rows.nth(1).click()
    page.locator(".wf-details .ctx-btn").click()
    seq = int(sub_rows.nth(1).get_attribute("data-seq"))
    rows = shown_context(page, seq)
    assert [(r["role"], r["text"]) for r in rows] == [
        (ROLES[m.type], expected_text(m)) for m in rich.sub_model.calls[1]
    ]
    page.locator(".drawer .close").click()
    page.wait_for_selector(".drawer", state="hidden")
    assert page.locator(".run-view").is_visible()


def test_sparkline_draws_each_call_to_scale_and_opens_its_context(
    page: Any, served: Served
) -> None:
    """One bar per ended call, heights proportional to input tokens; a click on a bar opens
    that call's context. The thread view's screenshot is taken here."""
    rich = served.rich
    calls = served.api(f"/threads/{rich.thread_id}/calls", limit=300)["calls"]
    page.goto(f"{served.url}/threads/{rich.thread_id}")
    page.wait_for_function(
        "n => document.querySelectorAll('.spark-bar').length === n", arg=len(calls)
    )
    heights = [
        float(h)
        for h in page.eval_on_selector_all(
            ".spark-bar", "els => els.map(e => e.getAttribute('height'))"
        )
    ]
    top = max(c["input_tokens"] for c in calls)
    for call, height in zip(calls, heights, strict=True):
        assert abs(height - max(1, call["input_tokens"] / top * (SPARK_HEIGHT - 2))) < 1e-6
    tokens = page.locator(".item.ai .tokens").first.inner_text()
    assert tokens.startswith("in ") and tokens.endswith(" tokens")
    ARTIFACTS.mkdir(exist_ok=True)
    page.evaluate("window.scrollTo(0, 0)")  # the sticky bar stays on top of a full-page shot
    page.screenshot(path=str(ARTIFACTS / "viewer-thread.png"), full_page=True)
    pick = calls[2]
    page.locator(f'.spark-bar[data-seq="{pick["seq"]}"]').dispatch_event("click")
    start = served.api(f"/threads/{rich.thread_id}/context/{pick['seq']}")["seq"]
    shown_context(page, start)
    assert_inert(page)


def test_search_lists_hits_and_jumps_to_messages_and_spans(page: Any, served: Served) -> None:
    """Searching shows the API's hits; a message hit scrolls the conversation to it; a tool
    hit opens the run with the span selected."""
    rich = served.rich
    body = served.api(f"/threads/{rich.thread_id}/search", q="harbour", limit=50)
    page.goto(f"{served.url}/threads/{rich.thread_id}?limit=4")
    page.wait_for_selector(".timeline > .item")
    page.fill(".search input", "harbour")
    page.press(".search input", "Enter")
    page.wait_for_function(
        "n => document.querySelectorAll('.hit .hit-link').length === n", arg=len(body["hits"])
    )
    marks = page.locator(".hit mark").all_inner_texts()
    assert [m.lower() for m in marks] == ["harbour"] * len(body["hits"])
    human = next(h for h in body["hits"] if h["event_type"] == "message.human")
    page.locator(f'.hit-link[href="#seq-{human["seq"]}"]').click()
    page.wait_for_selector(f'.item.target[data-seq="{human["seq"]}"]')
    assert page.locator(f'.item[data-seq="{human["seq"]}"] .text').inner_text() == (
        "Look up the harbour and the weather"
    )
    tool = next(h for h in body["hits"] if h["event_type"] == "tool.error")
    page.locator(".hit-link", has_text=f"#{tool['seq']} · tool.error").click()
    page.wait_for_selector(".wf-row.selected")
    assert page.locator(".wf-row.selected .wf-name").inner_text() == "flaky"
    assert_inert(page)


def test_a_deep_link_to_an_old_seq_opens_there_and_pages_both_ways(
    page: Any, served: Served
) -> None:
    """/threads/{id}#seq-N opens the page around N with N marked, newer pages load below it
    up to the newest, older ones above it, none lost or repeated."""
    rich = served.rich
    items = served.api(f"/threads/{rich.thread_id}/history", limit=1000)["items"]
    timeline = [item["seq"] for item in items]
    target = timeline[6]
    page.goto(f"{served.url}/threads/{rich.thread_id}?limit=4#seq-{target}")
    page.wait_for_selector(f'.item.target[data-seq="{target}"]')
    assert page.locator(".load-newer").is_visible()
    for control, to_top in ((".load-newer", False), (".load-older", True)):
        hidden = page.locator(control).is_hidden
        scroll_until(page, hidden, to_top=to_top, goal=f"{control} hidden")
    shown = [
        int(s)
        for s in page.eval_on_selector_all(
            ".timeline > .item", "els => els.map(e => e.dataset.seq)"
        )
    ]
    assert shown == timeline


@pytest.mark.parametrize("fragment", ["#seq-9007199254740993", "#context-99999999999999999999"])
def test_a_deep_link_past_the_largest_seq_opens_the_conversation(
    page: Any, served: Served, fragment: str
) -> None:
    """A seq no store gives (over 2**53 - 1) opens the conversation, not an error page."""
    rich = served.rich
    page.goto(f"{served.url}/threads/{rich.thread_id}{fragment}")
    page.wait_for_selector(".timeline > .item")
    assert "Could not load" not in page.inner_text("body")


def test_a_running_run_updates_in_place(page: Any, served: Served) -> None:
    """A run page of a running run shows new spans and the final status without a reload."""
    store = served.rich.store
    md = {"caller": "agent", "langgraph_node": "model", "langgraph_step": 1, "llm_run_id": "L1"}
    store.append([ev("live-run", category="lifecycle"), ev("live-run", metadata=md)])
    page.goto(f"{served.url}/threads/live-run#run-r1")
    page.wait_for_selector(".page-title .tag.status.running")
    assert page.locator('.wf-row[data-kind="model"]').get_attribute("data-status") == "running"
    usage = {"input_tokens": 321, "output_tokens": 9, "total_tokens": 330}
    tool = {"caller": "agent", "langgraph_node": "tools", "langgraph_step": 2, "tool_run_id": "T"}
    store.append(
        [
            ev("live-run", event_type="llm.end", metadata={**md, "usage": usage, "model": XSS}),
            ev("live-run", event_type="tool.start", metadata=tool, content={"name": XSS}),
            ev("live-run", event_type="tool.end", metadata=tool, content={"name": XSS}),
            ev("live-run", category="lifecycle", event_type="run.end", content={"status": "ok"}),
        ]
    )
    page.wait_for_selector(".page-title .tag.status.success", timeout=10_000)
    assert page.locator('.wf-row[data-kind="model"]').get_attribute("data-status") == "ok"
    assert page.locator('.wf-row[data-kind="tool"] .wf-name').inner_text() == XSS
    assert page.locator(".stat-value").nth(3).text_content().startswith("330 ")
    assert_inert(page)


def test_a_truncated_message_says_so(page: Any, tmp_path: Path) -> None:
    """A message the store cut to its cap carries a "truncated" tag with its original size."""
    store = build_truncated_thread(tmp_path)
    with serve_in_thread(create_app(store)) as url:
        page.goto(f"{url}/threads/cut")
        mark = page.locator(".item.human .tag.truncated")
        mark.wait_for()
        assert mark.inner_text().startswith("truncated · was ")


def test_hidden_messages_are_left_out_until_toggled_on_then_dimmed(
    page: Any, served: Served
) -> None:
    """A hide_from_ui message is not in the conversation; "show hidden" brings it, dimmed."""
    rich = served.rich
    page.goto(f"{served.url}/threads/{rich.thread_id}?limit=1000")
    page.wait_for_selector(".timeline > .item")
    note = "(context: the user is in Porto)"
    assert page.locator(".item.human .text", has_text=note).count() == 0
    page.locator("#show-hidden").check()
    page.wait_for_selector(".item.human.is-hidden")
    assert page.locator(".item.is-hidden .text").inner_text() == note
    assert float(page.locator(".item.is-hidden").evaluate("e => getComputedStyle(e).opacity")) < 1


def test_sparkline_grows_live_and_an_unknown_run_says_so(page: Any, served: Served) -> None:
    """A model call that ends while the thread is open adds its bar without a reload; a link
    to a run the thread does not hold says so."""
    store = served.rich.store
    md = {"caller": "agent", "langgraph_node": "model", "langgraph_step": 1, "llm_run_id": "S"}
    store.append([ev("live-spark", category="lifecycle"), ev("live-spark", metadata=md)])
    page.goto(f"{served.url}/threads/live-spark")
    page.locator(".spark-title", has_text="No model calls yet.").wait_for()
    usage = {"input_tokens": 77, "output_tokens": 3, "total_tokens": 80}
    store.append([ev("live-spark", event_type="llm.end", metadata={**md, "usage": usage})])
    page.wait_for_selector(".spark-bar", timeout=10_000)
    assert page.locator(".spark-bar").count() == 1
    assert "max input 77" in page.locator(".spark-stat").inner_text()
    page.goto(f"{served.url}/threads/live-spark#run-no-such-run")
    notice = page.locator(".run-view .notice.error")
    notice.wait_for()
    assert "has no run 'no-such-run'" in notice.inner_text()


def test_run_strip_and_usage_panel_show_the_api_numbers(page: Any, served: Served) -> None:
    """The run strip shows each run's status, duration, models, tokens and error as /runs
    says, newest first; the usage panel /usage's totals, by model and by caller; a run chip
    opens its run."""
    rich = served.rich
    runs = served.api(f"/threads/{rich.thread_id}/runs", limit=20)["runs"]
    usage = served.api(f"/threads/{rich.thread_id}/usage")
    page.goto(f"{served.url}/threads/{rich.thread_id}")
    page.wait_for_function(
        "n => document.querySelectorAll('.run-chip').length === n", arg=len(runs)
    )
    chips = page.eval_on_selector_all(
        ".run-chip",
        """els => els.map(e => ({run: e.dataset.run, status: e.dataset.status,
            duration: e.dataset.durationMs, tokens: e.dataset.totalTokens,
            models: e.querySelector('.chip-models').textContent,
            calls: e.querySelector('.chip-tokens').textContent,
            error: e.querySelector('.chip-error')?.textContent ?? null}))""",
    )
    assert [c["run"] for c in chips] == [r["run_id"] for r in runs] == rich.run_ids[::-1]
    for chip, run in zip(chips, runs, strict=True):
        assert chip["status"] == run["status"]
        assert float(chip["duration"]) == run["duration_ms"]
        assert int(chip["tokens"]) == run["usage"]["total_tokens"]
        assert chip["models"] == ", ".join(run["models"])
        noun = "call" if run["llm_calls"] == 1 else "calls"
        assert (
            chip["calls"] == f"{run['usage']['total_tokens']:,} tokens · {run['llm_calls']} {noun}"
        )
        expected_error = f"{run['error_type']}: {run['error']}" if run["error"] else None
        assert chip["error"] == expected_error
    assert chips[0]["error"] == f"RuntimeError: {RUN_ERROR}"
    for key, value in usage["totals"].items():
        figure = page.locator(f'.usage-figure[data-key="{key}"] .usage-value')
        assert figure.inner_text() == f"{value:,}", key
    page.locator(".usage-details summary").click()
    page.wait_for_timeout(600)  # a live refresh (the stream replays the run's end) keeps it open
    assert page.locator(".usage-details").get_attribute("open") is not None
    for title, buckets in (("model", usage["by_model"]), ("caller", usage["by_caller"])):
        table = page.locator(".usage-table", has=page.locator("th", has_text=title))
        names = table.locator("tbody tr").evaluate_all("rows => rows.map(r => r.dataset.name)")
        assert names == list(buckets) and AGENT_MODEL in usage["by_model"]
        for name, bucket in buckets.items():
            cells = table.locator(f'tbody tr[data-name="{name}"] td.num').all_inner_texts()
            assert cells == [
                f"{bucket[k]:,}"
                for k in (
                    "calls",
                    "input_tokens",
                    "output_tokens",
                    "total_tokens",
                    "cache_read_tokens",
                    "reasoning_tokens",
                )
            ]
    assert_inert(page)
    page.locator(f'.run-chip[data-run="{rich.run_ids[0]}"]').click()
    page.wait_for_selector(".wf-row")
    assert page.locator(".run-view .page-title .mono").inner_text() == rich.run_ids[0]


def test_run_strip_pages_back_and_follows_a_running_run(page: Any, served: Served) -> None:
    """With more runs than a page, "older runs" brings the rest; a run that ends while the
    page is open turns from running to success, and the usage panel's running run goes."""
    from tests.http_data import seed_conversation

    store = served.rich.store
    seed_conversation(store, "many-runs", turns=23)
    md = {"caller": "agent", "langgraph_node": "model", "langgraph_step": 1, "llm_run_id": "M"}
    store.append(
        [
            ev("many-runs", run_id="live", category="lifecycle"),
            ev("many-runs", run_id="live", metadata=md),
        ]
    )
    page.goto(f"{served.url}/threads/many-runs")
    page.wait_for_function("() => document.querySelectorAll('.run-chip').length === 20")
    assert page.locator(".run-chip").first.get_attribute("data-status") == "running"
    page.locator(".usage-active").wait_for()
    page.locator(".run-strip button", has_text="older runs").click()
    page.wait_for_function("() => document.querySelectorAll('.run-chip').length === 24")
    assert page.locator(".run-strip button", has_text="older runs").is_hidden()
    shown = page.eval_on_selector_all(".run-chip", "els => els.map(e => e.dataset.run)")
    assert shown == ["live", *[f"run-{n}" for n in range(23, 0, -1)]]
    usage = {"input_tokens": 50, "output_tokens": 5, "total_tokens": 55}
    store.append(
        [
            ev("many-runs", run_id="live", event_type="llm.end", metadata={**md, "usage": usage}),
            ev(
                "many-runs",
                run_id="live",
                category="lifecycle",
                event_type="run.end",
                content={"status": "success", "duration_ms": 12.5},
            ),
        ]
    )
    page.wait_for_selector('.run-chip[data-run="live"][data-status="success"]', timeout=10_000)
    page.wait_for_selector(".usage-active", state="detached", timeout=10_000)
    chip = page.locator('.run-chip[data-run="live"]')
    assert chip.get_attribute("data-total-tokens") == "55"
    # the live update kept the older page that was loaded, in order
    assert page.eval_on_selector_all(".run-chip", "els => els.map(e => e.dataset.run)") == shown


def test_a_running_run_misses_no_event_written_before_its_stream_connects(
    page: Any, served: Served
) -> None:
    """Events written after the run page read its spans but before its live stream connected
    still update it: the stream follows from the seq the spans were read at."""
    store = served.rich.store
    md = {"caller": "agent", "langgraph_node": "model", "langgraph_step": 1, "llm_run_id": "L1"}
    store.append([ev("gap-run", category="lifecycle"), ev("gap-run", metadata=md)])
    held: list[Any] = []
    holding = [True]

    def hold(route: Any) -> None:
        if holding[0]:
            held.append(route)
        else:
            route.continue_()

    page.route("**/api/threads/gap-run/stream*", hold)
    page.goto(f"{served.url}/threads/gap-run#run-r1")
    page.wait_for_selector(".page-title .tag.status.running")
    for _ in range(100):  # the run view's own stream (the thread view may follow one too)
        if any("run_id=" in route.request.url for route in held):
            break
        page.wait_for_timeout(50)
    assert any("run_id=" in route.request.url for route in held), "no live stream of the run"
    store.append(
        [
            ev("gap-run", event_type="llm.end", metadata=md),
            ev("gap-run", category="lifecycle", event_type="run.end", content={"status": "ok"}),
        ]
    )
    holding[0] = False
    for route in held:
        route.continue_()
    page.wait_for_selector(".page-title .tag.status.success", timeout=10_000)
