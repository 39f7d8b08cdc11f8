"""``python -m history.cli``: the ``runjournal`` command line."""

from history.cli.main import main

main()
