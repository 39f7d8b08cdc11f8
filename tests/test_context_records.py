"""The llm.start context record is exact whatever a conversation does between calls."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from journal.digests import ContextIndex, expand_record, message_digest

# one operation on a growing conversation, before the next model call
OPS = st.lists(
    st.tuples(
        st.sampled_from(["grow", "journal", "edit", "copy", "drop", "call_other"]),
        st.integers(min_value=0, max_value=50),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(OPS)
def test_every_record_expands_to_the_exact_prompt(ops: list[tuple[str, int]]) -> None:
    """Whether messages grow, are journaled, edited in place (content replaced), copied,
    dropped, or another caller calls in between, each record expands to the ids and digests
    of exactly the messages that call received."""
    index = ContextIndex()
    state: list[BaseMessage] = [HumanMessage("start", id="h0")]
    expanded: dict[str, list[Any]] = {}
    for n, (op, arg) in enumerate(ops):
        if op == "grow":
            kind = AIMessage if n % 2 else HumanMessage
            state.append(kind(f"message {n}", id=f"m{n}"))
        elif op == "journal" and state:
            index.message_event("t", state[arg % len(state)], replacement=True)
        elif op == "edit" and state:
            state[arg % len(state)].content = f"edited {n}"  # in place, a new content object
        elif op == "copy" and state:
            i = arg % len(state)
            state[i] = state[i].model_copy(deep=True)
        elif op == "drop" and len(state) > 1:
            del state[arg % len(state)]
        caller = "middleware:Other" if op == "call_other" else "agent"
        prompt = list(state)
        run_id = f"call{n}"
        record = index.call_record("t", caller, run_id, prompt)
        entries = expand_record(record, expanded)
        assert entries == [(m.id, message_digest(m)) for m in prompt]
        expanded[run_id] = entries
