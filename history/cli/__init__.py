"""The CLI room: the ``runjournal`` commands, their terminal rendering and the offline demo.

This is a composition root: it reads the environment, configures logging (on stderr) and picks
the backend. It is also the one place that writes runs (``runjournal demo``). Modules: ``main``
(the command group, ``demo``, ``serve``), ``read`` and ``transfer`` (the reading and the moving
commands, each a thin wrapper of a library call), ``common`` (options, errors, consoles),
``render`` (rich views of timelines and messages), ``demo``, ``demo_models`` and ``demo_tools``
(the offline demo agent). The HTTP stack loads only for ``serve``; LangChain only for ``demo``
and ``replay``.
"""

from __future__ import annotations

from history.cli.main import cli, main

__all__ = ["cli", "main"]
