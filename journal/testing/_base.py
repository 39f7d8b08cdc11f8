"""The base of the contract suite: the ``create_store`` hook and the ``store`` fixture."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from journal.store import RunEventStore


class ContractBase(ABC):
    """What every part of the contract needs: a fresh store of the backend under test."""

    tmp_path: Path

    @abstractmethod
    def create_store(self, **options: Any) -> RunEventStore:
        """Return a fresh, empty store of the backend under test built with ``options``."""

    @pytest.fixture(autouse=True)
    def _contract_tmp_path(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path

    @pytest.fixture
    def store(self) -> Iterator[RunEventStore]:
        """A fresh store, closed after the test."""
        store = self.create_store()
        try:
            yield store
        finally:
            store.close()
