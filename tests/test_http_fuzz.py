"""Property-based fuzzing of the HTTP API from its own OpenAPI schema (schemathesis)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.core.parameters import ParameterLocation
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from history.cli.demo import run_demo
from history.server.app import create_app
from history.server.sse import StreamSettings
from journal import MemoryEventStore
from tests.http_data import seed_conversation

TOKEN = "fuzz-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    # invalid values and unknown query parameters must be refused (4xx), never answered
    negative_data_rejection,
]


def _app() -> Any:
    store = MemoryEventStore()
    # "0" and "A" are what the generator tries first for a thread id: hit real threads too.
    for thread_id in ("0", "A", "conv"):
        seed_conversation(store, thread_id, turns=3, marker_after=2)
    # "0" becomes a real agent thread (call records, traces, compactions) for the viewer's routes
    run_demo(store, thread_id="0", spool_path=Path(tempfile.mkdtemp()) / "spool.jsonl")
    # Streams are capped server-side so every generated request ends quickly.
    settings_ = StreamSettings(poll_interval=0.01, heartbeat_interval=0.02, max_seconds=0.05)
    return create_app(store, token=TOKEN, stream_settings=settings_)


schema = schemathesis.openapi.from_asgi("/openapi.json", _app(), headers=AUTH)


@schema.parametrize()
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
def test_generated_requests_never_get_a_server_error(case: Any) -> None:
    """Valid and invalid requests from the schema get documented answers, never a 500."""
    checks = CHECKS
    if _negates_a_header(case):  # the call sends the real token: that negation is undone
        checks = [c for c in CHECKS if c is not negative_data_rejection]
    case.call_and_validate(headers=AUTH, checks=checks)


def _negates_a_header(case: Any) -> bool:
    """Whether a negative case's invalid part is (also) a header, i.e. the Authorization."""
    data = getattr(getattr(case.meta, "phase", None), "data", None)
    mutations = getattr(data, "mutations", None) or ()
    locations = {getattr(m, "parameter_location", None) for m in mutations}
    locations.add(getattr(data, "parameter_location", None))
    return ParameterLocation.HEADER in locations
