"""Capped grep, builds against each other (issue 34's figures in bench/README.md): one bridge per
build on one tree, each warmed by two greps, then ROUNDS rounds of `rg` to its 500th line followed
by one grep of every build in a random order. Prints, per build, the median tool time
(`durationMs`) and its ratio to ripgrep's median, the median of the per-round ratios (a load
change during the run moves it less), and the bridge's CPU per grep (/proc/PID/stat: the whole
turn, not only the tool).

    bench/.venv/bin/python bench/search_ab.py [--rounds 61] [--tree node_modules|generated] BIN [BIN ...]

The trees are `search`'s own (six hard-linked copies of this repository's node_modules; the
generated 40 000-file tree), made in a temporary folder. Needs ripgrep.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "sections"))

from common import Context, median  # noqa: E402
import search  # noqa: E402


def cpu_ms(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=61)
    parser.add_argument("--tree", choices=["node_modules", "generated"], default="node_modules")
    parser.add_argument("bins", nargs="+", type=lambda p: Path(p).resolve())
    args = parser.parse_args()
    rg = "/usr/bin/rg"
    with tempfile.TemporaryDirectory(prefix="search-ab-") as tmp_name:
        tmp = Path(tmp_name)
        tree = tmp / "tree"
        tree.mkdir()
        if args.tree == "node_modules":
            if search.node_modules_tree(tree, 6) is None:
                sys.exit("no node_modules to link")
        else:
            search.search_tree(tree, 40_000)
        bridges = []
        for b in args.bins:
            ctx = Context(bin=b, bundle=b, node="node", quick=False, tmp=tmp)
            bridge = search.SearchBridge(ctx, tree, "grep", {"pattern": search.SEARCH_COMMON}, {})
            bridge.run()
            bridge.run()
            bridges.append(bridge)
        base, tool, cpu = [], [[] for _ in bridges], [[] for _ in bridges]
        for _ in range(args.rounds):
            base.append(search.rg_time([rg, *search.RG_RULES, "-n", search.SEARCH_COMMON], tree, 500) * 1000)
            order = list(range(len(bridges)))
            random.shuffle(order)
            for i in order:
                before = cpu_ms(bridges[i].proc.pid)
                bridges[i].run()
                cpu[i].append(cpu_ms(bridges[i].proc.pid) - before)
                tool[i].append(bridges[i].tool_ms)
        for bridge in bridges:
            bridge.close()
    b = median(base)
    print(f"{args.tree}: rg to its 500th line {b:.1f} ms (load {os.getloadavg()[0]:.1f}, {args.rounds} rounds)")
    for i, path in enumerate(args.bins):
        per_round = median([t / r for t, r in zip(tool[i], base)])
        print(f"  {path}: tool {median(tool[i]):.1f} ms = {median(tool[i]) / b:.2f}x (per-round {per_round:.2f}x); "
              f"bridge CPU per grep {sum(cpu[i]) / args.rounds:.1f} ms")


if __name__ == "__main__":
    main()
