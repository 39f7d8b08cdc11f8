"""The demo agent's tools: small, useful, deterministic and offline.

* ``calculate(expression)`` evaluates arithmetic (``+ - * / // % **``, parentheses, numbers)
  without ``eval``: anything else is refused with a message the model can read.
* ``city_facts(city)`` looks a city up in a small built-in table (population, country,
  railway station) and answers in JSON.
"""

from __future__ import annotations

import ast
import json
import operator
from collections.abc import Callable
from typing import Final

from langchain_core.tools import BaseTool, tool

__all__ = ["CITY_FACTS", "DEMO_TOOLS", "calculate", "city_facts", "evaluate_arithmetic"]

#: Facts the ``city_facts`` tool knows (populations of the municipality, rounded).
CITY_FACTS: Final[dict[str, dict[str, str | int]]] = {
    "lisbon": {"city": "Lisbon", "country": "Portugal", "population": 545000, "station": "Oriente"},
    "porto": {"city": "Porto", "country": "Portugal", "population": 232000, "station": "Campanhã"},
    "coimbra": {
        "city": "Coimbra",
        "country": "Portugal",
        "population": 140000,
        "station": "Coimbra-B",
    },
    "madrid": {"city": "Madrid", "country": "Spain", "population": 3300000, "station": "Atocha"},
}

_BINARY: Final[dict[type[ast.operator], Callable[[float, float], float]]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_MAX_EXPONENT: Final = 100
_MAX_LENGTH: Final = 200
_MAX_BITS: Final = 1000  # results (and so every operand) stay small: nested powers stay fast


def evaluate_arithmetic(expression: str) -> float | int:
    """The value of an arithmetic expression; ``ValueError`` for anything that is not one."""
    if len(expression) > _MAX_LENGTH:
        raise ValueError(f"expression is longer than {_MAX_LENGTH} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as e:
        raise ValueError(f"not an arithmetic expression: {e.msg}") from None
    return _evaluate(tree.body)


def _evaluate(node: ast.expr) -> float | int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        if isinstance(node.value, bool):
            raise ValueError("booleans are not numbers here")
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = _evaluate(node.operand)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > _MAX_EXPONENT:
            raise ValueError(f"exponents above {_MAX_EXPONENT} are not allowed")
        try:
            result = _BINARY[type(node.op)](left, right)
        except ZeroDivisionError:
            raise ValueError("division by zero") from None
        except OverflowError:
            raise ValueError("the result is too large") from None
        if isinstance(result, int) and result.bit_length() > _MAX_BITS:
            raise ValueError("the result is too large")
        return result
    raise ValueError("only numbers, + - * / // % ** and parentheses are allowed")


@tool
def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression such as "31 * 3 * 2" and return the result."""
    try:
        value = evaluate_arithmetic(expression)
    except ValueError as e:
        return f"error: {e}"
    if isinstance(value, float):
        value = round(value, 4)
        if value.is_integer():
            value = int(value)
    return str(value)


@tool
def city_facts(city: str) -> str:
    """Look up a city's country, population and main railway station (JSON)."""
    facts = CITY_FACTS.get(city.strip().lower())
    if facts is None:
        known = ", ".join(str(f["city"]) for f in CITY_FACTS.values())
        return f"error: no facts about {city!r}; known cities: {known}"
    return json.dumps(facts, ensure_ascii=False, sort_keys=True)


#: The tools the demo agent gets.
DEMO_TOOLS: Final[list[BaseTool]] = [calculate, city_facts]
