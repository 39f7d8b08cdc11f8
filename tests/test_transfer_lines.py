"""Import's reading of exported lines: the fast path takes texts from the line, never more.

:func:`journal._import_lines.exported_line` reads a line exactly as export writes it and
hands the store the canonical texts taken from the line; any other line is read the checked
way. These tests hold the fast path to the checked one: same event, same seq, same stored
bytes, and no line accepted that the checked path rejects.
"""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from journal import MemoryEventStore, SqliteEventStore
from journal._batch import Hint
from journal._import_lines import _hint, exported_line
from journal.encoding import PLAIN_NUMBERS, dumps, dumps_plain, encode_plain, same_float_text
from journal.events import NewEvent, RunEvent
from journal.transfer import (
    EventLineError,
    _checked_line,
    export_events,
    import_events,
    read_batches,
)
from tests.test_store_runs import journal_runs

_LINE: dict[str, Any] = {"category": "trace", "content": {"n": 1},
                         "created_at": "2026-01-02T03:04:05.678901Z", "event_id": "e1",
                         "event_type": "custom:x", "metadata": {}, "run_id": "r1", "seq": 1,
                         "thread_id": "t1"}  # fmt: skip


def _nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def _text(value: Any, hint: Hint) -> str:
    """The stored text ``prepare`` makes of ``value`` with ``hint``."""
    return hint if isinstance(hint, str) else encode_plain(value, hint)


def _same_as_checked(line: str) -> bool:
    """Assert the fast path agrees with the checked one on ``line``; whether it took it."""
    fast = exported_line(line)
    try:
        checked = _checked_line(line.strip(), 1)
    except EventLineError:
        assert fast is None, f"the fast path took a line the checked path rejects: {line!r}"
        return False
    if fast is None:
        return False
    record, content_hint, metadata_hint, seq = fast
    event = checked[0]
    assert type(record) is RunEvent
    assert seq == record.seq == checked[3]
    assert {**record.model_dump(), "seq": None} == {**event.model_dump(), "seq": None}
    assert _text(record.content, content_hint) == dumps_plain(event.content)
    assert _text(record.metadata, metadata_hint) == dumps_plain(event.metadata)
    return True


def _canonical(line: dict[str, Any]) -> str:
    """The line export writes for ``line``."""
    return dumps(line) + "\n"


_ids = st.sampled_from(
    [
        "r1",
        "t1",
        "e-1",
        " lead",
        "trail ",
        "",
        'a"b',
        "back\\slash",
        "tab\tin",
        "é",
        "x" * 257,
        "x" * 256,
        "del\x7f",
    ]
) | st.text(max_size=6)
_types = st.sampled_from(
    [
        ("trace", "custom:x"),
        ("trace", "llm.end"),
        ("lifecycle", "run.end"),
        ("message", "message.ai"),
        ("middleware", "middleware:summarize"),
        ("trace", "run.end"),
        ("bogus", "llm.end"),
        ("trace", "custom:"),
        ("trace", 'custom:a"b'),
        ("trace", ["llm.end"]),
    ]
)
_times = st.sampled_from(
    [
        "2026-01-02T03:04:05.678901Z",
        "2026-01-02T03:04:05Z",
        "2026-01-02T03:04:05.5Z",
        "2026-02-30T03:04:05Z",
        "2026-01-02T03:04:05.678901+00:00",
        "2026-01-02 03:04:05Z",
        "20260102T030405Z",
        "2026-01-02T03:04:05.1234567Z",
        12345,
        None,
    ]
)
_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.sampled_from([2**63, 2**64 - 1, 2**64, -(2**63) - 1])
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([1e-07, 1.5e-05, 1e16, 1e22, -0.0, 0.1, 5e-324])
    | st.text(max_size=5)
    | st.sampled_from(["é", "\n", "\x1f", "\x7f", "\u2028", '"', "\\", "1.5", "e-1", "😀"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                               max_size=3),
    max_leaves=10,
)  # fmt: skip
_seqs = st.integers(min_value=-3, max_value=2**65) | st.sampled_from([1.0, True, "3", None])


_FORMS: dict[str, Any] = {
    "export": lambda line: dumps(line) + "\n",
    "no-newline": dumps,
    "ascii": lambda line: json.dumps(line, sort_keys=True, separators=(",", ":")) + "\n",
    "spaced": lambda line: json.dumps(line, sort_keys=True, ensure_ascii=False) + "\n",
    "unsorted": lambda line: json.dumps(dict(reversed(line.items())), separators=(",", ":")),
    "extra": lambda line: dumps({**line, "zz": 1}) + "\n",
}


def _orjson_form(line: dict[str, Any]) -> str:
    """The line as orjson writes it (its own float forms), else as export does."""
    try:
        return orjson.dumps(line, option=orjson.OPT_SORT_KEYS).decode() + "\n"
    except TypeError:  # an int past 64 bits
        return dumps(line) + "\n"


@st.composite
def _lines(draw: st.DrawFn) -> str:
    """An event line as export writes it, with any content and metadata, half of the time
    with one thing changed: a field, a key, or the form of the JSON."""
    line = {
        **_LINE,
        "content": draw(_values | st.sampled_from([_nested(58, 1), _nested(70, [])])),
        "metadata": draw(st.dictionaries(st.text(max_size=3), _values, max_size=3)),
    }
    change = draw(st.sampled_from(["none"] * 6 + ["type", "time", "seq", "id", "metadata",
                                                  "key", "form", "orjson"]))  # fmt: skip
    if change == "type":
        line["category"], line["event_type"] = draw(_types)
    elif change == "time":
        line["created_at"] = draw(_times)
    elif change == "seq":
        line["seq"] = draw(_seqs)
    elif change == "id":
        line[draw(st.sampled_from(["event_id", "thread_id", "run_id"]))] = draw(_ids)
    elif change == "metadata":
        line["metadata"] = draw(st.sampled_from([[], None, 5, "x"]))
    elif change == "key":
        del line[draw(st.sampled_from(sorted(line)))]
    elif change == "orjson":
        return _orjson_form(line)
    form = draw(st.sampled_from(sorted(_FORMS))) if change == "form" else "export"
    return str(_FORMS[form](line))


@settings(max_examples=1500, deadline=None)
@given(line=_lines())
def test_the_fast_path_reads_every_line_as_the_checked_path_does(line: str) -> None:
    """On any line the fast path answers the checked path's event, seq and texts, or nothing."""
    event("fast path" if _same_as_checked(line) else "checked path")


@pytest.mark.parametrize(
    "content",
    [
        {"n": 1},
        "é😀",
        None,
        7,
        [],
        {},
        {"s": 'a\nb"c\\\x1f\x7f\u2028'},
        1.5,
        {"f": 1e16},
        {"x": [0.1, {"y": 2**64 - 1}]},
        _nested(55, {"k": 1}),
        {"id": "01a2-5e-3e+7"},
    ],
)
def test_an_exported_line_takes_the_fast_path(content: Any) -> None:
    """A line as export writes it, whatever its content, is read the fast way, exactly."""
    assert _same_as_checked(_canonical({**_LINE, "content": content}))


@pytest.mark.parametrize(
    "line",
    [
        _canonical({**_LINE, "content": {"f": 1e-07}}),  # orjson writes 1e-7
        _canonical({**_LINE, "content": _nested(70, 1)}),
        _canonical({**_LINE, "seq": 2**64}),
        _canonical({**_LINE, "event_id": 'a"b'}),
        _canonical({**_LINE, "run_id": "é"}),
        _canonical({**_LINE, "created_at": "2026-01-02T03:04:05+00:00"}),
        json.dumps({**_LINE, "content": "é"}, sort_keys=True, separators=(",", ":")),
        json.dumps(_LINE, sort_keys=True),
        " " + _canonical(_LINE),
        _canonical(_LINE).replace('"category":"trace",', '"category":"trace",' * 2),
        _canonical(_LINE).replace("\n", "\r\n"),
    ],
)
def test_a_line_export_does_not_write_is_read_the_checked_way(line: str) -> None:
    """Other numbers, deep nesting, escaped or non-ASCII ids, other forms: the checked path."""
    assert not _same_as_checked(line)
    _checked_line(line.strip(), 1)  # a valid event all the same


def test_an_orjson_float_is_stored_in_the_rules_form(tmp_path: Path) -> None:
    """A line written with orjson's float form stores the json module's text, not the line's."""
    line = orjson.dumps({**_LINE, "content": {"f": 1e-07}, "metadata": {"g": 1.5e-05}},
                        option=orjson.OPT_SORT_KEYS)  # fmt: skip
    assert b'"f":1e-7' in line
    assert _same_as_checked(line.decode())  # taken, with the kind of its content
    with SqliteEventStore(tmp_path / "s.db") as store:
        import_events(store, [line + b"\n"])
    conn = sqlite3.connect(tmp_path / "s.db")
    rows = conn.execute("SELECT content, metadata FROM events").fetchall()
    conn.close()
    assert rows == [('{"f":1e-07}', '{"g":1.5e-05}')]


def test_a_float_in_an_exported_line_is_stored_by_the_rules(tmp_path: Path) -> None:
    """A float in an exported line comes with its kind: the store writes the rules' text."""
    content = {"f": 123.456, "g": [0.25, 1e16], "big": 2**63}
    line = _canonical({**_LINE, "content": content})
    assert _same_as_checked(line)
    with SqliteEventStore(tmp_path / "s.db") as store:
        import_events(store, [line.encode()])
        assert store.read("t1")[0].content == content
    conn = sqlite3.connect(tmp_path / "s.db")
    [(text,)] = conn.execute("SELECT content FROM events").fetchall()
    conn.close()
    assert text == dumps(content)


def _rows(path: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT * FROM events ORDER BY thread_id, seq").fetchall()
    finally:
        conn.close()


def test_real_runs_exported_and_imported_give_the_same_rows_runs_and_usage(
    tmp_path: Path,
) -> None:
    """Real agent runs exported and imported into an empty SQLite store: every stored row is
    byte for byte the source's, and the runs and usage read the same."""
    with SqliteEventStore(tmp_path / "source.db") as source:
        journal_runs(source, tmp_path)
        out = io.StringIO()
        export_events(source, "t1", out)
        lines = out.getvalue().encode().splitlines(keepends=True)
        assert all(exported_line(line.decode()) is not None for line in lines)
        with SqliteEventStore(tmp_path / "target.db") as target:
            summary = import_events(target, lines, batch_size=4)
            assert summary.imported == len(lines) == source.last_seq("t1")
            assert target.list_runs("t1") == source.list_runs("t1")
            assert target.read_usage("t1") == source.read_usage("t1")
            assert target.read("t1") == source.read("t1")
    assert _rows(tmp_path / "target.db") == _rows(tmp_path / "source.db")


def test_an_import_into_memory_keeps_records_of_its_own(tmp_path: Path) -> None:
    """Imported into a memory store, the records read back equal and mutating one read changes
    nothing stored; a second import stores nothing twice."""
    source = MemoryEventStore()
    journal_runs(source, tmp_path)
    out = io.StringIO()
    export_events(source, "t1", out)
    lines = out.getvalue().encode().splitlines(keepends=True)
    target = MemoryEventStore()
    import_events(target, lines)
    assert target.read("t1") == source.read("t1")
    target.read("t1")[0].content["changed"] = True
    assert target.read("t1") == source.read("t1")
    assert import_events(target, lines).already_present == len(lines)


def test_read_batches_still_yields_new_events() -> None:
    """read_batches hands out NewEvents without a seq, the file's seq beside each."""
    [[(event, seq)]] = list(read_batches([_canonical({**_LINE, "seq": 5}).encode()], 10))
    assert type(event) is NewEvent
    assert seq == 5
    assert "seq" not in event.model_dump()


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_the_counts_of_an_import_hold_for_lines_read_the_fast_way(
    tmp_path: Path, kind: str
) -> None:
    """Into a thread that has other events the lines are renumbered; a re-import finds all."""
    lines = [_canonical({**_LINE, "event_id": f"e{n}", "seq": n}).encode() for n in (1, 2, 3)]
    assert all(exported_line(line.decode()) is not None for line in lines)
    store = MemoryEventStore() if kind == "memory" else SqliteEventStore(tmp_path / "s.db")
    with store:
        store.append([{"thread_id": "t1", "run_id": "r0", "category": "trace",
                       "event_type": "custom:x", "event_id": "other"}])  # fmt: skip
        summary = import_events(store, lines, batch_size=2)
        assert (summary.imported, summary.already_present, summary.renumbered) == (3, 0, 3)
        again = import_events(store, lines)
        assert (again.imported, again.already_present, again.renumbered) == (0, 3, 0)
        assert [e.event_id for e in store.read("t1")] == ["other", "e1", "e2", "e3"]


def test_real_runs_imported_into_postgresql_read_back_equal(
    tmp_path: Path, postgres_db_url: str
) -> None:
    """Lines read the fast way into a real PostgreSQL store read back as the same events, runs
    and usage; a re-import stores nothing twice."""
    from journal.postgres import PostgresEventStore

    with SqliteEventStore(tmp_path / "source.db") as source:
        journal_runs(source, tmp_path)
        out = io.StringIO()
        export_events(source, "t1", out)
        lines = out.getvalue().encode().splitlines(keepends=True)
        with PostgresEventStore(postgres_db_url) as target:
            assert import_events(target, lines, batch_size=5).imported == len(lines)
            assert target.read("t1") == source.read("t1")
            assert target.list_runs("t1") == source.list_runs("t1")
            assert target.read_usage("t1") == source.read_usage("t1")
            assert import_events(target, lines).already_present == len(lines)


def test_a_line_over_the_targets_cap_is_cut_as_an_append_cuts_it(tmp_path: Path) -> None:
    """Content over the target's cap is cut and marked exactly as appending the event is."""
    content = {"text": "x" * 500}
    line = _canonical({**_LINE, "content": content})
    assert exported_line(line) is not None
    with (
        SqliteEventStore(tmp_path / "a.db", content_caps={"trace": 128}) as imported,
        SqliteEventStore(tmp_path / "b.db", content_caps={"trace": 128}) as appended,
    ):
        import_events(imported, [line.encode()])
        fields = {key: value for key, value in _LINE.items() if key != "seq"}
        appended.append([{**fields, "content": content}])
        [got], [want] = imported.read("t1"), appended.read("t1")
        assert got.metadata.get("truncated") is True
        assert got == want
    assert _rows(tmp_path / "a.db") == _rows(tmp_path / "b.db")


def _own_float_anywhere(value: Any) -> bool:
    """Whether ``value`` holds a float that orjson writes otherwise than the rules."""
    if type(value) is float:
        return not same_float_text(value)
    if type(value) is dict:
        return any(_own_float_anywhere(item) for item in value.values())
    if type(value) is list:
        return any(_own_float_anywhere(item) for item in value)
    return False


_small_or_big = st.sampled_from([1e-07, -3e-05, 9.99e-05, 1.5e-05, 5e-324, 2.0**63, -1e19, 1e300])


@settings(max_examples=1500, deadline=None)
@given(
    value=st.recursive(
        _values
        | _small_or_big
        | st.sampled_from(["e-", ":1e-", ",0.0000", "7e+", "[1e-5", "-", "+", ".", "0.000"]),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(st.sampled_from(["a", "e-", "0.0000"]), inner, max_size=4)
        ),
        max_leaves=12,
    )
)
def test_the_hint_of_a_text_is_the_text_unless_orjson_writes_a_float_its_own_way(
    value: Any,
) -> None:
    """``_hint`` answers the text exactly when no float in it is one orjson writes its own
    way, whatever strings hold the substrings of such floats (and then the kind)."""
    try:
        text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:  # an int past 64 bits: not a text orjson reads back either
        return
    hint = _hint(value, text)
    if hint is None:  # nested too deep for the fast path
        return
    assert hint == (PLAIN_NUMBERS if _own_float_anywhere(value) else text)


#: Values whose texts hold the characters the float tests look for first ("-", "+", "."),
#: with and without the rest of a float orjson writes its own way.
_marked = st.recursive(
    _small_or_big
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["-", "+", ".", "e-", "e+", "0.0000", "0.000", "1e-5]", "a-b.c+d"])
    | st.text(alphabet="e-+.0123456789", max_size=6),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(["a", "e-", ".", "+"]), inner, max_size=4)
    ),
    max_leaves=10,
)


@settings(max_examples=800, deadline=None)
@given(
    content=_marked,
    metadata=st.dictionaries(st.sampled_from(["m", "e-", "+"]), _marked, max_size=3),
    orjson_form=st.booleans(),
)
def test_a_line_with_the_marks_of_a_float_reads_as_the_checked_path_does(
    content: Any, metadata: dict[str, Any], orjson_form: bool
) -> None:
    """A line whose texts hold "-", "+" or "." (alone, in words, in floats of either form):
    the fast path answers the checked path's event, seq and texts, or nothing."""
    line = {**_LINE, "content": content, "metadata": metadata}
    text = _orjson_form(line) if orjson_form else _canonical(line)
    event("fast path" if _same_as_checked(text) else "checked path")
