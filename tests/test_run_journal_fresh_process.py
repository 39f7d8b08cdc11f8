"""A thread a fresh process journals again: the state it journals is the graph's, whatever an
earlier process journaled of the thread (a graph without a checkpointer starts every run with
its input alone)."""

from __future__ import annotations

from pathlib import Path

import pytest

from history import replay
from journal import SqliteEventStore
from tests.cli_helpers import run_script

ROOT = Path(__file__).resolve().parent.parent

_RUN = """
import sys
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from history import replay
from journal import RunJournal, SqliteEventStore
from tests.fakes import ScriptedChatModel, ai, call
from tests.test_run_journal_ids import echo

store_path, question, memory = sys.argv[1], sys.argv[2], sys.argv[3]
model = ScriptedChatModel([ai("", call("echo", text=question)), ai("done " + question)])
config = {"configurable": {"thread_id": "t1"}}
with SqliteEventStore(store_path) as store:
    # "resent": the graph's state goes on, seeded from the journal's replay of the thread
    resent = memory == "resent" and store.last_seq("t1") > 0
    earlier = replay(store, "t1", view="state") if resent else []
    journal = RunJournal(store, spool_path=store_path + ".spool")
    config["callbacks"] = [journal]
    agent = create_agent(model, [echo])
    out = agent.invoke({"messages": [*earlier, HumanMessage(question)]}, config)
    journal.close(10)
print("\\n".join(str(m.content) for m in out["messages"]))
"""


def _run_in_a_new_process(store: Path, question: str, memory: str) -> list[str]:
    return run_script(_RUN, store, question, memory)


@pytest.mark.parametrize("memory", ["none", "resent"])
def test_a_fresh_process_journals_the_state_its_run_has(tmp_path: Path, memory: str) -> None:
    """Run 1 in one process, run 2 in another: the replayed state after each run is the
    graph's (without memory run 2 starts anew; given the replayed state it goes on)."""
    store = tmp_path / "store.db"
    first = _run_in_a_new_process(store, "q0", memory)
    with SqliteEventStore(store) as reader:
        assert [str(m.content) for m in replay(reader, "t1", view="state")] == first
    second = _run_in_a_new_process(store, "q1", memory)
    assert second[0] == ("q0" if memory == "resent" else "q1")
    with SqliteEventStore(store) as reader:
        assert [str(m.content) for m in replay(reader, "t1", view="state")] == second
        assert [str(m.content) for m in replay(reader, "t1", view="full")][:2] == ["q0", ""]
