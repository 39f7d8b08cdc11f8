"""Run one benchmark script for two versions of the code, alternately, and compare its tables.

The "before" side is a git revision exported to a temporary directory, the "after" side this
tree; each run is a fresh process of the same Python, and the two sides alternate (``--pairs``
times, the order flipped every pair) so that load from other processes hits both alike. Every
numeric cell of the script's Markdown tables is reported as ``before → after`` (medians over
the pairs) with the ratio after / before.

Usage: ``python scripts/bench_sides.py REV scripts/bench_peer.py [--pairs 3] -- [script args]``
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_NUMBER = re.compile(r"^\s*([0-9][0-9,]*(?:\.[0-9]+)?)(\s*ms)?\s*$")


def tables(output: str) -> list[list[str]]:
    """The rows of every Markdown table in ``output``, cells stripped (separators dropped)."""
    rows = []
    for line in output.splitlines():
        if line.startswith("|") and not set(line) <= set("|-: "):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def run(tree: Path, script: str, args: list[str]) -> list[list[str]]:
    """The table rows printed by ``script`` of ``tree``."""
    done = subprocess.run(
        [sys.executable, str(tree / script), *args],
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    )
    return tables(done.stdout)


def main() -> None:
    """Export the revision, alternate the sides, print the merged table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev")
    parser.add_argument("script")
    parser.add_argument("--pairs", type=int, default=3)
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    options, script_args = parser.parse_args(argv[:split]), argv[split + 1 :]
    with tempfile.TemporaryDirectory() as tmp:
        before = Path(tmp)
        archive = subprocess.run(
            ["git", "archive", options.rev], cwd=ROOT, capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", str(before)], input=archive.stdout, check=True)
        runs: dict[str, list[list[list[str]]]] = {"before": [], "after": []}
        for pair in range(options.pairs):
            sides = [("before", before), ("after", ROOT)]
            for name, tree in sides if pair % 2 == 0 else sides[::-1]:
                runs[name].append(run(tree, options.script, script_args))
    print(f"{options.script} {' '.join(script_args)}: before = {options.rev}, after = this tree, "
          f"medians of {options.pairs} alternating runs each\n")  # fmt: skip
    template = runs["after"][0]
    for r, row in enumerate(template):
        cells = []
        for c, cell in enumerate(row):
            values = {side: [t[r][c] for t in tables_ if r < len(t) and c < len(t[r])]
                      for side, tables_ in runs.items()}  # fmt: skip
            parsed = {s: [_NUMBER.match(v) for v in vs] for s, vs in values.items()}
            same = len({v for vs in values.values() for v in vs}) == 1  # a label, e.g. a size
            one_sided = not all(values.values())  # a column only one version prints
            if r == 0 or same or one_sided or not all(m for ms in parsed.values() for m in ms):
                cells.append(cell)
                continue
            med = {s: statistics.median(float(m.group(1).replace(",", "")) for m in ms if m)
                   for s, ms in parsed.items()}  # fmt: skip
            ratio = med["after"] / med["before"] if med["before"] else float("nan")
            shown = {k: f"{v:,.0f}" if v >= 100 else f"{v:.3g}" for k, v in med.items()}
            cells.append(f"{shown['before']} → {shown['after']} ({ratio:.2f})")
        print("| " + " | ".join(cells) + " |")
        if r == 0:
            print("|" + "---|" * len(row))


if __name__ == "__main__":
    main()
