"""Time-to-recover of a batch on Ray when a machine is lost mid-way, run by
``bench/ray_batch.py --recovery``; writes ``bench/ray_recovery.md``.

A real multi-node cluster on this machine (``ray.cluster_utils.Cluster``): a head, and worker
nodes with the custom resource ``hb: 1`` that the two workers ask for (one worker per node, a
spare node for the replacement). Tasks are scripted turns of 1.2 s (4 chunks of 300 ms), 2 at
once per worker, so the cluster's capacity and the time a lost turn costs are known. Each
scenario runs the same batch on fresh workers; the fault falls after the 4th result:

- ``baseline``: nothing lost.
- ``node lost``: the node of worker 1 removed (``remove_node(allow_graceful=False)``: its
  processes killed, connections refused), a spare node present for the replacement.
- ``node lost, no spare``: the same with no spare node: the survivor finishes alone.
- ``cut off``: worker 1's process SIGSTOPped (a machine that stops answering: Ray declares
  nothing for a long time); the runner's ping finds it (``lost_after_seconds``, default 10 s).

The extra wall time against the baseline is the recovery's cost: the lost turns run again
(their progress is lost: up to one turn's time), plus how long it took to notice.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

ROOT = Path(__file__).resolve().parents[1]
TURN_S = 1.2
ON_WORKER_NODE = {"num_cpus": 0, "resources": {"hb": 1}}


def recovery_main(quick: bool, rounds: int, out: str) -> int:
    import ray
    from ray.cluster_utils import Cluster

    from deepseek_harness import HarnessOptions
    from deepseek_harness.batch import BatchTask
    from deepseek_harness.ray import RayBatchRunner

    n = 8 if quick else 16
    rounds = 1 if quick else rounds
    tmp = Path(tempfile.mkdtemp(prefix="hbrec-"))
    (tmp / "ray").mkdir()
    os.environ["RAY_AUTH_MODE"] = "disabled"
    os.environ["RAY_TMPDIR"] = str(tmp)
    # The nodes' workers import this checkout's SDK, not whatever the venv has installed.
    src = str(ROOT / "python" / "sdk" / "src")
    os.environ["PYTHONPATH"] = os.pathsep.join([src] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    (tmp / "repo").mkdir()
    script = tmp / "script.json"
    script.write_text(json.dumps({"turns": [{"steps": [{"text": "finished", "chunkSize": 2, "delayMs": 300}]}]}))
    options = HarnessOptions(provider="scripted", model=str(script), session_root=str(tmp / "sessions"),
                             bridge_bin=str(ROOT / "bin" / "harness-bridge"), shutdown_timeout_seconds=5.0)
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "include_dashboard": False, "object_store_memory": 80 * 1024 * 1024})
    mem = {"object_store_memory": 80 * 1024 * 1024}
    nodes = [cluster.add_node(num_cpus=0, resources={"hb": 1}, **mem) for _ in range(3)]
    ray.init(address=cluster.address, log_to_driver=False)
    walls: Dict[str, List[float]] = {"baseline": [], "node lost": [], "node lost, no spare": [], "cut off": []}
    retried: Dict[str, List[int]] = {k: [] for k in walls}

    def batch(name: str, fault: Callable[[Dict[str, Any]], Any]) -> None:
        tasks = [BatchTask(f"{name}-{i}", "x", str(tmp / "repo")) for i in range(n)]
        with RayBatchRunner(options, workers=2, max_turns_in_flight=4, worker_concurrency=2,
                            worker_options=ON_WORKER_NODE) as runner:
            infos = {i["name"].split("@")[0]: i for i in ray.get([w.info.remote() for w in runner.workers])}
            runner.run([BatchTask(f"{name}-warm-{i}", "x", str(tmp / "repo")) for i in range(4)])
            start = time.perf_counter()
            results, after = [], None
            for r in runner.iter(tasks):
                results.append(r)
                if len(results) == 4:
                    after = fault(infos["ray:w1.0"])
            walls[name].append(time.perf_counter() - start)
            assert sorted(r.task_id for r in results) == sorted(t.id for t in tasks) and all(r.ok for r in results)
            retried[name].append(sum(r.attempts > 1 for r in results))
        if after is not None:
            after()

    def lose(info: Dict[str, Any]) -> Callable[[], None]:
        node = next(x for x in nodes if x.node_id == info["node_id"])
        cluster.remove_node(node, allow_graceful=False)
        nodes.remove(node)
        return lambda: nodes.append(cluster.add_node(num_cpus=0, resources={"hb": 1}, **mem))

    def cut_off(info: Dict[str, Any]) -> Callable[[], None]:
        os.kill(info["pid"], signal.SIGSTOP)
        return lambda: os.kill(info["pid"], signal.SIGCONT)

    try:
        for _ in range(rounds):
            batch("baseline", lambda info: None)
            batch("node lost", lose)
            batch("cut off", cut_off)
            # No spare: one hb node fewer for this scenario (removed while idle, added back after).
            spare = nodes.pop()
            cluster.remove_node(spare, allow_graceful=True)
            batch("node lost, no spare", lose)
            nodes.append(cluster.add_node(num_cpus=0, resources={"hb": 1}, **mem))
    finally:
        ray.shutdown()
        cluster.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)

    med = {k: statistics.median(v) for k, v in walls.items()}
    base = med["baseline"]
    ideal = n / 4 * TURN_S
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    lines = [
        "# Batches on Ray: time-to-recover of a lost machine",
        "",
        "Written by `.venv/bin/python bench/ray_batch.py --recovery`: a multi-node cluster on this "
        f"machine (a head, worker nodes with `hb: 1`), 2 workers x 2 turns at once, {n} scripted turns of "
        f"{TURN_S} s (ideal wall {ideal:.1f} s), the fault after the 4th result, {rounds} rounds, medians; "
        "runner defaults (`ping_seconds` 2, `lost_after_seconds` 10).",
        "",
        f"- date: {time.strftime('%Y-%m-%dT%H:%M:%S')}, commit {commit}",
        f"- machine: {platform.machine()}, {os.cpu_count()} cores (shared with other work), {platform.platform()}",
        f"- python {platform.python_version()}, ray {ray.__version__}",
        "",
        "| scenario | wall (median) | runs | extra vs baseline | tasks retried | goal | met |",
        "|---|---|---|---|---|---|---|",
    ]
    # Each goal: the most extra wall time, and why.
    goals = {"node lost": (2 * TURN_S + 2, "the lost turns again + 2 s"),
             "node lost, no spare": (ideal + 2 * TURN_S + 2, "half the capacity from the fault on"),
             "cut off": (10 + 2 * TURN_S + 2, "`lost_after_seconds` + the lost turns + 2 s")}
    missed = []
    for k, v in walls.items():
        extra, goal, met = "", "", ""
        if k in goals:
            extra = f"+{med[k] - base:.1f} s"
            goal = f"extra ≤ {goals[k][0]:.1f} s ({goals[k][1]})"
            met = "yes" if med[k] - base <= goals[k][0] else "**no**"
            if med[k] - base > goals[k][0]:
                missed.append(k)
        lines.append(f"| {k} | {med[k]:.1f} s | {', '.join(f'{x:.1f}' for x in v)} | {extra} | "
                     f"{', '.join(map(str, retried[k]))} | {goal} | {met} |")
    if quick:
        lines.insert(2, "**--quick: counts too small to mean anything.**\n")
    text = "\n".join(lines) + "\n"
    print(text)
    if not quick:
        Path(out).write_text(text)
        if missed:
            print(f"goal missed: {', '.join(missed)}", file=sys.stderr)
            return 1
    return 0
