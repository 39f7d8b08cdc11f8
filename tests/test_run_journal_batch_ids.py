"""The writer's event ids made a batch at once: the same form as one by one, distinct."""

from __future__ import annotations

import os
import time
import uuid

from journal._event_ids import event_ids
from journal.events import new_event_id


def test_batch_ids_are_version_7_uuids_in_canonical_form() -> None:
    """Each id of a batch is a canonical lowercase UUIDv7 of the RFC variant, as new_event_id's."""
    ids = event_ids(3000)
    parsed = [uuid.UUID(i) for i in ids]
    assert all(p.version == 7 and p.variant == uuid.RFC_4122 for p in parsed)
    assert [str(p) for p in parsed] == ids
    assert len(set(ids)) == len(ids) == 3000
    assert event_ids(0) == [] and len(event_ids(1)) == 1


def test_batch_ids_carry_the_millisecond_they_were_made_in_and_sort_after_earlier_ones() -> None:
    """A batch's ids name the current Unix millisecond; a later batch's sort after them."""
    before = time.time_ns() // 1_000_000
    first = event_ids(500)
    after = time.time_ns() // 1_000_000
    assert all(before <= uuid.UUID(i).int >> 80 <= after for i in first)
    time.sleep(0.002)
    later = event_ids(5)
    assert max(first) < min(later)
    assert max(first) < new_event_id()  # the same clock and layout as the single ids


def test_batch_ids_use_every_random_bit_position() -> None:
    """The 74 random bits vary (no position stuck), the variant's two random bits included."""
    values = [uuid.UUID(i).int for i in event_ids(4000)]
    random_mask = ((1 << 12) - 1) << 64 | ((1 << 62) - 1)
    ones = 0
    zeros = 0
    for v in values:
        ones |= v & random_mask
        zeros |= ~v & random_mask
    assert ones == random_mask and zeros == random_mask
    assert {str(uuid.UUID(int=v))[19] for v in values} == set("89ab")


def test_a_forked_child_makes_other_batch_ids() -> None:
    """After fork, parent and child draw different random parts."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.write(write, ",".join(event_ids(50)).encode())
        os._exit(0)
    os.close(write)
    mine = set(event_ids(50))
    os.waitpid(pid, 0)
    theirs = set(os.read(read, 100_000).decode().split(","))

    def random_parts(ids: set[str]) -> set[int]:
        return {uuid.UUID(i).int & ((1 << 76) - 1) for i in ids}

    assert len(theirs) == 50 and not random_parts(mine) & random_parts(theirs)
