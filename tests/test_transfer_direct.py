"""Import's counts and its direct route into SQLite: what is stored, and what is counted.

An import into a built-in SQLite store goes from an exported line straight to the stored row;
into any other store it appends events. These tests hold both routes to the same stored
rows, runs and usage, and to the same counts.
"""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

from journal import MemoryEventStore, SqliteEventStore
from journal._import_lines import _hint, _micros, exported_line, exported_row
from journal._sqlite_import import FOLD_READS
from journal._sqlite_rows import to_micros
from journal.encoding import dumps
from journal.store import RunEventStore
from journal.transfer import (
    EventLineError,
    ImportSummary,
    _appended,
    export_events,
    import_events,
)
from tests.test_store_runs import journal_runs
from tests.test_transfer_lines import _LINE, _lines, _orjson_form, _times


def _exported(tmp_path: Path) -> list[bytes]:
    """The lines of three real agent runs of thread t1, as ``runjournal export`` writes them."""
    source = MemoryEventStore()
    journal_runs(source, tmp_path)
    out = io.StringIO()
    export_events(source, "t1", out)
    return out.getvalue().encode().splitlines(keepends=True)


class _OwnSqlite(SqliteEventStore):
    """A store of the user's own built on SQLite: import appends events into it."""


def _store(kind: str, tmp_path: Path) -> RunEventStore:
    """A store of ``kind``: ``memory``, ``sqlite`` (import stores rows), ``own`` (appends)."""
    if kind == "memory":
        return MemoryEventStore()
    return (SqliteEventStore if kind == "sqlite" else _OwnSqlite)(tmp_path / "t.db")


@pytest.mark.parametrize("kind", ["memory", "sqlite", "own"])
def test_an_event_id_repeated_in_one_file_is_imported_once_and_counted_once(
    tmp_path: Path, kind: str
) -> None:
    """A line repeated within one batch and across batches is stored once, counted as
    imported once and as already present for each repeat."""
    lines = _exported(tmp_path)
    repeated = [*lines[:3], lines[1], *lines[3:], lines[0]]  # a repeat in batch 1 and in the last
    with _store(kind, tmp_path) as store:
        summary = import_events(store, repeated, batch_size=len(lines) - 1)
        assert summary == ImportSummary(imported=len(lines), already_present=2, renumbered=0)
        assert [e.seq for e in store.read("t1")] == list(range(1, len(lines) + 1))
        again = import_events(store, repeated)
        assert again == ImportSummary(imported=0, already_present=len(repeated), renumbered=0)


@pytest.mark.parametrize("kind", ["memory", "sqlite", "own"])
def test_a_line_read_the_checked_way_at_another_seq_counts_as_renumbered(
    tmp_path: Path, kind: str
) -> None:
    """A line export did not write (read the checked way) stored at another seq than its
    own is counted as renumbered, as an exported line is."""
    lines = [json.dumps({**_LINE, "event_id": f"e{n}", "seq": n}).encode() for n in (1, 2)]
    with _store(kind, tmp_path) as store:
        store.append([{"thread_id": "t1", "run_id": "r0", "category": "trace",
                       "event_type": "custom:x", "event_id": "other"}])  # fmt: skip
        assert import_events(store, lines) == ImportSummary(2, 0, 2)


def _table(path: Path, table: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2, 3").fetchall()
    finally:
        conn.close()


def _by_records(store: SqliteEventStore, lines: list[bytes], batch_size: int) -> ImportSummary:
    """What import_events does for any store but a built-in SQLite one: append the events."""
    imported = present = renumbered = 0
    for stored, already, moved in _appended(store, lines, batch_size):
        imported, present, renumbered = imported + stored, present + already, renumbered + moved
    return ImportSummary(imported, present, renumbered)


def _both_routes(
    tmp_path: Path, lines: list[bytes], batch_size: int, before: list[dict[str, Any]] | None = None
) -> tuple[Any, Any]:
    """Import ``lines`` into two SQLite stores (holding ``before`` first), by rows and by
    records; assert every table reads the same; both outcomes (a summary or the error)."""
    outcomes = []
    for name, route in (("rows", import_events), ("records", _by_records)):
        with SqliteEventStore(tmp_path / f"{name}.db", content_caps={"trace": 256}) as store:
            if before:
                store.append(before)
            try:
                outcomes.append(route(store, lines, batch_size=batch_size))
            except EventLineError as e:
                outcomes.append((e.line, e.problem))
    for table in ("events", "runs", "thread_heads"):
        assert _table(tmp_path / "rows.db", table) == _table(tmp_path / "records.db", table)
    return outcomes[0], outcomes[1]


@pytest.mark.parametrize("batch_size", [1, 4, 500])
def test_rows_and_records_store_the_same_real_runs(tmp_path: Path, batch_size: int) -> None:
    """Real agent runs imported into SQLite by rows and by appending their events give the
    same events, runs, heads (usage) and counts, into an empty thread and a thread with
    other events, and a re-import stores nothing."""
    lines = _exported(tmp_path)
    assert all(exported_row(line.decode(), FOLD_READS) for line in lines)
    other = {"thread_id": "t1", "run_id": "r0", "category": "lifecycle", "event_type": "run.start",
             "event_id": "other", "created_at": "2026-01-01T00:00:00Z"}  # fmt: skip
    for before in (None, [other]):
        rows, records = _both_routes(tmp_path, lines, batch_size, before)
        assert rows == records
        assert rows.imported == len(lines)
        assert rows.renumbered == (len(lines) if before else 0)
        with SqliteEventStore(tmp_path / "rows.db") as store:
            assert import_events(store, lines) == ImportSummary(0, len(lines), 0)
        for path in tmp_path.glob("r*.db*"):
            path.unlink()


def test_lines_over_the_cap_repeated_or_with_floats_store_the_same_by_rows(tmp_path: Path) -> None:
    """Lines over the store's cap, with floats orjson writes its own way, read the checked way,
    repeated, or already stored: rows and records store and count them alike."""
    lines = _exported(tmp_path)
    floats = {"event_id": "f", "event_type": "llm.end", "content": {"f": 1e-07},
              "metadata": {"usage": {"input_tokens": 3.5}, "model": "m"}}  # fmt: skip
    odd = [
        dumps({**_LINE, "event_id": "big", "content": {"text": "x" * 400}}) + "\n",
        _orjson_form({**_LINE, **floats}),
        json.dumps({**_LINE, "event_id": "spaced", "event_type": "tool.end"}),
    ]
    assert exported_row(odd[0], FOLD_READS) is not None  # but over the cap
    with_floats = exported_row(odd[1], FOLD_READS)
    assert with_floats is not None and type(with_floats[0][6]) is int  # its kind, not a text
    mixed = [*lines[:5], *(line.encode() for line in odd), lines[2], *lines[5:]]
    before = [{"thread_id": "t1", "run_id": "r1", "category": "trace", "event_type": "custom:x",
               "event_id": "big", "created_at": "2026-01-01T00:00:00Z"}]  # fmt: skip
    rows, records = _both_routes(tmp_path, mixed, 7, before)
    assert rows == records == ImportSummary(len(lines) + 2, 2, len(lines) + 2)


_real_lines: list[bytes] = []


@settings(max_examples=60, deadline=None)
@given(
    picks=st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=12),
    made=st.lists(_lines(), max_size=4),
    batch_size=st.integers(min_value=1, max_value=6),
)
def test_rows_and_records_agree_on_any_lines(
    tmp_path_factory: pytest.TempPathFactory, picks: list[int], made: list[str], batch_size: int
) -> None:
    """Any mix of real exported lines (repeated, out of order) and generated lines (valid or
    not) stores the same rows, runs and heads by rows and by records, with the same counts or
    the same error."""
    tmp_path = tmp_path_factory.mktemp("routes")
    if not _real_lines:
        _real_lines.extend(_exported(tmp_path))
    lines = [_real_lines[pick % len(_real_lines)] for pick in picks]
    for n, line in enumerate(made):
        # an event without its id or time gets new ones on each import: not the same rows
        assume(all(f'"{key}": null' not in line and f'"{key}":null' not in line
                   and f'"{key}"' in line for key in ("event_id", "created_at")))  # fmt: skip
        lines.insert(picks[n % len(picks)] % (len(lines) + 1), line.encode())
    rows, records = _both_routes(tmp_path, lines, batch_size)
    assert rows == records
    event("error" if isinstance(rows, tuple) else "stored")


@settings(max_examples=300, deadline=None)
@given(line=_lines())
def test_a_row_is_the_fast_records_row(line: str) -> None:
    """exported_row takes a line exactly when exported_line does, with that record's values,
    hints and seq; its field values only for the types asked for."""
    fast = exported_line(line)
    read = exported_row(line, FOLD_READS)
    if read is None:
        assert fast is None
        event("not a row")
        return
    event("a row")
    assert fast is not None
    record, content, metadata, seq = fast
    row, whole = read
    assert row == [record.event_id, record.thread_id, seq, record.run_id, record.category,
                   record.event_type, content, metadata, to_micros(record.created_at)]  # fmt: skip
    if record.event_type in FOLD_READS:
        assert whole == record.model_dump(exclude={"seq"})
    else:
        assert whole is None


@given(at=_times | st.text(max_size=30))
def test_a_time_stamp_read_twice_gives_its_microseconds_or_nothing(at: Any) -> None:
    """The remembered second of a time stamp gives what the full reading does."""
    if not isinstance(at, str):
        return
    checked = exported_line(dumps({**_LINE, "created_at": at}))
    want = None if checked is None else to_micros(checked[0].created_at)
    assert _micros(at) == want
    assert _micros(at) == want  # its second remembered now
    assert _micros(at[:20] + "\uff11\uff12\uff13\uff14\uff15\uff16Z") is None  # not ASCII


@pytest.mark.parametrize("kind", ["memory", "sqlite", "own"])
@pytest.mark.parametrize("bad_at", [0, 4, 9, 12])
def test_a_bad_line_is_raised_after_the_batches_before_it_are_stored(
    tmp_path: Path, kind: str, bad_at: int
) -> None:
    """The batches before a bad line are stored and counted; nothing of its own batch or
    later is."""
    lines = _exported(tmp_path)[:12]
    lines.insert(bad_at, b'{"thread_id": "t1"}\n')
    seen: list[ImportSummary] = []
    with _store(kind, tmp_path) as store:
        with pytest.raises(EventLineError) as raised:
            import_events(store, lines, batch_size=4, progress=seen.append)
        stored = bad_at // 4 * 4
        assert raised.value.line == bad_at + 1
        assert raised.value.imported_before == stored
        assert [s.imported for s in seen] == list(range(4, stored + 1, 4))
        assert [e.seq for e in store.read("t1")] == list(range(1, stored + 1))


@pytest.mark.parametrize("kind", ["memory", "sqlite", "own"])
def test_an_import_stopped_by_its_progress_callback_stores_no_later_batch(
    tmp_path: Path, kind: str
) -> None:
    """A progress callback that raises stops the import there: the batch it was told of is
    stored, no later one is."""
    lines = _exported(tmp_path)

    def stop(summary: ImportSummary) -> None:
        if summary.imported >= 6:
            raise KeyboardInterrupt

    with _store(kind, tmp_path) as store:
        with pytest.raises(KeyboardInterrupt):
            import_events(store, lines, batch_size=3, progress=stop)
        assert store.last_seq("t1") == 6
        assert import_events(store, lines) == ImportSummary(
            imported=len(lines) - 6, already_present=6, renumbered=0
        )


def test_a_batch_the_store_refuses_ends_the_import_with_the_batches_before_it(
    tmp_path: Path,
) -> None:
    """A store error on one batch (a trigger that refuses inserts, added under the import) is raised
    from import_events; the batches before it stay, nothing after it is stored."""
    lines = _exported(tmp_path)
    path = tmp_path / "t.db"
    with SqliteEventStore(path) as store:

        def lock_after_first(summary: ImportSummary) -> None:
            if summary.imported == 3:  # the next batch is refused
                with sqlite3.connect(path) as conn:
                    conn.execute("CREATE TRIGGER refuse BEFORE INSERT ON events "
                                 "BEGIN SELECT RAISE(ABORT, 'refused'); END")  # fmt: skip

        with pytest.raises(Exception, match="refused"):
            import_events(store, lines, batch_size=3, progress=lock_after_first)
        assert [e.seq for e in store.read("t1")] == [1, 2, 3]


_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([1e-5, 1.5e-7, 5e-324, 1e16, 1e20, 2.0**63, -1e-300, 0.0001])
    | st.text(max_size=12)
    | st.sampled_from(["01a23adc-38cf-70d3-848e-6b76", "re-run", "1e-5", ":1e+5", "[2e-3"]),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=500, deadline=None)
@given(value=_json_values)
def test_a_text_hint_is_the_canonical_text(value: Any) -> None:
    """What the import tells the store of a value as its text is the rules' text of it (an
    exponent orjson writes its own way is never taken for a word's "e-")."""
    text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    hint = _hint(value, text)
    if isinstance(hint, str):
        assert hint == dumps(value)
