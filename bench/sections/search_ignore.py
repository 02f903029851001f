"""glob and a capped grep through the bridge's built-in engine (HARNESS_RG=off) on a tree of
~5 000 files whose .gitignore files are hostile: 10 000 rules at the root and 2 000 in five
folders (plain names, `*.ext`, `name*`, anchored paths, negations; or wildcard rules), and rules
made for regular-expression backtracking; against ripgrep on the same tree with the same rules.
Needs ripgrep: without it the section says so and measures nothing."""

from __future__ import annotations

import os
import random
import subprocess
import time
from pathlib import Path
from typing import List, Optional

from common import Context, Count, Result, median
from sections.search import RG_RULES, SearchBridge

COUNTS = {"files": Count(quick=500, full=5_000), "rules": Count(quick=1_000, full=10_000), "rounds": Count(quick=1, full=3)}
# ripgrep takes minutes on the wildcard rules (its glob set): it is stopped there, and the row says so.
RG_TIMEOUT_S = 60.0

NEEDLE = "function"


def plain_rules(rnd: random.Random, n: int, salt: str) -> List[str]:
    """`n` rules of the forms a generated .gitignore holds, a few matching the tree's files."""
    out: List[str] = []
    for i in range(n):
        k = rnd.randrange(8)
        word = f"{salt}{i}"
        out.append([f"name{word}", f"dir{word}/", f"*.e{word}", f"pre{word}*", f"/top{word}/file.js",
                    f"src/p{i % 10}/gen{word}.js", f"!keep{word}", f"!*.k{word}"][k])
        if i % 997 == 0:
            out += ["*.log", "!important.log", "f07.js", f"/src/p0{i % 7}/m03/", "!f13.js", "tmp*"]
    return out


def wild_rules(rnd: random.Random, n: int, salt: str) -> List[str]:
    """`n` rules that need a regular expression each: wildcards inside names, `**`, classes."""
    out: List[str] = []
    for i in range(n):
        k = rnd.randrange(6)
        word = f"{salt}{i}"
        out.append([f"*foo{word}*bar", f"**/q{word}/**/z", f"f?{word}.*", f"[a-c]{word}*.js", f"src/*/x{word}*", f"!*m{word}?.js"][k])
        if i % 997 == 0:
            out += ["**/m0[0-4]/*.log", "!**/important.*", "f0?.js", "src/**/f1[0-3].js"]
    return out


def backtracking_rules() -> List[str]:
    """Patterns whose regular expressions backtrack on long names and deep paths."""
    return ["*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", "a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b",
            "**/a/**/a/**/a/**/a/**/a/**/a/**/a/**/b", "a/**/a/**/a/**/a/**/a/**/a/**/a/**/b",
            "*?*?*?*?*?*?*?*?*?*?*?*?*?*?b"]


def hostile_tree(root: Path, files: int, rules: int, kind: str) -> None:
    """`files` .js files in src/pN/mMM/ (and .log files, long `aaa…` names, a deep a/a/a/… chain),
    a .gitignore of `rules` rules of `kind` at the root and of rules // 5 in five folders."""
    rnd = random.Random(7)
    make = plain_rules if kind == "plain" else wild_rules
    body = "".join(f"function helper{i}(value) {{\n  return value * {i};\n}}\n" for i in range(8))
    written = 0
    d = 0
    while written < files:
        folder = root / "src" / f"p{d // 25}" / f"m{d % 25:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        for k in range(min(40, files - written)):
            name = f"f{k:02d}.js" if k % 10 else ("a" * 120 + f"{k}.js" if k % 20 == 0 else f"x{k}.log")
            (folder / name).write_text(f"// {written}\n{body}")
            written += 1
        d += 1
    deep = root / "deep" / "/".join(["a"] * 40)
    deep.mkdir(parents=True)
    (deep / "c.js").write_text(body)
    (root / ".gitignore").write_text("\n".join(make(rnd, rules, "r") + backtracking_rules()) + "\n")
    for p in range(5):
        (root / "src" / f"p{p}").mkdir(parents=True, exist_ok=True)
        (root / "src" / f"p{p}" / ".gitignore").write_text("\n".join(make(rnd, rules // 5, f"n{p}_")) + "\n")


def rg_ms(cmd: List[str], cwd: Path, first_lines: Optional[int]) -> float:
    """ripgrep's wall time in ms to its end (or its first `first_lines` lines), at most RG_TIMEOUT_S."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=str(cwd), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout
    try:
        if first_lines is None:
            proc.communicate(timeout=RG_TIMEOUT_S)
        else:
            for _ in range(first_lines):
                if not proc.stdout.readline() or time.perf_counter() - start > RG_TIMEOUT_S:
                    break
    except subprocess.TimeoutExpired:
        pass
    proc.kill()
    proc.wait()
    return (time.perf_counter() - start) * 1000


def cpu_ms(pid: int) -> float:
    """utime + stime of `pid` in ms."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def run(ctx: Context) -> Result:
    tmp, files, rules, rounds = ctx.tmp, ctx.count(COUNTS["files"]), ctx.count(COUNTS["rules"]), ctx.count(COUNTS["rounds"])
    rg = next((p for p in ("/usr/bin/rg", "/usr/local/bin/rg", "/bin/rg") if Path(p).exists()), None)
    res = Result(f"Search with hostile .gitignore files: the built-in engine against ripgrep on {files:,} files "
                 f"(median of {rounds})",
                 ["workload", "ripgrep ms", "tool ms", "tool / ripgrep", "bridge CPU ms"])
    if rg is None:
        res.notes.append("ripgrep is not installed (apt-get install ripgrep): no baseline, section skipped.")
        return res
    for kind in ("plain", "wild"):
        tree = tmp / f"hostile-{kind}"
        tree.mkdir()
        hostile_tree(tree, files, rules, kind)
        workloads = [
            # Not `--files -g '*.js'`: a -g glob overrides .gitignore in ripgrep, which would skip the rules.
            ("glob **/*.js", "glob", {"pattern": "**/*.js"}, [rg, *RG_RULES, "--files"], None),
            (f"grep {NEEDLE}, capped at 500", "grep", {"pattern": NEEDLE}, [rg, *RG_RULES, "-n", NEEDLE], 500),
        ]
        for name, tool, arguments, rg_cmd, first in workloads:
            bridge = SearchBridge(ctx, tree, tool, arguments, {"HARNESS_RG": "off"})
            bridge.run()  # warm-up: loads the search modules, fills the page cache
            base: List[float] = []
            tool_ms: List[float] = []
            cpu: List[float] = []
            for _ in range(rounds):
                if not base or base[-1] < RG_TIMEOUT_S * 1000:
                    base.append(rg_ms(rg_cmd, tree, first))
                before = cpu_ms(bridge.proc.pid)
                bridge.run()
                cpu.append(cpu_ms(bridge.proc.pid) - before)
                tool_ms.append(bridge.tool_ms)
            bridge.close()
            b, o = median(base), median(tool_ms)
            stopped = base[-1] >= RG_TIMEOUT_S * 1000  # the median is then a lower bound
            label = f"{kind} rules ({rules:,} + 5 x {rules // 5:,}): {name}"
            res.row(label, f"> {b:.0f} (stopped)" if stopped else f"{b:.0f}", f"{o:.0f}", f"{'< ' if stopped else ''}{o / b:.2f}x" if o / b >= 0.1 else f"{'< ' if stopped else ''}{o / b:.4f}x", f"{median(cpu):.0f}")
            res.goal(f"search, hostile .gitignore: {label} within 3x of ripgrep", f"{o / b:.2f}x ({o:.0f} ms vs {b:.0f} ms)", o / b <= 3)
    res.notes.append(f"Tree: {files:,} files in src/pN/mMM/ (40 a folder; .js, .log, 120-character `aaa…` names) and a "
                     "40-level a/a/…/c.js; a root .gitignore of the rules plus five backtracking patterns "
                     "(`*a*a*…b`, `**/a/**/a/…/b`, `*?*?…b`), five nested ones. Plain rules: names, dir/, *.ext, name*, "
                     "anchored paths, negations; wild rules: wildcards inside names, ** gaps, classes. "
                     "tool ms: the tool's durationMs through the bridge with HARNESS_RG=off (the built-in engine); "
                     "bridge CPU: utime+stime of the bridge (/proc/PID/stat) over the call. "
                     f"ripgrep: `rg --no-config --no-require-git --hidden --files` (every file) / `-n function` to its 500th "
                     f"line, stopped after {RG_TIMEOUT_S:.0f} s and then run once.")
    return res


if __name__ == "__main__":
    import sys
    hostile_tree(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
