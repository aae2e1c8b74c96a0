"""Sum a per-test CPU profile written by tests/cpu_profile.py: where README's command spends CPU.

    BENCHBOOK_CPU_PROFILE=/tmp/cpu python -m pytest -n 3 --cov -p tests.cpu_profile
    python bench/cpu_profile.py /tmp/cpu [--top 30]

Prints CPU seconds (own + children's) per directory, per module and for the costliest tests, with
each one's share of the total. On 2 cores, README's command cannot take less wall time than total
CPU / 2: this is the floor the figures are read against.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd


def load(folder: Path) -> pd.DataFrame:
    """All workers' rows: columns ``test, own, children, wall, cpu, module, directory``."""
    frames = [pd.read_csv(p, sep="\t", names=["test", "own", "children", "wall"]) for p in folder.glob("*.tsv")]
    rows = pd.concat(frames, ignore_index=True)
    rows["cpu"] = rows["own"] + rows["children"]
    rows["module"] = rows["test"].str.split("::").str[0]
    rows["directory"] = rows["module"].str.rsplit("/", n=1).str[0]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    rows = load(args.folder)
    total = rows["cpu"].sum()
    print(f"{len(rows)} tests, {total:.0f} CPU s ({rows['own'].sum():.0f} own, {rows['children'].sum():.0f} "
          f"in subprocesses), floor on 2 cores {total / 2:.0f} s")
    for key in ("directory", "module"):
        sums = rows.groupby(key)[["cpu", "own", "children", "wall"]].sum().sort_values("cpu", ascending=False)
        sums["share"] = (100 * sums["cpu"] / total).round(1)
        print(f"\nper {key}\n{sums.head(args.top).round(1).to_string()}")
    print(f"\ncostliest tests\n{rows.nlargest(args.top, 'cpu')[['test', 'cpu', 'own', 'children', 'wall']].round(2).to_string(index=False)}")


if __name__ == "__main__":
    main()
