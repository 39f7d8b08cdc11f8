"""The offline demo: its agent, models and tools, and the thread it journals."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain.agents.middleware.summarization import DEFAULT_SUMMARY_PROMPT
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.utils import get_buffer_string

from history import build_timeline, replay
from history.cli.demo import DEMO_TURNS, DemoResult, run_demo
from history.cli.demo_models import SUMMARY_PREFIX, ExtractiveSummaryModel, ScriptedAgentModel
from history.cli.demo_tools import calculate, city_facts, evaluate_arithmetic
from journal import SqliteEventStore
from tests.cli_helpers import invoke_cli
from tests.flaky_stores import FlakyStore

THREAD = "demo-test"


@pytest.fixture(scope="module")
def demo(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[SqliteEventStore, DemoResult]]:
    """The demo run once into a SQLite store (module-wide; tests only read it)."""
    store = SqliteEventStore(tmp_path_factory.mktemp("demo") / "demo.db")
    result = run_demo(store, thread_id=THREAD)
    yield store, result
    store.close()


def test_demo_thread_has_runs_and_markers_that_condensed_something(
    demo: tuple[SqliteEventStore, DemoResult],
) -> None:
    """The demo journals >= 3 runs and >= 2 markers, each with replaced_count > 0."""
    store, result = demo
    runs = store.list_runs(THREAD)
    assert len(runs) == len(DEMO_TURNS) >= 3
    assert [r.run_id for r in runs] == result.run_ids
    assert all(r.status == "success" for r in runs)
    markers = store.read(THREAD, event_type="middleware:summarize")
    assert len(markers) >= 2
    assert all(m.content["replaced_count"] > 0 for m in markers)
    page = build_timeline(store, THREAD, limit=1000)
    shown = [i for i in page["items"] if i["type"] == "summary_marker"]
    assert [i["seq"] for i in shown] == [m.seq for m in markers]


def _comparable(messages: list[BaseMessage]) -> list[tuple[str, str, object]]:
    return [(m.type, m.text, getattr(m, "tool_calls", None)) for m in messages]


def _conversation(store: SqliteEventStore, thread_id: str) -> list[tuple[str, object]]:
    """The thread's message and marker events as (event_type, text), for comparisons."""
    return [
        (e.event_type, e.content.get("summary") or e.content["data"]["content"])
        for e in store.read(thread_id, category=["message", "middleware"])
    ]


def _final_answers(store: SqliteEventStore) -> list[str]:
    """The final answer of each run of the demo thread in ``store``."""
    answers: dict[str, str] = {}
    for event in store.read(THREAD, event_type="message.ai"):
        if event.content["data"]["content"]:
            answers[event.run_id] = event.content["data"]["content"]
    return list(answers.values())


def test_replay_is_exact_for_every_model_call(demo: tuple[SqliteEventStore, DemoResult]) -> None:
    """replay(upto_seq=<llm.start>, view="model") equals what each agent model call received."""
    store, result = demo
    starts = [
        e for e in store.read(THREAD, event_type="llm.start") if e.metadata.get("caller") == "agent"
    ]
    assert len(starts) == len(result.model_calls) > 0
    compacted = 0
    for start, sent in zip(starts, result.model_calls, strict=True):
        replayed = replay(store, THREAD, upto_seq=start.seq, view="model")
        assert _comparable(replayed) == _comparable(sent), start.seq
        assert [m.id for m in replayed] == [m.id for m in sent]
        state = replay(store, THREAD, upto_seq=start.seq, view="state")
        assert _comparable(state) == _comparable([m for m in sent if m.type != "system"])
        compacted += state[0].additional_kwargs.get("lc_source") == "summarization"
    assert compacted >= 2  # some of those calls really saw a compacted context


def test_demo_answers_come_from_the_tools_and_the_compacted_context(
    demo: tuple[SqliteEventStore, DemoResult],
) -> None:
    """Answers use the tool results; the last recap still knows facts the summary condensed."""
    _, result = demo
    assert result.answers[0].startswith("About 777,000 people")
    assert "186 euros" in result.answers[1]
    assert "209.4 miles" in result.answers[2]
    recap_prompt = result.model_calls[-1]
    assert any(m.text.startswith(SUMMARY_PREFIX) for m in recap_prompt)
    assert "777,000" in result.answers[3] and "186 euros" in result.answers[3]


def test_demo_is_deterministic_and_replaces_its_thread(tmp_path: Path) -> None:
    """Two demo runs into one store give the same conversation and summaries, not a double."""
    with SqliteEventStore(tmp_path / "twice.db") as store:
        first = run_demo(store, thread_id=THREAD)
        before = _conversation(store, THREAD)
        second = run_demo(store, thread_id=THREAD)
        assert _conversation(store, THREAD) == before
        assert first.answers == second.answers
        assert len(store.list_runs(THREAD)) == len(DEMO_TURNS)


def test_extractive_summary_is_built_from_the_prompt_messages() -> None:
    """The summarizer quotes the conversation it is given and carries earlier summary points."""
    earlier = HumanMessage(f"{SUMMARY_PREFIX}\n\n- The user asked: Where is Faro?")
    messages: list[BaseMessage] = [
        earlier,
        HumanMessage("My budget is 400 euros. Which city is cheaper?"),
        AIMessage("", tool_calls=[{"name": "prices", "args": {"q": "x"}, "id": "c1"}]),
        ToolMessage("Porto hostels cost 25 euros a night.", tool_call_id="c1"),
        AIMessage("Porto is cheaper. Hostels there start at 25 euros."),
    ]
    prompt = DEFAULT_SUMMARY_PROMPT.format(messages=get_buffer_string(messages, format="xml"))
    summary = ExtractiveSummaryModel().invoke(prompt).text
    assert summary.splitlines() == [
        "- The user asked: Where is Faro?",
        "- The user asked: My budget is 400 euros. Which city is cheaper?",
        "- A tool returned: Porto hostels cost 25 euros a night.",
        "- The assistant said: Porto is cheaper.",
    ]
    other = DEFAULT_SUMMARY_PROMPT.format(
        messages=get_buffer_string([HumanMessage("Something else entirely.")], format="xml")
    )
    assert (
        ExtractiveSummaryModel().invoke(other).text == "- The user asked: Something else entirely."
    )


def test_extractive_summary_keeps_the_newest_points() -> None:
    """Only the newest max_points lines are kept."""
    rendered = get_buffer_string([HumanMessage(f"Question {n}?") for n in range(10)], format="xml")
    summary = ExtractiveSummaryModel(max_points=3).summarize(rendered)
    assert summary.splitlines() == [f"- The user asked: Question {n}?" for n in (7, 8, 9)]


def test_scripted_agent_model_records_calls_and_fails_when_the_script_ends() -> None:
    """ScriptedAgentModel answers step by step, records each prompt, and raises when done."""
    model = ScriptedAgentModel([AIMessage("one"), lambda msgs: AIMessage(f"{len(msgs)} seen")])
    assert model.invoke("hi").text == "one"
    assert model.invoke([HumanMessage("a"), HumanMessage("b")]).text == "2 seen"
    assert [[m.text for m in call] for call in model.calls] == [["hi"], ["a", "b"]]
    assert model.remaining == 0
    with pytest.raises(RuntimeError, match="no step left"):
        model.invoke("again")


@pytest.mark.parametrize(
    ("expression", "expected"),
    [("545000 + 232000", "777000"), ("31 * 2 * 3", "186"), ("337 / 1.609344", "209.4021"),
     ("(2 + 3) ** 2 - 7 // 2", "22"), ("-4 % 3", "2")],
)  # fmt: skip
def test_calculate_evaluates_arithmetic(expression: str, expected: str) -> None:
    """calculate evaluates arithmetic exactly as Python would, rounded to 4 places."""
    assert calculate.invoke({"expression": expression}) == expected


@pytest.mark.parametrize(
    "expression",
    ["__import__('os')", "open('x')", "a + 1", "2 ** 1000", "1 / 0", "True + 1", "1 +",
     "((10 ** 100) ** 100) ** 3", "(10.0 ** 100) ** 100", "((((9 ** 99) ** 99) ** 99) ** 99)"],
)  # fmt: skip
def test_calculate_refuses_anything_but_arithmetic(expression: str) -> None:
    """Names, calls, huge powers or results, division by zero, bad syntax: refused, never run."""
    with pytest.raises(ValueError):
        evaluate_arithmetic(expression)
    assert calculate.invoke({"expression": expression}).startswith("error: ")


def test_city_facts_knows_its_table_and_says_what_it_knows() -> None:
    """city_facts answers JSON for a known city (any case) and lists the known ones otherwise."""
    assert '"population": 545000' in city_facts.invoke({"city": " lisbon "})
    unknown = city_facts.invoke({"city": "Atlantis"})
    assert unknown.startswith("error:") and "Lisbon" in unknown


def test_demo_on_a_down_store_spools_everything_and_recover_restores_it(
    demo: tuple[SqliteEventStore, DemoResult], tmp_path: Path
) -> None:
    """With the store down the demo still answers; `recover` then stores the same thread."""
    healthy, _ = demo
    spool = tmp_path / "spool.jsonl"
    result = run_demo(FlakyStore(down=True), thread_id=THREAD, spool_path=spool)
    assert result.answers == _final_answers(healthy)
    assert result.spooled == healthy.last_seq(THREAD) and spool.exists()
    url = f"sqlite:///{tmp_path / 'recovered.db'}"
    done = invoke_cli("recover", spool, "--store", url)
    assert done.returncode == 0, done.stderr
    with SqliteEventStore(tmp_path / "recovered.db") as recovered:
        assert _conversation(recovered, THREAD) == _conversation(healthy, THREAD)
        assert len(recovered.list_runs(THREAD)) == len(DEMO_TURNS)
