"""Search and the per-call series hold a bounded amount of event text per read, however big
the thread's messages and model outputs are, and still find and list everything."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage

from history._reads import run_plan
from history._search import calls_plan, search_plan
from journal import MemoryEventStore, RunEvent
from journal.encoding import dumps_plain
from journal.messages import message_to_content
from journal.testing import ev

BIG = 700_000  # characters of one message or output, under the 1 MiB message cap
READ_BUDGET = 16 * 1024 * 1024  # what one read may hold (the scans aim at about 4 MiB)


class _CountingStore(MemoryEventStore):
    """A memory store that remembers, per read, how many events and bytes of content it gave."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[tuple[int, int]] = []

    def read(self, thread_id: str, **kwargs: Any) -> list[RunEvent]:  # type: ignore[override]
        events = super().read(thread_id, **kwargs)
        self.reads.append((len(events), sum(len(dumps_plain(e.content)) for e in events)))
        return events


def _thread(store: MemoryEventStore, thread_id: str, turns: int, size: int) -> None:
    """``turns`` human messages and model calls, each message and output ``size`` characters."""
    for n in range(turns):
        text = f"turn {n} needle " + "x" * size
        answer = AIMessage(content=f"answer {n} " + "y" * size, id=f"ai-{n}")
        store.append(
            [
                ev(thread_id, category="message", event_type="message.human",
                   content=message_to_content(HumanMessage(content=text, id=f"h-{n}"))),
                ev(thread_id, event_type="llm.end", content={"output": message_to_content(answer)},
                   metadata={"model": "m", "usage": {"input_tokens": n, "output_tokens": 1}}),
            ]
        )  # fmt: skip


def test_search_reads_big_messages_a_few_at_a_time_and_finds_them_all() -> None:
    """A search over 60 turns of 700 kB messages never reads more than ~16 MB at once, and
    finds every turn's hit, newest first."""
    store = _CountingStore()
    _thread(store, "big", turns=60, size=BIG)
    store.reads.clear()
    body = run_plan(store, search_plan("big", "needle", limit=100, scan=1000))
    assert [h["seq"] for h in body["hits"]] == list(range(119, 0, -2))
    assert body["has_more"] is False
    assert max(size for _, size in store.reads) <= READ_BUDGET


def test_search_of_small_events_still_reads_in_large_pages() -> None:
    """Small events are read up to 200 at a time: few reads for a long scan."""
    store = _CountingStore()
    _thread(store, "small", turns=1500, size=50)
    store.reads.clear()
    body = run_plan(store, search_plan("small", "zzz-absent", scan=3000))
    assert body["scanned"] == 3000 and body["hits"] == []
    assert len(store.reads) <= 20
    assert max(count for count, _ in store.reads) == 200


def test_calls_series_of_big_outputs_reads_a_few_at_a_time_and_lists_them_all() -> None:
    """The per-call series over 60 calls with 700 kB outputs reads at most ~16 MB at once and
    lists every call, backwards and forwards alike."""
    store = _CountingStore()
    _thread(store, "big", turns=60, size=BIG)
    store.reads.clear()
    newest = run_plan(store, calls_plan("big", limit=500))
    assert [c["seq"] for c in newest["calls"]] == list(range(2, 121, 2))
    assert [c["input_tokens"] for c in newest["calls"]] == list(range(60))
    forward = run_plan(store, calls_plan("big", after_seq=0, limit=25))
    assert [c["seq"] for c in forward["calls"]] == list(range(2, 51, 2))
    assert forward["has_more"] is True and forward["next_after_seq"] == 50
    assert max(size for _, size in store.reads) <= READ_BUDGET
