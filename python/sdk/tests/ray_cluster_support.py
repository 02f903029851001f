"""A real multi-node Ray cluster on this machine for the batch tests (``ray.cluster_utils.Cluster``:
a head and worker nodes, each its own raylet), and what those tests share: the clusters as
fixtures, a batch of slow scripted tasks, the workers' placement, a batch run with one fault in
it, and the check that every task was answered exactly once, as its session log says.

Worker nodes carry the custom resource ``hb: 1`` and the workers ask for it, so there is one
worker per worker node and the head runs only the driver and the limiter. Each test that
removes a node has a cluster of its own (``own_cluster``); the others share one per module
(``shared_cluster``). Turns are scripted (4 chunks of 300 ms), so a lost turn is a measurable
loss and the batch is short.

Imported only by modules that skip without Ray first (it imports Ray at once). A test module
imports the fixtures it uses, and ``_module_cleanup``, which stops the shared cluster after it.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest
import ray
from ray.cluster_utils import Cluster

from batch_support import assert_log_equals_result, scripted_options, workspaces, write_script
from conftest import call_within
from deepseek_harness.batch import BatchResult, BatchTask
from deepseek_harness.ray import RayBatchRunner

ON_WORKER_NODE = {"num_cpus": 0, "resources": {"hb": 1}}
# The limiter's own check for dead holders, far off: the permits a lost worker held must come
# back from the runner, at once.
NO_WATCHDOG = 600
N = 12


class NodeCluster:
    """A head (1 CPU) and ``workers`` worker nodes (``hb: 1``, no CPU), the driver connected."""

    def __init__(self, workers: int) -> None:
        # A short path of its own: Ray puts its sockets under it (and never under $HOME).
        self.temp = tempfile.mkdtemp(prefix="hbnodes-")
        os.makedirs(os.path.join(self.temp, "ray"))
        self.saved = {k: os.environ.get(k) for k in ("RAY_AUTH_MODE", "RAY_TMPDIR")}
        os.environ["RAY_AUTH_MODE"] = "disabled"  # else Ray writes a token to ~/.ray
        os.environ["RAY_TMPDIR"] = self.temp
        self.cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 1, "include_dashboard": False, "object_store_memory": 80 * 1024 * 1024})
        self.nodes = [self.add_node() for _ in range(workers)]
        ray.init(address=self.cluster.address, log_to_driver=False)

    def add_node(self) -> Any:
        return self.cluster.add_node(num_cpus=0, resources={"hb": 1}, object_store_memory=80 * 1024 * 1024)

    def lose(self, node_id: str) -> None:
        """The node is gone at once, its processes killed: a machine lost."""
        (node,) = [n for n in self.nodes if n.node_id == node_id]
        self.cluster.remove_node(node, allow_graceful=False)
        self.nodes.remove(node)

    def shutdown(self) -> None:
        ray.shutdown()
        self.cluster.shutdown()
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(self.temp, ignore_errors=True)


_shared: Dict[str, NodeCluster] = {}


def _stop_shared() -> None:
    if "c" in _shared:
        _shared.pop("c").shutdown()


@pytest.fixture(scope="module", autouse=True)
def _module_cleanup() -> Iterator[None]:
    yield
    _stop_shared()


@pytest.fixture
def shared_cluster() -> NodeCluster:
    """Two worker nodes, for the tests that lose no node (made once per module)."""
    if "c" not in _shared:
        _shared["c"] = NodeCluster(workers=2)
    return _shared["c"]


@pytest.fixture
def own_cluster() -> Iterator[Any]:
    """``own_cluster(n)``: a cluster with ``n`` worker nodes for this test alone."""
    made: List[NodeCluster] = []

    def make(workers: int) -> NodeCluster:
        _stop_shared()  # one cluster per driver at a time
        made.append(NodeCluster(workers))
        return made[-1]

    yield make
    for c in made:
        c.shutdown()


def slow_tasks(tmp_path: Path) -> Any:
    options = scripted_options(tmp_path, write_script(tmp_path / "s.json", "finished", delay_ms=300, chunk=2))
    repos = workspaces(tmp_path, 2)
    return options, [BatchTask(f"task-{i:02d}", f"prompt {i}", repos[i % 2]) for i in range(N)]


def placed(runner: RayBatchRunner) -> Dict[str, Dict[str, Any]]:
    """Worker label (``w1.0``) → its ``info`` (node, pid); waits for every worker's placement."""
    infos = call_within(120, ray.get, [w.info.remote() for w in runner.workers])
    return {i["name"].split("@")[0][len("ray:"):]: i for i in infos}


def busy(runner: RayBatchRunner, label: str) -> Any:
    """Whether the worker ``label`` (``w1.0``) has tasks in flight, read from the runner (frozen
    while the driving loop handles a result)."""
    return lambda: any(s.label == label and s.refs for s in runner._slots)


def run_with_fault(runner: RayBatchRunner, tasks: List[BatchTask], fault: Any, after: int = 2,
                   when: Any = lambda: True) -> List[BatchResult]:
    """Runs the batch, calling ``fault()`` once, when ``after`` results are in and ``when()``
    holds; the results, in the order they came."""
    results: List[BatchResult] = []

    def drive() -> None:
        done = False
        for r in runner.iter(tasks):
            results.append(r)
            if not done and len(results) >= after and when():
                done = True
                fault()

    call_within(240, drive)
    return results


def late_end(ref: Any) -> Any:
    """How an abandoned call ended: its result, or the name of its error."""
    try:
        return ray.get(ref)
    except Exception as exc:  # noqa: BLE001
        return type(exc).__name__


def resume(pid: int) -> None:
    """SIGCONT, if the process is still there (a killed one may have ended already)."""
    try:
        os.kill(pid, signal.SIGCONT)
    except ProcessLookupError:
        pass


def gone(pid: int) -> bool:
    """Waits until process ``pid`` has ended (a zombie counts as ended); True then."""
    while True:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.1)


def check_batch(results: List[BatchResult], tasks: List[BatchTask], tmp_path: Path) -> List[BatchResult]:
    """Exactly one ``ok`` result per task, each as its session log says; the retried results
    (a lost worker's result that arrived before it was found lost is a real answer: its
    task is not retried; one arriving after is never read)."""
    assert sorted(r.task_id for r in results) == [t.id for t in tasks], "every task answered exactly once"
    assert [(r.task_id, r.error) for r in results if not r.ok] == []
    for r in results:
        assert r.final_response == "finished"
        assert_log_equals_result(tmp_path / "sessions", r)
    retried = [r for r in results if r.attempts > 1]
    assert all(r.attempts == 2 for r in retried), [(r.task_id, r.attempts) for r in retried]
    return retried
