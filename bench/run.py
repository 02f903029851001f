#!/usr/bin/env python3
"""harness-bridge benchmarks. Every figure is a ratio against a baseline measured in the same
run, side by side (runs interleaved, medians), so a noisy or shared machine moves both sides.

    bash bench/run.sh                 # everything; prints the table, writes bench/results.md
    bash bench/run.sh --quick         # tiny counts, a few seconds (the CI smoke runs this)
    bash bench/run.sh --only cold,size

bench/run.sh builds what is missing (scripts/setup.sh) and runs this file with bench/.venv,
a bench-only venv holding the SDK and the `mcp` client (the MCP peer of the round trip), kept
apart from the test venv (which has `mcp` too, for the MCP tests' servers) so the figures do not
move with the test tools. Without `mcp` importable, the MCP rows are skipped, not failed.

This file only runs the sections (bench/sections/, one module each) and hands their results to
bench/report.py; what they share is in bench/common.py.
"""

from __future__ import annotations

import argparse
import inspect
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import List, Optional, Sequence

from common import BENCH, DEFAULT_BIN, DEFAULT_BUNDLE, Context, Result, pinned_node
from report import print_goals, print_section, write_results
from sections import SECTIONS


def sections_help() -> str:
    """The sections and what each measures, from their docstrings."""
    out = ["Sections (names for --only):"]
    for name, module in SECTIONS.items():
        about = " ".join((inspect.getdoc(module) or "").split())
        out.append(textwrap.fill(about, width=100, initial_indent=f"  {name:<14}", subsequent_indent=" " * 16))
    return "\n".join(out)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, epilog=sections_help(), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny counts: checks that every benchmark runs (seconds), measures nothing")
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated sections (default: all): {', '.join(SECTIONS)}")
    parser.add_argument("--bin", type=Path, help="the executable to measure (default: bin/harness-bridge), e.g. an older build for before/after")
    parser.add_argument("--bundle", type=Path, help="the plain bundle to measure (default: build/harness-bridge.cjs)")
    parser.add_argument("--out", type=Path, help="where to write the markdown results (default: bench/results.md; none with --quick)")
    args = parser.parse_args(argv)
    bin_path = args.bin.resolve() if args.bin else DEFAULT_BIN
    bundle = args.bundle.resolve() if args.bundle else DEFAULT_BUNDLE
    wanted = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in wanted if s not in SECTIONS]
    if unknown:
        parser.error(f"unknown section(s) {unknown}; known: {', '.join(SECTIONS)}")
    for needed in (bin_path, bundle):
        if not needed.exists():
            parser.error(f"{needed} is missing: run `bash scripts/setup.sh` (bench/run.sh does)")
    out = args.out if args.out is not None else (None if args.quick else BENCH / "results.md")

    results: List[Result] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="hb-bench-") as tmp:
        ctx = Context(quick=args.quick, tmp=Path(tmp), bin=bin_path, bundle=bundle, node=pinned_node())
        for name in wanted:
            t0 = time.perf_counter()
            result: Result = SECTIONS[name].run(ctx)
            results.append(result)
            print_section(result, time.perf_counter() - t0)

    print_goals([g for r in results for g in r.goals], args.quick, time.perf_counter() - started)
    if out is not None:
        write_results(out, ctx, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
