"""The benchmarks' output: each section's table on the terminal as it finishes, then the goals;
and bench/results.md (the environment, the goals, every section's table)."""

from __future__ import annotations

import datetime
import importlib.metadata
import os
import platform
import subprocess
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from common import REPO, Context, Result, mcp_available

Goal = Tuple[str, str, Optional[bool]]

QUICK_VERDICT = "not judged (--quick)"


def verdict(met: Optional[bool], quick: bool) -> str:
    """A goal's verdict column. --quick's counts are too small for a figure to mean anything, so
    it judges nothing: a "NOT met" there would be noise a reader could take for a regression."""
    if quick:
        return QUICK_VERDICT
    return "n/a" if met is None else ("met" if met else "NOT met")


def section_text(res: Result) -> str:
    widths = [max(len(h), *(len(r[i]) for r in res.rows)) if res.rows else len(h) for i, h in enumerate(res.headers)]
    fmt = "  ".join(f"{{:{'<' if i == 0 else '>'}{w}}}" for i, w in enumerate(widths))
    out = [f"== {res.title}", fmt.format(*res.headers)] + [fmt.format(*r) for r in res.rows]
    out += [f"   note: {n}" for n in res.notes]
    return "\n".join(out)


def section_markdown(res: Result) -> str:
    out = [f"### {res.title}", "", "| " + " | ".join(res.headers) + " |", "|" + "---|" * len(res.headers)]
    out += ["| " + " | ".join(r) + " |" for r in res.rows]
    out += [""] + [f"- {n}" for n in res.notes]
    return "\n".join(out).rstrip() + "\n"


def print_section(res: Result, seconds: float) -> None:
    print(section_text(res), f"\n   ({seconds:.1f} s)\n", flush=True)


def print_goals(goals: Sequence[Goal], quick: bool, seconds: float) -> None:
    width = max(len(g[0]) for g in goals) if goals else 0
    print("== Goals")
    for goal, measured, met in goals:
        print(f"{goal:<{width}}  {measured:>28}  {verdict(met, quick)}")
    print(f"\n({seconds:.0f} s{', --quick: counts too small to mean anything' if quick else ''})")


def environment(ctx: Context) -> List[str]:
    def cmd(*args: str) -> str:
        try:
            return subprocess.run(list(args), capture_output=True, text=True, cwd=REPO).stdout.strip()
        except OSError:
            return "?"

    return [
        f"- date: {datetime.datetime.now().isoformat(timespec='seconds')}",
        f"- commit: {cmd('git', 'rev-parse', '--short', 'HEAD')}{' (uncommitted changes)' if cmd('git', 'status', '--porcelain', '--untracked-files=no') else ''}",
        f"- machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
        f"- node {cmd(ctx.node, '--version')}, python {platform.python_version()}"
        + (f", mcp {importlib.metadata.version('mcp')}" if mcp_available() else ", mcp not installed"),
        f"- NODE_EXTRA_CA_CERTS: {os.environ.get('NODE_EXTRA_CA_CERTS', '(not set)')}",
        f"- measured: {ctx.bin}, {ctx.bundle}",
    ]


def write_results(out: Path, ctx: Context, results: Sequence[Result]) -> None:
    """bench/results.md (or --out), replaced whole: a run that fails midway leaves the last one."""
    goals = [g for r in results for g in r.goals]
    doc = ["# harness-bridge benchmarks", "",
           "Written by `bash bench/run.sh` (bench/run.py). Every figure is a ratio against a baseline "
           "measured in the same run, runs interleaved; absolute times depend on the machine.", ""]
    doc += environment(ctx) + ["", "## Goals", "", "| goal | measured | verdict |", "|---|---|---|"]
    doc += [f"| {g} | {m} | {verdict(v, ctx.quick)} |" for g, m, v in goals]
    doc += ["", "## Details", ""] + [section_markdown(r) for r in results]
    tmp_out = out.with_name(out.name + ".tmp")
    tmp_out.write_text("\n".join(doc))
    tmp_out.replace(out)
    print(f"wrote {out.relative_to(REPO) if out.is_relative_to(REPO) else out}")
