"""Library-made event ids as a millisecond's sequence (RFC 9562 "monotonic random"): unique
across OS threads that make them at once, strictly increasing within a thread, by random
steps."""

from __future__ import annotations

import itertools
import threading
import uuid

from journal.events import new_event_id


def test_threads_making_ids_at_once_never_share_one() -> None:
    """Eight OS threads drawing ids in the same milliseconds get no id twice."""
    made: list[list[str]] = [[] for _ in range(8)]
    start = threading.Barrier(len(made))

    def draw(into: list[str]) -> None:
        start.wait()
        into.extend(new_event_id() for _ in range(20_000))

    threads = [threading.Thread(target=draw, args=(into,)) for into in made]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [i for ids in made for i in ids]
    assert len(set(every)) == len(every)
    for ids in made:  # and each thread's ids increase, as its index inserts them
        assert all(a < b for a, b in itertools.pairwise(ids))


def test_ids_of_one_millisecond_step_by_random_amounts() -> None:
    """Consecutive ids of one millisecond differ by a random step in their low bits (not a
    plain counter), keep the version and variant, and are canonical UUID text."""
    ids = [new_event_id() for _ in range(2000)]
    parsed = [uuid.UUID(i) for i in ids]
    assert all(p.version == 7 and p.variant == uuid.RFC_4122 and str(p) == i
               for p, i in zip(parsed, ids, strict=True))  # fmt: skip
    steps = {
        b.int - a.int
        for a, b in itertools.pairwise(parsed)
        if a.int >> 48 == b.int >> 48  # the same millisecond and start
    }
    assert steps and all(0 < step <= 2**16 for step in steps)
    assert len(steps) > len(ids) // 4  # random, not a fixed increment


def test_ids_made_at_once_are_the_ids_made_one_by_one() -> None:
    """A batch of ids (``new_event_ids``) has the form, order and steps of ids made one after
    the other, and the thread's sequence goes on after it as after those."""
    from journal._ids import new_event_ids

    ids = [new_event_id(), *new_event_ids(3000), new_event_id(), *new_event_ids(0)]
    parsed = [uuid.UUID(i) for i in ids]
    assert all(p.version == 7 and p.variant == uuid.RFC_4122 and str(p) == i
               for p, i in zip(parsed, ids, strict=True))  # fmt: skip
    assert all(a < b for a, b in itertools.pairwise(ids))
    steps = {b.int - a.int for a, b in itertools.pairwise(parsed) if a.int >> 48 == b.int >> 48}
    assert steps and all(0 < step <= 2**16 for step in steps)
    assert len(set(ids)) == len(ids)
