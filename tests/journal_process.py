"""A long-lived journaling process for the tests of journals in two processes on one thread.

Run as ``python -m tests.journal_process STORE CHECKPOINTS SPOOL AGENT``: one ``RunJournal`` on
the SQLite store ``STORE``, running turns of the ``AGENT`` agent (see :func:`agent_for`) whose
checkpoints live in the file ``CHECKPOINTS``, shared with the other processes (loaded before
each turn, saved after it: the processes take turns). It reads commands on stdin and answers
each with one JSON line:

* ``turn MODE THREAD TEXT`` — run the thread with the human message ``TEXT`` (``MODE``:
  ``sync`` for ``invoke``, ``async`` for ``ainvoke``), then flush the journal;
* ``resume MODE THREAD VALUE`` — resume the thread's paused run with ``VALUE``;
* ``close`` — close the journal and exit.

A turn's answer is ``{"paused": bool, "state": [[type, id, content], ...]}``, the thread's
checkpointed messages. :class:`JournalProcess` starts one and sends it commands.
"""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware, before_model
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command, interrupt

from journal import RunJournal, SqliteEventStore
from middleware import TrackingSummarizationMiddleware
from tests.cli_helpers import ROOT, cli_env
from tests.fakes import ScriptedChatModel
from tests.test_summarization_middleware import summarizer

#: The agents a process can run (see :func:`agent_for`).
AGENTS = ("plain", "summarize-stock", "summarize-tracked", "interrupt")


class JournalProcess:
    """A child process running :func:`main`: one long-lived journal, told what to run."""

    def __init__(self, workdir: Path, name: str, agent: str) -> None:
        self.name = name
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "tests.journal_process", str(workdir / "j.db"),
             str(workdir / "checkpoints.pkl"), str(workdir / f"spool-{name}"), agent],
            cwd=ROOT, env=cli_env(), text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip

    def turn(self, mode: str, thread: str, text: str) -> Any:
        """Run one turn of ``thread`` with the human message ``text``; its answer."""
        return self._send(f"turn {mode} {thread} {text}")

    def resume(self, mode: str, thread: str, value: str) -> Any:
        """Resume ``thread``'s paused run with ``value``; its answer."""
        return self._send(f"resume {mode} {thread} {value}")

    def close(self) -> None:
        """Close the journal and wait for the process to exit."""
        assert self._send("close") == {"closed": True}
        assert self._proc.wait(60) == 0

    def kill(self) -> None:
        """End the process if it still runs (a failed test)."""
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait(60)

    def _send(self, command: str) -> Any:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(command + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:  # it died: say why
            assert self._proc.stderr is not None
            raise AssertionError(f"{self.name} failed on {command!r}: {self._proc.stderr.read()}")
        return json.loads(line)


# -- the child's side -------------------------------------------------------------------------


def load_saver(path: Path) -> InMemorySaver:
    """An in-memory checkpointer holding what :func:`save_saver` wrote to ``path``."""
    saver = InMemorySaver()
    if path.exists():
        storage, writes, blobs = pickle.loads(path.read_bytes())
        for thread, namespaces in storage.items():
            saver.storage[thread] = defaultdict(dict, namespaces)
        saver.writes.update(writes)
        saver.blobs.update(blobs)
    return saver


def save_saver(saver: InMemorySaver, path: Path) -> None:
    """Write ``saver``'s checkpoints to ``path`` (for the next process's turn)."""
    storage = {t: {ns: dict(c) for ns, c in n.items()} for t, n in saver.storage.items()}
    path.write_bytes(pickle.dumps((storage, dict(saver.writes), dict(saver.blobs))))


def update_without_journal(workdir: Path, agent: str, thread: str, writes: list[Any]) -> None:
    """Apply ``writes`` to ``thread``'s state with no journal told (``update_state`` of a
    process without one)."""
    path = workdir / "checkpoints.pkl"
    saver = load_saver(path)
    config: Any = {"configurable": {"thread_id": thread}}
    agent_for(agent, saver).update_state(config, {"messages": writes})
    save_saver(saver, path)


@tool
def echo(text: str) -> str:
    """Echo the text (in the ``interrupt`` agent, after a human's answer)."""
    if ECHO_ASKS:
        return f"echo {text} {interrupt({'ask': text})}"
    return f"echo {text}"


@tool
def add(a: int, b: int) -> str:
    """Add two numbers."""
    return str(a + b)


ECHO_ASKS = False
_answers = iter(range(1, 1_000_000))


def answer(messages: list[BaseMessage]) -> AIMessage:
    """A human message gets two parallel calls (ids unique across processes), else a text."""
    last = messages[-1]
    if last.type == "human" and last.content != "forget":
        tag = f"{os.getpid()}_{next(_answers)}"
        return AIMessage("", tool_calls=[
            {"name": "echo", "args": {"text": str(last.content)}, "id": f"e{tag}"},
            {"name": "add", "args": {"a": 1, "b": 2}, "id": f"a{tag}"},
        ])  # fmt: skip
    return AIMessage(f"done after {len(messages)}")


@before_model
def forget(state: Any, runtime: Any) -> dict[str, Any] | None:
    """On the human message "forget": remove the oldest message that is no summary."""
    messages = state["messages"]
    if messages[-1].content != "forget":
        return None
    oldest = next(m for m in messages if not m.additional_kwargs.get("lc_source"))
    return {"messages": [RemoveMessage(id=str(oldest.id))]}


def agent_for(name: str, saver: InMemorySaver) -> Any:
    """The agent ``name`` of :data:`AGENTS`: two parallel tool calls a turn, without
    middleware, with a stock or a tracking summarization (of 8 messages, keeping 3) and
    :func:`forget`, or with an ``echo`` that asks a human."""
    global ECHO_ASKS
    ECHO_ASKS = name == "interrupt"
    middleware: list[Any] = []
    if name.startswith("summarize"):
        tracked = name.endswith("tracked")
        kind = TrackingSummarizationMiddleware if tracked else SummarizationMiddleware
        middleware = [kind(summarizer(), trigger=("messages", 8), keep=("messages", 3)), forget]
    return create_agent(ScriptedChatModel(answer), [echo, add], middleware=middleware,
                        checkpointer=saver)  # fmt: skip


def main(store_path: str, checkpoints: str, spool: str, agent_name: str) -> None:
    """Answer the commands of stdin (see the module doc) with one journal."""
    path = Path(checkpoints)
    journal = RunJournal(SqliteEventStore(store_path), spool_path=spool)
    for line in sys.stdin:
        command, *args = line.strip().split(maxsplit=3)
        if command == "close":
            print(json.dumps({"closed": journal.close(30)}), flush=True)
            return
        mode, thread, value = args
        saver = load_saver(path)
        agent = agent_for(agent_name, saver)
        config: Any = {"configurable": {"thread_id": thread}, "callbacks": [journal]}
        payload: Any = Command(resume=value) if command == "resume" else {
            "messages": [HumanMessage(value)]
        }  # fmt: skip
        if mode == "async":
            asyncio.run(agent.ainvoke(payload, config))
        else:
            agent.invoke(payload, config)
        state = agent.get_state({"configurable": {"thread_id": thread}})
        save_saver(saver, path)
        journal.flush(30)
        messages = [[m.type, m.id, m.content] for m in state.values["messages"]]
        print(json.dumps({"paused": bool(state.next), "state": messages}), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:5])
