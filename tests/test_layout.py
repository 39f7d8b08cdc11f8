"""The house's rooms: pure readers, the HTTP server and the CLI import only what they may."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PURE_FORBIDDEN = {"fastapi", "starlette", "uvicorn", "click", "rich"}


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, at the top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def forbidden(module: str, prefixes: set[str]) -> bool:
    """Whether ``module`` is one of ``prefixes`` or inside one."""
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def test_pure_readers_never_import_the_server_or_the_cli() -> None:
    """No module directly under history/ imports FastAPI, click, rich, the server or the CLI.

    (The package root alone names ``create_app``, loaded lazily: the import-cost tests check.)
    """
    for path in sorted((ROOT / "history").glob("*.py")):
        rooms = {"history.server", "history.cli"} if path.name != "__init__.py" else set()
        bad = {m for m in imported_modules(path) if forbidden(m, PURE_FORBIDDEN | rooms)}
        assert not bad, f"{path.name} imports {sorted(bad)}"


def test_journal_and_middleware_never_import_history() -> None:
    """Layers point one way: journal and middleware know nothing of history."""
    for package in ("journal", "middleware"):
        for path in sorted((ROOT / package).rglob("*.py")):
            bad = {m for m in imported_modules(path) if forbidden(m, {"history"})}
            assert not bad, f"{package}/{path.name} imports {sorted(bad)}"


def test_the_server_never_imports_the_cli() -> None:
    """The HTTP room does not reach into the CLI room."""
    for path in sorted((ROOT / "history" / "server").glob("*.py")):
        bad = {m for m in imported_modules(path) if forbidden(m, {"history.cli", "click"})}
        assert not bad, f"server/{path.name} imports {sorted(bad)}"


def test_store_layer_never_imports_langchain_or_langgraph() -> None:
    """The store modules (contract, backends, URLs, copy, transfer) import no agent stack."""
    store_modules = [
        "store.py", "events.py", "encoding.py", "errors.py", "memory.py", "sqlite.py",
        "_sqlite_conn.py", "_sqlite_schema.py", "postgres.py", "_postgres_ops.py",
        "_postgres_schema.py", "urls.py", "copy.py", "transfer.py", "truncation.py",
        "spool.py", "_logging.py",
    ]  # fmt: skip
    for name in store_modules:
        bad = {
            m
            for m in imported_modules(ROOT / "journal" / name)
            if forbidden(m, {"langchain", "langchain_core", "langgraph", "journal.messages"})
        }
        assert not bad, f"journal/{name} imports {sorted(bad)}"
