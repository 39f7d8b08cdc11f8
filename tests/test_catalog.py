"""journal.catalog: the event names and the tag rule exist once, and every package uses them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from journal import catalog
from journal.events import validate_event_type
from journal.testing import ev


@given(st.text(max_size=300))
def test_every_sanitized_name_is_a_tag_the_store_accepts(name: str) -> None:
    """sanitize_tag turns any custom event name into a tag the store's event_type rule accepts."""
    tag = catalog.sanitize_tag(name, 100)
    assert catalog.TAG_RE.match(tag)
    assert validate_event_type("trace", f"custom:{tag}") == f"custom:{tag}"


@pytest.mark.parametrize("tag", [".x", "a b", "x\n", "", "é"])
def test_the_store_rejects_what_the_tag_rule_rejects(tag: str) -> None:
    """A tag outside TAG_RE is refused by the store's validation too (one rule)."""
    assert not catalog.TAG_RE.match(tag)
    with pytest.raises(ValueError):
        ev(category="middleware", event_type=f"middleware:{tag}")


def test_packages_share_the_catalogs_names() -> None:
    """The middleware's event and the readers' event types are the catalog's objects."""
    import history._catalog as readers
    import middleware

    assert middleware.SUMMARIZATION_EVENT is catalog.SUMMARIZATION_EVENT
    assert readers.SUMMARIZE is catalog.SUMMARIZE_EVENT_TYPE
    assert readers.REMOVE is catalog.REMOVE_EVENT_TYPE
    assert readers.MESSAGE_TYPES is catalog.MESSAGE_EVENT_TYPES
