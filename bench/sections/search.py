"""grep (a rare string; a common one capped at 500) and glob through the bridge on a generated
tree of 40 000+ files with a .gitignore, against ripgrep on the same tree; read_file of the first
2 000 lines of a 10 MiB file against `head -n 2000`; the bridge's RSS during the searches against
its idle RSS; cancel latency of a running grep; the built-in engine (HARNESS_RG=off) for
information. Needs ripgrep: without it the section says so and measures nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from common import REPO, Context, Count, Result, bridge_env, initialize_request, line, median, proc_status, prompt_request, write_script

COUNTS = {"files": Count(quick=2_000, full=40_000), "rounds": Count(quick=1, full=5), "node_modules_copies": Count(quick=1, full=6)}

SEARCH_RARE = "zqxRareNeedle42"
SEARCH_COMMON = "function"
SEARCH_GLOB = "**/*.js"
# The baseline applies the same rules as the tools: .gitignore without a git repository, dotfiles.
RG_RULES = ["--no-config", "--no-require-git", "--hidden"]


def search_tree(root: Path, files: int) -> None:
    """`files` searched .js files (plus ignored ones) in src/pNN/mMM/, a .gitignore (nested, with a negation)."""
    body = "".join(f"function helper{i}(value) {{\n  const result = value * {i} + Math.max(value, {i});\n  return result;\n}}\n" for i in range(12))
    (root / ".gitignore").write_text("node_modules/\n*.log\nbuild/\n")
    per_dir = 40
    written = 0
    d = 0
    while written < files:
        folder = root / "src" / f"p{d // 25:02d}" / f"m{d % 25:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        for k in range(min(per_dir, files - written)):
            rare = f"// {SEARCH_RARE}\n" if written in (files // 3, files // 2, files - 7) else ""
            (folder / f"f{k:02d}.js").write_text(f"// file {written}\n{rare}{body}")
            written += 1
        d += 1
    nested = root / "src" / "p00"
    (nested / ".gitignore").write_text("*.tmp\n!keep.tmp\n")
    (nested / "x.tmp").write_text(f"{SEARCH_RARE}\n")
    (nested / "keep.tmp").write_text("kept\n")
    for k in range(max(files // 8, 10)):  # ignored: must never be searched
        folder = root / "node_modules" / f"dep{k // 100}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"i{k}.js").write_text(f"{SEARCH_RARE} in an ignored dependency\n{body}")
    (root / "debug.log").write_text(f"{SEARCH_RARE}\n")


def node_modules_tree(root: Path, copies: int) -> Optional[int]:
    """`copies` copies of this repository's node_modules under `root` (c1, c2, …), hard-linked
    (no data is copied): a tree of real packages; its file count, or None when there is
    no node_modules or it cannot be linked from here (another file system)."""
    source = REPO / "node_modules"
    if not source.is_dir():
        return None
    try:
        for i in range(1, copies + 1):
            shutil.copytree(source, root / f"c{i}", symlinks=True, copy_function=os.link)
    except (OSError, shutil.Error):
        return None
    return sum(len(files) for _, _, files in os.walk(root))


class SearchBridge:
    """One bridge serving one session whose every turn is one tool call; RSS sampled while it runs."""

    def __init__(self, ctx: Context, tree: Path, tool: str, arguments: Dict[str, Any], env_extra: Dict[str, str]) -> None:
        tmp = ctx.tmp
        script = {"turns": [{"steps": [{"toolCalls": [{"name": tool, "arguments": arguments}]}, {"text": "done"}]}]}
        model = write_script(tmp, f"search-{tool}-{abs(hash(json.dumps(arguments))) % 10**8}.json", script)
        env = {**bridge_env(tmp), **env_extra}
        self.proc = subprocess.Popen([str(ctx.bin), "--stdio", "--no-session-log"], env=env, cwd=str(tree),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(initialize_request(str(tree), model))
        self.proc.stdin.flush()
        self.proc.stdout.readline()
        self.next_id = 2
        self.tool_ms = float("nan")
        time.sleep(0.3)  # the agent modules load right after the initialize response
        self.idle_kb = proc_status(self.proc.pid).get("VmRSS", 0)
        self.peak_kb = self.idle_kb

    def run(self, cancel_after: Optional[float] = None) -> Tuple[float, str, Optional[float]]:
        """One prompt: (seconds to the tool result, its text, cancel latency if cancelled); the
        tool's own time (the event's durationMs) is left in self.tool_ms."""
        assert self.proc.stdin and self.proc.stdout
        rid = self.next_id
        self.next_id += 2
        sampling = True

        def sample() -> None:
            while sampling:
                self.peak_kb = max(self.peak_kb, proc_status(self.proc.pid).get("VmRSS", 0))
                time.sleep(0.002)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        start = time.perf_counter()
        self.proc.stdin.write(prompt_request(rid, "search"))
        self.proc.stdin.flush()
        cancel_sent: Optional[float] = None
        cancel_latency: Optional[float] = None
        timer: Optional[threading.Timer] = None
        if cancel_after is not None:
            def send_cancel() -> None:
                nonlocal cancel_sent
                assert self.proc.stdin
                cancel_sent = time.perf_counter()
                self.proc.stdin.write(line({"jsonrpc": "2.0", "id": rid + 1, "method": "session/cancel", "params": {"sessionId": "search"}}))
                self.proc.stdin.flush()
            timer = threading.Timer(cancel_after, send_cancel)
            timer.start()
        elapsed = float("nan")
        text = ""
        done = {rid: False, rid + 1: cancel_after is None}
        while not all(done.values()):
            msg = json.loads(self.proc.stdout.readline())
            event = msg.get("params", {}).get("event", {}) if msg.get("method") == "session.event" else {}
            if event.get("type") == "tool/result":
                elapsed = time.perf_counter() - start
                data = event.get("data", event)
                text = "".join(b.get("text", "") for b in data.get("content", []))
                self.tool_ms = float(data.get("durationMs", "nan"))
            if msg.get("id") in done:
                done[msg["id"]] = True
                if msg["id"] == rid + 1 and cancel_sent is not None:
                    cancel_latency = time.perf_counter() - cancel_sent
        if timer:
            timer.join()
        sampling = False
        sampler.join()
        return elapsed, text, cancel_latency

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait()


def rg_time(cmd: List[str], cwd: Path, first_lines: Optional[int] = None) -> float:
    """ripgrep's wall time to its end (or to its first `first_lines` lines of output)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=str(cwd), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout
    if first_lines is None:
        proc.stdout.read()
    else:
        for _ in range(first_lines):
            if not proc.stdout.readline():
                break
        proc.kill()
    proc.wait()
    return time.perf_counter() - start


def run(ctx: Context) -> Result:
    tmp, files, rounds = ctx.tmp, ctx.count(COUNTS["files"]), ctx.count(COUNTS["rounds"])
    rg = next((p for p in ("/usr/bin/rg", "/usr/local/bin/rg", "/bin/rg") if os.access(p, os.X_OK)), None)
    res = Result(f"Search: grep and glob through the bridge against ripgrep on {files:,} files "
                 f"(median of {rounds})",
                 ["workload", "ripgrep ms", "tool ms", "tool / ripgrep", "prompt to result ms", "RSS growth"])
    if rg is None:
        res.notes.append("ripgrep is not installed (apt-get install ripgrep): no baseline, section skipped.")
        return res
    tree = tmp / "search-tree"
    tree.mkdir()
    t0 = time.perf_counter()
    search_tree(tree, files)
    res.notes.append(f"Tree: {files:,} searched .js files (~2 KiB) in 40-file folders, a .gitignore "
                     f"(node_modules/ of {max(files // 8, 10):,} files, *.log, a nested one with a negation); "
                     f"generated in {time.perf_counter() - t0:.1f} s.")
    workloads = [
        ("grep rare string", "grep", {"pattern": SEARCH_RARE}, [rg, *RG_RULES, "-n", SEARCH_RARE], None),
        ("grep common string, capped at 500", "grep", {"pattern": SEARCH_COMMON}, [rg, *RG_RULES, "-n", SEARCH_COMMON], 500),
        (f"glob {SEARCH_GLOB}", "glob", {"pattern": SEARCH_GLOB}, [rg, *RG_RULES, "--files", "-g", "*.js"], None),
    ]
    idle_peak: List[Tuple[int, int]] = []
    for name, tool, arguments, rg_cmd, first in workloads:
        bridge = SearchBridge(ctx, tree, tool, arguments, {})
        bridge.run()  # warm-up: loads the search modules, fills the page cache
        base_ms: List[float] = []
        tool_ms: List[float] = []
        wall_ms: List[float] = []
        text = ""
        for _ in range(rounds):
            base_ms.append(rg_time(rg_cmd, tree, first) * 1000)
            elapsed, text, _ = bridge.run()
            wall_ms.append(elapsed * 1000)
            tool_ms.append(bridge.tool_ms)
        bridge.close()
        idle_peak.append((bridge.idle_kb, bridge.peak_kb))
        b, o = median(base_ms), median(tool_ms)
        res.row(name, f"{b:.0f}", f"{o:.0f}", f"{o / b:.2f}x", f"{median(wall_ms):.0f}", f"+{(bridge.peak_kb - bridge.idle_kb) / 1024:.1f} MB")
        res.goal(f"search: {name} within 3x of ripgrep", f"{o / b:.2f}x ({o:.0f} ms vs {b:.0f} ms)", o / b <= 3)
        if tool == "grep" and first is None and text.count("\n") != 2:
            res.notes.append(f"unexpected output for {name}: {text[:200]!r}")
    # read_file of a 10 MiB file, its first 2 000 lines (the default), against `head -n 2000`:
    # the tool reads as far as the lines it returns, not the whole file.
    reads = tmp / "read-tree"
    reads.mkdir()
    hundred_bytes = b"x" * 99 + b"\n"
    (reads / "big.txt").write_bytes(hundred_bytes * ((10 * 1024 * 1024) // len(hundred_bytes)))
    bridge = SearchBridge(ctx, reads, "read_file", {"path": "big.txt"}, {})
    bridge.run()
    head_ms: List[float] = []
    read_ms: List[float] = []
    for _ in range(rounds):
        head_ms.append(rg_time(["head", "-n", "2000", "big.txt"], reads) * 1000)
        bridge.run()
        read_ms.append(bridge.tool_ms)
    bridge.close()
    b, o = median(head_ms), median(read_ms)
    res.row("read_file of a 10 MiB file, first 2 000 lines (baseline: head -n 2000)", f"{b:.1f}", f"{o:.1f}", f"{o / b:.2f}x", "", "")
    res.goal("read_file: first 2 000 lines of a 10 MiB file within 3x of head -n 2000", f"{o / b:.2f}x ({o:.1f} ms vs {b:.1f} ms)", o / b <= 3)
    # The capped grep on a tree of real packages: big minified files, long lines.
    packages = tmp / "node-modules-tree"
    packages.mkdir()
    copies = ctx.count(COUNTS["node_modules_copies"])
    count = node_modules_tree(packages, copies)
    if count is None:
        res.notes.append("No node_modules tree row: this repository's node_modules is missing or cannot be hard-linked into the run's folder.")
    else:
        bridge = SearchBridge(ctx, packages, "grep", {"pattern": SEARCH_COMMON}, {})
        bridge.run()
        base_ms, tool_ms = [], []
        for _ in range(rounds):
            base_ms.append(rg_time([rg, *RG_RULES, "-n", SEARCH_COMMON], packages, 500) * 1000)
            bridge.run()
            tool_ms.append(bridge.tool_ms)
        bridge.close()
        b, o = median(base_ms), median(tool_ms)
        name = f"grep common string, capped at 500, {copies} copies of node_modules ({count:,} files)"
        res.row(name, f"{b:.0f}", f"{o:.0f}", f"{o / b:.2f}x", "", "")
        res.goal(f"search: {name} within 3x of ripgrep", f"{o / b:.2f}x ({o:.0f} ms vs {b:.0f} ms)", o / b <= 3)
    growth = max(peak - idle for idle, peak in idle_peak)
    # For context: the capped row's order. The tool returns the first 500 in path order, which
    # ripgrep itself gives only single-threaded (--sort path).
    ordered = median([rg_time([rg, *RG_RULES, "--sort=path", "-n", SEARCH_COMMON], tree, 500) * 1000 for _ in range(rounds)])
    res.row("(context) rg --sort=path -n common string, to its 500th line", f"{ordered:.0f}", "", "", "", "")
    res.goal("search: bridge RSS during a search within +50 MB of idle", f"+{growth / 1024:.1f} MB", growth <= 50 * 1024)

    # Cancel of a running grep: ripgrep's run, and the built-in engine's (which runs for seconds).
    for label, env_extra, after in (("ripgrep", {}, 0.1), ("built-in", {"HARNESS_RG": "off"}, 0.3)):
        bridge = SearchBridge(ctx, tree, "grep", {"pattern": "never[0-9]matches"}, env_extra)
        latencies: List[float] = []
        for _ in range(rounds):
            _, _, latency = bridge.run(cancel_after=after)
            if latency is not None:
                latencies.append(latency * 1000)
        bridge.close()
        worst = max(latencies) if latencies else float("nan")
        res.row(f"cancel of a running grep ({label} engine): cancel to its answer, max ms", "", f"{worst:.1f}", "", "", "")
        res.goal(f"search: cancel of a running grep ({label}) < 100 ms (max)", f"{worst:.1f} ms", worst < 100)

    # The built-in engine on the same tree, for information (one round: it is the slow path).
    for name, tool, arguments, _, _ in workloads:
        bridge = SearchBridge(ctx, tree, tool, arguments, {"HARNESS_RG": "off"})
        elapsed, _, _ = bridge.run()
        bridge.close()
        res.row(f"{name} (built-in engine, HARNESS_RG=off)", "", f"{bridge.tool_ms:.0f}", "", f"{elapsed * 1000:.0f}",
                f"+{(bridge.peak_kb - bridge.idle_kb) / 1024:.1f} MB")
    res.notes.append("tool ms: the tool call's own time (tool/result durationMs); prompt to result ms: prompt sent -> "
                     "tool/result received (a scripted turn whose step is the tool call, so the turn's own cost is in it); "
                     "ripgrep ms: `rg --no-config --no-require-git --hidden -n PATTERN` (parallel; to its 500th line for the "
                     "capped row) and `rg … --files -g '*.js'`, "
                     "spawned in the tree. RSS: the bridge's VmRSS sampled every 2 ms during the searches, against "
                     "its idle RSS after initialize (ripgrep's own memory is its process's, not counted).")
    return res
