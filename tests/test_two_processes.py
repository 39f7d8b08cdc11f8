"""Two long-lived processes, each with its own journal on one SQLite store, taking turns on a
thread whose checkpoints they share.

A journal keeps the state's order as it last saw it. When another process's run had
summarized the thread's messages away (its journal recorded the compaction), this journal's
next run took what it found gone for a removal of its own: the timeline showed a removal
marker of what the summary marker had replaced. A run paused by an interrupt with a finished
call's result held back (it waits for the earlier call), resumed by the other process, had
that result journaled twice: by the journal that resumed it, and again by the first one
when it released what it held (at its next run, or at close), and still once the result
had left the state again after the other process stored it (the first journal looked for it
in the stored state, not among the stored messages).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import RemoveMessage

from history import build_timeline, replay, verify
from journal import SqliteEventStore
from tests.journal_process import JournalProcess, update_without_journal

MODES = ["sync", "async"]
SUMMARIES = ["summarize-stock", "summarize-tracked"]


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Any]:
    """Start a journaling process (``start(name, agent)``); each is killed if still alive."""
    started: list[JournalProcess] = []

    def starter(name: str, agent: str) -> JournalProcess:
        started.append(JournalProcess(tmp_path, name, agent))
        return started[-1]

    yield starter
    for process in started:
        process.kill()


def checked_store(tmp_path: Path, state: list[list[Any]]) -> SqliteEventStore:
    """The store, once replay's state is ``state`` (a turn's checkpointed messages), verify
    passes and each message is journaled once."""
    store = SqliteEventStore(tmp_path / "j.db")
    replayed = [[m.type, m.id, m.content] for m in replay(store, "t", view="state")]
    assert replayed == state
    report = verify(store, "t")
    assert report["ok"] and not report["state_missing"], report
    ids = [
        e.content["data"]["id"]
        for e in store.read("t")
        if e.category == "message" and e.event_type != "message.remove"
    ]
    assert [mid for mid, count in Counter(ids).items() if count > 1] == []
    return store


def markers(store: SqliteEventStore) -> list[tuple[str, Any]]:
    """The timeline's markers, each with the ids it took out of the state."""
    return [
        (i["type"], i.get("removed_message_ids") or i.get("replaced_message_ids"))
        for i in build_timeline(store, "t", limit=1000)["items"]
        if i["type"].endswith("_marker")
    ]


def summarized(state: list[list[Any]]) -> bool:
    """Whether a turn's state holds a summary (the stock middleware's text)."""
    return any(t == "human" and str(c).startswith("Here is a summary") for t, _, c in state)


@pytest.mark.parametrize("agent", SUMMARIES)
@pytest.mark.parametrize("mode", MODES)
def test_another_processs_summary_is_no_removal_of_this_ones(
    tmp_path: Path, start: Any, mode: str, agent: str
) -> None:
    """B's run summarizes what A journaled; A's next run journals no removal of it: the
    timeline shows one summary marker per compaction and no removal marker."""
    a, b = start("A", agent), start("B", agent)
    a.turn(mode, "t", "q0")
    after_b = b.turn(mode, "t", "q1")["state"]
    assert summarized(after_b)  # B's compaction replaced q0's messages
    state = a.turn(mode, "t", "q2")["state"]
    a.close()
    b.close()
    store = checked_store(tmp_path, state)
    kinds = [kind for kind, _ in markers(store)]
    assert kinds == ["summary_marker", "summary_marker"]  # B's, then A's own


@pytest.mark.parametrize("mode", MODES)
def test_a_removal_of_this_processs_run_still_shows_after_anothers_summary(
    tmp_path: Path, start: Any, mode: str
) -> None:
    """After B's run summarized, A's run removes a message (``RemoveMessage`` in a hook):
    the timeline shows B's summary marker and A's removal marker of that message alone."""
    a, b = start("A", "summarize-stock"), start("B", "summarize-stock")
    a.turn(mode, "t", "q0")
    before = b.turn(mode, "t", "q1")["state"]
    oldest = next(mid for _, mid, content in before if not str(content).startswith("Here is"))
    state = a.turn(mode, "t", "forget")["state"]
    assert oldest not in [mid for _, mid, _ in state]
    a.close()
    b.close()
    store = checked_store(tmp_path, state)
    shown = markers(store)
    assert [kind for kind, _ in shown] == ["summary_marker", "removal_marker"]
    assert shown[1][1] == [oldest]


@pytest.mark.parametrize("mode", MODES)
def test_a_removal_no_journal_saw_shows_when_the_look_also_finds_anothers_turn(
    tmp_path: Path, start: Any, mode: str
) -> None:
    """A, then B, take a turn; an update no journal is told of removes A's first message;
    A's next run finds B's turn and that removal in the state: one removal marker, of it."""
    a, b = start("A", "plain"), start("B", "plain")
    first = a.turn(mode, "t", "q0")["state"][0][1]
    b.turn(mode, "t", "q1")
    update_without_journal(tmp_path, "plain", "t", [RemoveMessage(id=first)])
    state = a.turn(mode, "t", "q2")["state"]
    a.close()
    b.close()
    store = checked_store(tmp_path, state)
    assert markers(store) == [("removal_marker", [first])]


@pytest.mark.parametrize("ending", ["close", "next run"])
@pytest.mark.parametrize("mode", MODES)
def test_a_paused_run_resumed_by_another_process_journals_each_result_once(
    tmp_path: Path, start: Any, mode: str, ending: str
) -> None:
    """A's run pauses in a tool (the other call's result held back for call order); B
    resumes it; A then closes, or runs the next turn: each message is journaled once."""
    a, b = start("A", "interrupt"), start("B", "interrupt")
    assert a.turn(mode, "t", "q0")["paused"]
    state = b.resume(mode, "t", "yes")["state"]
    if ending == "next run":
        assert a.turn(mode, "t", "q1")["paused"]  # A's journal held q0's result till now
        state = a.resume(mode, "t", "again")["state"]
    a.close()
    b.close()
    store = checked_store(tmp_path, state)
    assert markers(store) == []


@pytest.mark.parametrize("mode", MODES)
def test_a_held_result_another_process_stored_and_removed_is_not_journaled_again(
    tmp_path: Path, start: Any, mode: str
) -> None:
    """A's run pauses holding ``add``'s result; B resumes it (storing the result), an
    update no journal is told of removes it, and B journals that removal; A then closes:
    the result is journaled once and replay's state, like the graph's, lacks it."""
    a, b = start("A", "interrupt"), start("B", "interrupt")
    assert a.turn(mode, "t", "q0")["paused"]
    resumed = b.resume(mode, "t", "yes")["state"]
    held = next(mid for kind, mid, content in resumed if kind == "tool" and content == "3")
    update_without_journal(tmp_path, "interrupt", "t", [RemoveMessage(id=held)])
    assert b.turn(mode, "t", "q1")["paused"]  # B's look journals the removal
    state = b.resume(mode, "t", "ok")["state"]
    assert held not in [mid for _, mid, _ in state]
    a.close()
    b.close()
    checked_store(tmp_path, state)
