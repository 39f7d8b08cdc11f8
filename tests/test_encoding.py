"""The canonical JSON encoding of content/metadata, and the per-category content caps."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import json
import pathlib
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from pydantic import BaseModel

from journal import MemoryEventStore, content_to_message, dumps, loads, to_jsonable
from journal.encoding import MAX_DEPTH
from journal.truncation import DEFAULT_CONTENT_CAPS, fit_content, utf8_prefix


class Color(enum.Enum):
    """An enum for the encoding rules."""

    RED = "red"


@dataclasses.dataclass
class Point:
    """A dataclass for the encoding rules."""

    x: int
    when: dt.date


class Model(BaseModel):
    """A pydantic model for the encoding rules."""

    name: str
    tags: set[str]


class Opaque:
    """An object with no encoding rule."""

    def __repr__(self) -> str:
        return "<opaque " + "z" * 500 + ">"


class BrokenRepr:
    """An object whose repr raises."""

    def __repr__(self) -> str:
        raise RuntimeError("no repr")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (float("nan"), "NaN"),
        (float("inf"), "Infinity"),
        (float("-inf"), "-Infinity"),
        (1.5, 1.5),
        (True, True),
        (dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC), "2026-01-02T03:04:05+00:00"),
        (dt.datetime(2026, 1, 2, 3, 4, 5), "2026-01-02T03:04:05"),
        (dt.date(2026, 1, 2), "2026-01-02"),
        (dt.time(3, 4), "03:04:00"),
        (uuid.UUID(int=1), "00000000-0000-0000-0000-000000000001"),
        (decimal.Decimal("1.10"), "1.10"),
        (pathlib.PurePosixPath("/a/b"), "/a/b"),
        (Color.RED, "red"),
        (b"\xff\x00", {"$bytes": "/wA="}),
        (bytearray(b"ab"), {"$bytes": "YWI="}),
        (memoryview(b"ab"), {"$bytes": "YWI="}),
        ((1, (2, 3)), [1, [2, 3]]),
        ({3, 1, 2}, [1, 2, 3]),
        (frozenset({"b", "a"}), ["a", "b"]),
        ({1: "a", None: "b", (1, 2): "c"}, {"1": "a", "None": "b", "(1, 2)": "c"}),
        (Point(1, dt.date(2026, 1, 1)), {"x": 1, "when": "2026-01-01"}),
        (Model(name="m", tags={"y", "x"}), {"name": "m", "tags": ["x", "y"]}),
        ("a\ud800b\udfff", "a\ufffdb\ufffd"),
        ({"k\udc80": ["\ud83d"]}, {"k\ufffd": ["\ufffd"]}),
        (pathlib.PurePosixPath("/a/\udcff"), "/a/\ufffd"),
    ],
)
def test_encoding_rule(value: Any, expected: Any) -> None:
    """Each documented kind of value encodes to its documented JSON form."""
    assert to_jsonable(value) == expected
    assert loads(dumps(value)) == expected


def test_nan_and_infinity_never_make_invalid_json() -> None:
    """dumps output with non-finite floats parses as strict JSON."""
    text = dumps({"a": [float("nan"), float("inf"), -float("inf")]})
    parsed = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    assert parsed == {"a": ["NaN", "Infinity", "-Infinity"]}


def test_langchain_message_round_trips() -> None:
    """A LangChain message encodes to message_to_dict form and turns back into an equal one."""
    message = AIMessage(
        content="hi",
        id="m1",
        tool_calls=[{"name": "add", "args": {"a": 1}, "id": "c1", "type": "tool_call"}],
    )
    encoded = to_jsonable({"m": message})["m"]
    assert encoded["type"] == "ai"
    assert content_to_message(loads(dumps(encoded))) == message
    tool = ToolMessage(content="3", tool_call_id="c1", status="error")
    assert content_to_message(to_jsonable(tool)) == tool


def test_langchain_document_encodes_its_fields() -> None:
    """A LangChain Document encodes to its page_content and metadata."""
    encoded = to_jsonable(Document(page_content="text", metadata={"source": pathlib.Path("x")}))
    assert encoded["page_content"] == "text"
    assert encoded["metadata"] == {"source": "x"}


def test_cycles_become_marked() -> None:
    """A self-containing list or dict encodes with a $cycle marker instead of failing."""
    loop: list[Any] = [1]
    loop.append(loop)
    assert to_jsonable(loop) == [1, {"$cycle": "builtins.list"}]
    node: dict[str, Any] = {"name": "n"}
    node["self"] = node
    assert to_jsonable(node) == {"name": "n", "self": {"$cycle": "builtins.dict"}}


def test_shared_but_acyclic_values_are_not_cycles() -> None:
    """The same object twice in a structure (no cycle) encodes fully both times."""
    shared = {"k": 1}
    assert to_jsonable([shared, shared]) == [{"k": 1}, {"k": 1}]


def test_deep_nesting_is_cut_with_a_marker() -> None:
    """Nesting deeper than MAX_DEPTH ends in a $depth marker, never a RecursionError."""
    value: Any = "leaf"
    for _ in range(MAX_DEPTH + 50):
        value = [value]
    encoded = to_jsonable(value)
    depth = 0
    while isinstance(encoded, list):
        encoded, depth = encoded[0], depth + 1
    assert encoded == {"$depth": "builtins.list"}
    assert depth == MAX_DEPTH


def test_unencodable_objects_become_a_marked_repr() -> None:
    """Objects without a rule become {$repr, $type}; the repr is cut at 200 characters."""
    encoded = to_jsonable(Opaque())
    assert encoded["$type"].endswith("Opaque")
    assert encoded["$repr"].startswith("<opaque zzz")
    assert len(encoded["$repr"]) == 200
    assert to_jsonable(BrokenRepr())["$repr"] == "<unrepresentable>"


def test_dumps_is_canonical() -> None:
    """Equal values give equal text: sorted keys, no whitespace, non-ASCII kept."""
    assert dumps({"b": 1, "a": {"d": 2, "c": "é"}}) == '{"a":{"c":"é","d":2},"b":1}'
    assert dumps({"a": 1, "b": 2}) == dumps({"b": 2, "a": 1})


json_values = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text() | st.binary(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(json_values)
def test_any_value_encodes_to_valid_stable_json(value: Any) -> None:
    """Arbitrary nested values encode to strict JSON that re-encodes to the same text."""
    text = dumps(value)
    parsed = json.loads(text, parse_constant=lambda c: pytest.fail(f"constant {c}"))
    assert dumps(parsed) == text


_raw_json = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.integers(-(2**80), 2**80)
    | st.text(st.sampled_from("a é😀\ud800\udc00\"\\\n")) | st.floats(1e-310, 1e-300),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(_raw_json, st.booleans(), st.booleans())
def test_loads_reads_any_json_text_as_the_json_module_does(
    value: Any, ascii_only: bool, as_bytes: bool
) -> None:
    """loads (orjson when it agrees) gives exactly the json module's value for any JSON text,
    big ints, subnormal floats, NaN, lone surrogates and duplicate keys included."""
    text = json.dumps(value, ensure_ascii=ascii_only)
    for variant in (text, dumps(value), '{"k": 1, "k": ' + text + "}"):
        try:
            data: str | bytes = variant.encode("utf-8") if as_bytes else variant
        except UnicodeEncodeError:  # a lone surrogate written raw: str only
            data = variant
        assert repr(loads(data)) == repr(json.loads(data))


def test_ints_too_long_for_decimal_text_become_hex() -> None:
    """An int beyond the interpreter's digit limit becomes {$int: hex}; others stay ints."""
    big = 10**5000
    assert to_jsonable(big) == {"$int": hex(big)}
    assert to_jsonable({"n": -big}) == {"n": {"$int": hex(-big)}}
    assert to_jsonable([10**600]) == [10**600]
    assert loads(dumps([big])) == [{"$int": hex(big)}]


@settings(max_examples=100, deadline=None)
@given(st.recursive(st.text(st.sampled_from("a é😀\ud800\udbff\udc00\udfff")), st.lists))
def test_strings_always_encode_as_utf8(value: Any) -> None:
    """Strings with lone surrogates encode to JSON text that is valid UTF-8."""
    dumps(value).encode("utf-8")
    assert to_jsonable(value) == loads(dumps(value))


# -- content caps ---------------------------------------------------------------------------


def _size(value: Any) -> int:
    return len(dumps(value).encode("utf-8"))


def test_content_under_the_cap_is_untouched() -> None:
    """Content whose encoding fits the cap is returned as is, with no original size."""
    content = {"a": "x" * 100}
    assert fit_content(content, 1000) == (content, None)


@settings(max_examples=150, deadline=None)
@given(
    content=st.recursive(
        st.text(alphabet=st.characters(codec="utf-8"), max_size=300) | st.integers(),
        lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=4), c, max_size=4),
        max_leaves=12,
    ),
    cap=st.integers(64, 600),
)
def test_truncated_content_fits_and_stays_valid_utf8_json(content: Any, cap: int) -> None:
    """Any truncation fits the cap in UTF-8 bytes and is valid JSON with valid UTF-8 text."""
    fitted, original = fit_content(content, cap)
    text = dumps(fitted)
    assert len(text.encode("utf-8")) <= cap
    assert loads(text.encode("utf-8").decode("utf-8")) == fitted
    if original is None:
        assert fitted == content
    else:
        assert original == _size(content) > cap


def test_truncation_keeps_structure_and_cuts_on_character_boundaries() -> None:
    """Strings are cut to a common length (multi-byte characters intact, … appended)."""
    content = {"type": "human", "data": {"content": "😀" * 5000, "id": "m1"}}
    fitted, original = fit_content(content, 2000)
    assert original == _size(content)
    assert fitted["type"] == "human"
    assert fitted["data"]["id"] == "m1"
    text = fitted["data"]["content"]
    assert text.endswith("…")
    assert set(text[:-1]) == {"😀"}
    assert _size(fitted) <= 2000


def test_truncated_message_still_turns_back_into_a_message() -> None:
    """A message whose content was cut still converts back into a message."""
    message = HumanMessage(content="word " * 10_000, id="h1")
    fitted, _ = fit_content(to_jsonable(message), 4096)
    restored = content_to_message(fitted)
    assert isinstance(restored, HumanMessage)
    assert restored.id == "h1"
    assert str(restored.content).startswith("word word")


def test_structure_too_big_for_the_cap_becomes_a_truncated_prefix() -> None:
    """When even empty strings do not fit, content becomes {$truncated: <JSON prefix>}."""
    content = list(range(5000))
    fitted, original = fit_content(content, 100)
    assert original == _size(content)
    assert set(fitted) == {"$truncated"}
    assert dumps(content).startswith(fitted["$truncated"])
    assert _size(fitted) <= 100


def test_utf8_prefix_never_splits_a_character() -> None:
    """utf8_prefix returns the longest whole-character prefix within the byte budget."""
    assert utf8_prefix("aé€😀", 1) == "a"
    assert utf8_prefix("aé€😀", 2) == "a"
    assert utf8_prefix("aé€😀", 3) == "aé"
    assert utf8_prefix("aé€😀", 6) == "aé€"
    assert utf8_prefix("aé€😀", 100) == "aé€😀"


def test_default_caps() -> None:
    """Trace content is capped at 16 KiB by default, every other category at 1 MiB."""
    assert DEFAULT_CONTENT_CAPS["trace"] == 16 * 1024
    for category in ("lifecycle", "message", "middleware"):
        assert DEFAULT_CONTENT_CAPS[category] == 1024 * 1024


def test_store_marks_truncated_events_and_keeps_others_unmarked() -> None:
    """A store marks only oversize events with truncated=true and original_bytes."""
    with MemoryEventStore() as store:
        small, big = store.append(
            [
                {
                    "thread_id": "t",
                    "run_id": "r",
                    "category": "trace",
                    "event_type": "llm.start",
                    "content": "x" * 100,
                },
                {
                    "thread_id": "t",
                    "run_id": "r",
                    "category": "trace",
                    "event_type": "llm.start",
                    "content": "y" * 20_000,
                },
            ]
        )
    assert "truncated" not in small.metadata
    assert big.metadata["truncated"] is True
    assert big.metadata["original_bytes"] == 20_002
    assert _size(big.content) <= 16 * 1024


@pytest.mark.parametrize("caps", [{"trace": 10}, {"nope": 100}, {"trace": "big"}])
def test_bad_content_caps_are_value_errors(caps: dict[str, Any]) -> None:
    """An unknown category or a cap below 64 bytes raises ValueError naming content_caps."""
    with pytest.raises(ValueError, match="content_caps"):
        MemoryEventStore(content_caps=caps)


_tricky = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=4)
    | st.sampled_from(["\ud800", "é", 2**7000, float("nan"), -0.0, 1e-07]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=2) | st.sampled_from(["\udfff"]), inner, max_size=3)
        | st.tuples(inner)
        | st.sets(st.integers(), max_size=2)
    ),
    max_leaves=10,
)


@settings(max_examples=500, deadline=None)
@given(_tricky)
def test_fast_path_encodes_exactly_as_the_rules(value: Any) -> None:
    """Plain data skips the walk, and the result is exactly what the full rules give."""
    from journal.encoding import _canonical, _encode

    slow = _encode(value, 0, set())
    fast = to_jsonable(value)
    assert _canonical(fast) == _canonical(slow)
    assert fast == slow  # encoded data holds no NaN, so equality is exact


_json_like = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=15,
)


@settings(max_examples=1000, deadline=None)
@given(_json_like)
def test_fast_encoder_writes_exactly_the_rules_bytes(value: Any) -> None:
    """Whatever encoder writes plain data, the text is the json module's canonical text."""
    from journal.encoding import NOT_PLAIN, _canonical, encode_plain, plain_kind

    kind = plain_kind(value)
    if kind == NOT_PLAIN:  # lone surrogates: the rules replace them first
        value = to_jsonable(value)
        kind = plain_kind(value)
    assert encode_plain(value, kind) == _canonical(value)
    assert dumps(value) == _canonical(to_jsonable(value))


@pytest.mark.parametrize(
    "text", ["\x00\x01\x1f\x7f", '\b\f\n\r\t"\\/', "\u2028\u2029", "é€😀", "</script>"]
)
def test_fast_encoder_escapes_like_the_json_module(text: str) -> None:
    """Control characters, quotes and non-ASCII text encode byte for byte like the rules."""
    from journal.encoding import PLAIN, _canonical, encode_plain

    value = {text: [text, {"k": text}]}
    assert encode_plain(value, PLAIN) == _canonical(value)


@settings(max_examples=3000, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_orjson_writes_the_floats_it_is_trusted_with_as_the_rules_do(value: float) -> None:
    """A float ``same_float_text`` trusts to orjson is written byte for byte as the rules
    write it, alone and inside data (where it keeps the data PLAIN)."""
    import orjson

    from journal.encoding import PLAIN, PLAIN_NUMBERS, _canonical, plain_kind, same_float_text

    data = {"latency_ms": value, "usage": [1, value]}
    if same_float_text(value):
        assert orjson.dumps(value).decode() == _canonical(value)
        assert plain_kind(data) == PLAIN
        assert orjson.dumps(data, option=orjson.OPT_SORT_KEYS).decode() == _canonical(data)
    else:
        assert plain_kind(data) == PLAIN_NUMBERS


@pytest.mark.parametrize(
    ("value", "trusted"),
    [(0.0, True), (-0.0, True), (1e-4, True), (-2.5e-4, True), (123.456, True), (1e16, True),
     (9.2e18, True), (2.0**63, False), (-9.223372036854776e18, False),
     (1.7976931348623157e308, False), (9.999999999999999e-05, False), (1e-05, False),
     (-1e-07, False), (5e-324, False)],
)  # fmt: skip
def test_small_floats_stay_with_the_json_module(value: float, trusted: bool) -> None:
    """Floats below 1e-4 (zero aside), which orjson writes its own way (``1e-7``), and from
    2**63 up (what orjson reads for an int beyond 64 bits) are encoded by the json module;
    the stored text is the rules' either way."""
    from journal.encoding import _canonical, dumps, same_float_text

    assert same_float_text(value) is trusted
    assert dumps({"x": value}) == _canonical({"x": value}) == '{"x":' + repr(value) + "}"
