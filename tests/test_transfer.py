"""journal.transfer: the library behind ``runjournal export`` and ``runjournal import``."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from journal import MemoryEventStore, NewEvent, SqliteEventStore
from journal.transfer import EventLineError, ImportSummary, export_events, import_events


def _events(thread_id: str, count: int) -> list[NewEvent]:
    return [
        NewEvent(
            thread_id=thread_id,
            run_id="r1",
            category="trace",
            event_type="custom:tick",
            content={"n": n},
            metadata={},
        )
        for n in range(count)
    ]


def test_export_then_import_reproduces_the_thread_exactly() -> None:
    """Exported lines imported into an empty store give the same events, seqs and ids."""
    source = MemoryEventStore()
    source.append(_events("t", 7))
    out = io.StringIO()
    assert export_events(source, "t", out) == 7
    target = MemoryEventStore()
    lines = out.getvalue().encode().splitlines(keepends=True)
    summary = import_events(target, lines, batch_size=3)
    assert summary == ImportSummary(imported=7, already_present=0, renumbered=0)
    assert target.read("t") == source.read("t")
    again = import_events(target, lines)
    assert again == ImportSummary(imported=0, already_present=7, renumbered=0)


def test_a_bad_line_stops_its_batch_and_names_its_number() -> None:
    """A malformed line raises EventLineError with its number; earlier batches stay stored."""
    source = MemoryEventStore()
    source.append(_events("t", 4))
    out = io.StringIO()
    export_events(source, "t", out)
    lines = out.getvalue().encode().splitlines(keepends=True)
    lines.insert(3, b'{"thread_id": "t"}\n')
    target = MemoryEventStore()
    with pytest.raises(EventLineError) as raised:
        import_events(target, lines, batch_size=2)
    assert raised.value.line == 4
    assert raised.value.imported_before == 2
    assert [e.seq for e in target.read("t")] == [1, 2]


def test_import_into_a_thread_with_other_events_counts_renumbered() -> None:
    """Events stored at another seq than in the file are counted as renumbered."""
    source = MemoryEventStore()
    source.append(_events("t", 2))
    out = io.StringIO()
    export_events(source, "t", out, after_seq=1)
    target = MemoryEventStore()
    target.append(_events("t", 3))
    summary = import_events(target, out.getvalue().encode().splitlines())
    assert summary == ImportSummary(imported=1, already_present=0, renumbered=1)


@pytest.mark.parametrize("seq", ['"five"', "0", "-3", "2.5", "true", "[1]"])
@pytest.mark.parametrize("store", ["memory", "sqlite"])
def test_a_line_whose_seq_is_not_a_positive_int_is_a_bad_line(
    seq: str, store: str, tmp_path: Path
) -> None:
    """``seq`` is the exported position of an event: a line may leave it out (or null), but
    one that says ``"five"`` or 0 is refused with its number, not imported as if unsaid."""
    import json

    source = MemoryEventStore()
    source.append(_events("t", 3))
    out = io.StringIO()
    export_events(source, "t", out)
    lines = out.getvalue().splitlines(keepends=True)
    line = json.loads(lines[1])
    bad = json.dumps({k: v for k, v in line.items() if k != "seq"})[:-1] + f', "seq": {seq}}}\n'
    target = MemoryEventStore() if store == "memory" else SqliteEventStore(tmp_path / "t.db")
    with target, pytest.raises(EventLineError, match="seq") as raised:
        import_events(target, [lines[0].encode(), bad.encode(), lines[2].encode()])
    assert raised.value.line == 2
    with MemoryEventStore() as lenient:  # no seq, or a null one: the event, placed anew
        unsaid = json.dumps({k: v for k, v in line.items() if k != "seq"})
        nulled = json.dumps({**line, "seq": None})
        summary = import_events(lenient, [unsaid.encode(), nulled.encode()])
        assert summary.imported == 1 and summary.already_present == 1
