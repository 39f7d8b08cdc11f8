"""A PostgreSQL append's retry (the checked attempt) locks its threads' heads before it looks
stored ids up, in the order every writer takes them, and never a later head before an
earlier one another writer is creating: no deadlock with an optimistic writer of the same
threads (statements stepped one by one on two real connections)."""

from __future__ import annotations

import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg.rows import tuple_row

from journal._postgres_ops import BEGIN, append_op
from journal.events import NewEvent
from journal.postgres import PostgresEventStore


def _event(thread: str) -> NewEvent:
    return NewEvent(event_id=str(uuid.uuid4()), thread_id=thread, run_id="r",
                    category="lifecycle", event_type="run.start", content={},
                    created_at=datetime.now(UTC))  # fmt: skip


class Stepper:
    """An ``append_op`` run statement by statement on its own connection."""

    def __init__(self, url: str, events: list[NewEvent], *, checked: bool) -> None:
        self.conn = psycopg.connect(url, autocommit=True)
        self.conn.execute("SET lock_timeout = '20s'")
        self.op = append_op(events, checked=checked)
        self.pending: Any = next(self.op)
        self.tx: Any = None

    def step(self) -> str:
        """Run the next statement; its first words."""
        statement = self.pending
        if statement is BEGIN:
            self.tx = self.conn.transaction()
            self.tx.__enter__()
            self.pending = next(self.op)
            return "BEGIN"
        cursor = self.conn.cursor(row_factory=tuple_row)
        cursor.execute(*statement)
        rows = cursor.fetchall() if cursor.description else []
        try:
            self.pending = self.op.send(rows)
        except StopIteration:
            self.pending = None
        return " ".join(statement[0].split()[:4])

    def finish(self) -> None:
        """Run the rest, then commit."""
        while self.pending is not None:
            self.step()
        self.tx.__exit__(None, None, None)
        self.conn.close()


def test_a_retry_waits_for_a_head_being_created_without_deadlock(postgres_db_url: str) -> None:
    with PostgresEventStore(postgres_db_url) as store:
        store.append([_event("b")])  # b has a head, a has none yet
        optimistic = Stepper(postgres_db_url, [_event("a"), _event("b")], checked=False)
        checked = Stepper(postgres_db_url, [_event("a"), _event("b")], checked=True)
        with ThreadPoolExecutor(2) as pool:
            assert optimistic.step() == "BEGIN"
            optimistic.step()  # its head of a: created, not committed
            retry: Future[None] = pool.submit(checked.finish)  # it must wait for that head
            time.sleep(0.5)
            assert not retry.done()
            rest = pool.submit(optimistic.finish)  # b: not locked by the retry meanwhile
            rest.result(timeout=15)
            retry.result(timeout=15)
        assert store.last_seq("a") == 2 and store.last_seq("b") == 3
