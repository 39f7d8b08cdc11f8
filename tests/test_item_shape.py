"""One timeline item shape: what build_timeline returns is what the OpenAPI models declare."""

from __future__ import annotations

from typing import Any, get_args

from history import TimelineItem, build_timeline
from history.server.api_models import (
    AiItem,
    HumanItem,
    RemovalMarkerItem,
    SummaryMarkerItem,
    ToolItem,
)
from tests.test_timeline import sample_thread

MODELS: dict[str, Any] = {
    get_args(model.model_fields["type"].annotation)[0]: model
    for model in (HumanItem, AiItem, ToolItem, SummaryMarkerItem, RemovalMarkerItem)
}


def test_every_item_kind_has_exactly_its_models_fields() -> None:
    """Each item kind has exactly its OpenAPI model's fields, all of them TimelineItem keys."""
    b = sample_thread()
    b.turn(tools=1)
    gone = b.state[-1].id
    b._append("message", "message.remove", {"removed_message_ids": [gone]})
    page = build_timeline(b.store, "t", limit=1000)
    seen: dict[str, set[str]] = {}
    for item in page["items"]:
        model = MODELS[item["type"]]
        model.model_validate(item)
        seen.setdefault(item["type"], set()).update(item)
    assert set(seen) == set(MODELS)
    for kind, keys in seen.items():
        assert keys == set(MODELS[kind].model_fields), kind
        assert keys <= set(TimelineItem.__annotations__), kind
