"""Batches on a real multi-node Ray cluster on this machine (``ray.cluster_utils.Cluster``: a
head and worker nodes, each its own raylet), through the real binary: a worker node lost
mid-batch (``remove_node(..., allow_graceful=False)``, as when a machine is lost) with and
without spare capacity, a worker that stops answering (SIGSTOP: a machine cut off), one that
comes back after it was lost (SIGCONT: its late answers are never read), a worker killed with
``ray.kill``, and the batch command SIGKILLed and run again.

Worker nodes carry the custom resource ``hb: 1`` and the workers ask for it, so there is one
worker per worker node and the head runs only the driver and the limiter. Each test that
removes a node has a cluster of its own; the others share one. Turns are scripted (4 chunks
of 300 ms), so a lost turn is a measurable loss and the batch is short.

Skipped without Ray, except with ``HARNESS_REQUIRE_RAY=1`` (CI), where that fails.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

try:
    import ray
    from ray.cluster_utils import Cluster
except ImportError:
    if os.environ.get("HARNESS_REQUIRE_RAY") == "1":
        raise
    pytest.skip("Ray is not installed (pip install 'python/sdk[ray]'); HARNESS_REQUIRE_RAY=1 makes this fail",
                allow_module_level=True)

from batch_support import assert_log_equals_result, scripted_options, workspaces, write_script
from conftest import call_within
from deepseek_harness.batch import BatchResult, BatchTask
from deepseek_harness.ray import RayBatchRunner
from test_batch_local import check_resumed, command, interrupt_when, read_results, write_tasks

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


def test_a_node_lost_mid_batch_its_tasks_run_on_the_spare_node(own_cluster: Any, tmp_path: Path) -> None:
    cluster = own_cluster(3)  # two workers, one spare node
    options, tasks = slow_tasks(tmp_path)
    with RayBatchRunner(options, workers=2, max_turns_in_flight=4, worker_concurrency=2,
                        limiter_check_seconds=NO_WATCHDOG, worker_options=ON_WORKER_NODE) as runner:
        where = placed(runner)
        spare = ({n.node_id for n in cluster.nodes} - {i["node_id"] for i in where.values()}).pop()
        results = run_with_fault(runner, tasks, lambda: cluster.lose(where["w1.0"]["node_id"]), when=busy(runner, "w1.0"))
        after = placed(runner)
        counts = (runner.workers_started, runner.workers_lost, runner.workers_unplaced)
        permits = runner.stats()["in_flight"]
    retried = check_batch(results, tasks, tmp_path)
    assert permits == 0, "the lost worker's permits were given back"
    # The tasks in flight on the lost worker (its concurrency at most) ran again elsewhere.
    assert 1 <= len(retried) <= 2, [(r.task_id, r.attempts, r.worker) for r in results]
    assert all(not r.worker.startswith("ray:w1.0@") for r in retried)
    assert counts == (3, 1, 0)
    assert after["w1.1"]["node_id"] == spare, "the replacement took the spare node"


def test_a_node_lost_for_good_the_other_worker_finishes_then_none_left_is_answered(own_cluster: Any,
                                                                                   tmp_path: Path) -> None:
    cluster = own_cluster(2)  # no spare: the replacement can never be placed
    options, tasks = slow_tasks(tmp_path)
    with RayBatchRunner(options, workers=2, max_turns_in_flight=4, worker_concurrency=2, placement_timeout=3,
                        lost_after_seconds=3, worker_options=ON_WORKER_NODE) as runner:
        where = placed(runner)
        results = run_with_fault(runner, tasks, lambda: cluster.lose(where["w1.0"]["node_id"]), when=busy(runner, "w1.0"))
        retried = check_batch(results, tasks, tmp_path)
        assert 1 <= len(retried) <= 2
        assert {r.worker.split("@")[0] for r in retried} == {"ray:w0.0"}, "the survivor ran them again"
        assert {r.worker.split("@")[0] for r in results} <= {"ray:w0.0", "ray:w1.0"}, "the replacement ran nothing"
        # The replacement was (most likely: the turns left outlast its 3 s) given up meanwhile;
        # not asserted here, as that is a race of clocks.
        assert runner.workers_lost == 1 and runner.workers_unplaced <= 1

        # Then the last worker node goes too: a batch with no capacity left is answered, not hung.
        cluster.lose(where["w0.0"]["node_id"])
        last = call_within(120, runner.run, tasks[:2])
        counts = (runner.workers_lost, runner.workers_unplaced)
    assert [(r.task_id, r.status, r.error["type"]) for r in last] == [
        ("task-00", "error", "NoWorkersError"), ("task-01", "error", "NoWorkersError")]
    assert all(r.attempts == 2 for r in last), "their first attempt died with the last worker"
    assert counts == (2, 2), "both workers lost, both replacements given up unplaced"


def test_a_worker_that_stops_answering_is_lost_without_waiting_for_ray(shared_cluster: NodeCluster,
                                                                       tmp_path: Path) -> None:
    # SIGSTOP: the process is there but answers nothing, as a machine cut off from the network;
    # Ray would not declare it dead for a long time. The runner's ping does, after 3 s.
    options, tasks = slow_tasks(tmp_path)
    stopped: List[int] = []
    with RayBatchRunner(options, workers=2, max_turns_in_flight=4, worker_concurrency=2, ping_seconds=0.5,
                        lost_after_seconds=3, limiter_check_seconds=NO_WATCHDOG,
                        worker_options=ON_WORKER_NODE) as runner:
        where = placed(runner)

        def stop() -> None:
            stopped.append(where["w1.0"]["pid"])
            os.kill(stopped[0], signal.SIGSTOP)

        try:
            results = run_with_fault(runner, tasks, stop)
        finally:
            for pid in stopped:  # let it take the kill Ray sent it
                resume(pid)
        counts = (runner.workers_lost, runner.workers_unplaced)
        permits = runner.stats()["in_flight"]
    retried = check_batch(results, tasks, tmp_path)
    assert 1 <= len(retried) <= 2
    assert counts == (1, 0)
    assert permits == 0, "the lost worker's permits were given back"


@pytest.mark.parametrize("kill_lands", [True, False], ids=["kill-lands", "kill-held-back"])
def test_a_lost_worker_that_comes_back_is_never_read_nor_given_a_task(shared_cluster: NodeCluster, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      kill_lands: bool) -> None:
    # A worker cut off (SIGSTOP) is lost after 3 s and its tasks (1 or 2) run again elsewhere;
    # once the runner has given it up it comes back (SIGCONT) while the batch still runs, its
    # bridge's turns finished meanwhile. kill-lands: the runner's kill reaches it, so its calls
    # end late, mostly with ActorDiedError (a result if it answered before the kill arrived).
    # kill-held-back: the kill never reaches it (held here until the end, as over a cut
    # network), so it finishes its abandoned turns and their results reach this driver. Either
    # way the runner reads none of it: one result per task (the retried one), the replacement
    # not lost for it, no permit counted twice, nothing new given to it, and its process ends.
    options, tasks = slow_tasks(tmp_path)
    stopped: List[int] = []
    abandoned: List[Any] = []  # the lost worker's calls, kept here so their late ends can be read
    held: List[Any] = []
    real_kill = ray.kill
    try:
        with RayBatchRunner(options, workers=2, max_turns_in_flight=4, worker_concurrency=2, ping_seconds=0.5,
                            lost_after_seconds=3, limiter_check_seconds=NO_WATCHDOG,
                            worker_options=ON_WORKER_NODE) as runner:
            where = placed(runner)
            victim = runner.workers[1]
            replace = runner._replace

            def spy_replace(slot: Any) -> None:
                abandoned.extend(slot.refs)
                replace(slot)

            def kill(actor: Any, **kwargs: Any) -> None:
                if not kill_lands and actor._actor_id == victim._actor_id:
                    held.append(actor)
                else:
                    real_kill(actor, **kwargs)
                if actor._actor_id == victim._actor_id:
                    abandoned_now.set()

            monkeypatch.setattr(runner, "_replace", spy_replace)
            monkeypatch.setattr(ray, "kill", kill)

            done, abandoned_now = threading.Event(), threading.Event()

            def stop() -> None:
                stopped.append(where["w1.0"]["pid"])
                os.kill(stopped[0], signal.SIGSTOP)

                def revive_once_lost() -> None:  # once the runner has given it up
                    while not abandoned_now.wait(0.05) and not done.is_set():
                        pass
                    resume(stopped[0])

                threading.Thread(target=revive_once_lost, daemon=True).start()

            try:
                results = run_with_fault(runner, tasks, stop)
            finally:
                done.set()
                for pid in stopped:
                    resume(pid)
            # Every abandoned call has ended by now, one way or the other.
            late = call_within(120, lambda: [late_end(ref) for ref in abandoned])
            late_results = [end for end in late if isinstance(end, BatchResult)]
            stats = runner.stats()
            given = None if kill_lands else call_within(60, ray.get, victim.info.remote())["runs"]
            counts = (runner.workers_started, runner.workers_lost, runner.workers_unplaced)
    finally:
        for actor in held:  # the kill held back lands now
            real_kill(actor, no_restart=True)

    retried = check_batch(results, tasks, tmp_path)
    assert 1 <= len(abandoned) <= 2 and len(retried) == len(abandoned), [(r.task_id, r.attempts) for r in results]
    assert all(not r.worker.startswith("ray:w1.0@") for r in retried)
    assert counts == (3, 1, 0), "the lost worker's late ends did not cost its replacement"
    assert stats["in_flight"] == 0 and stats["max_in_flight"] <= 4, stats
    if not kill_lands:
        # Its late results did arrive (here), and none of them is among the batch's.
        assert len(late_results) == len(abandoned), late
        assert {r.task_id for r in late_results} == {r.task_id for r in retried}
        assert not {r.session_id for r in late_results} & {r.session_id for r in results}
        from_victim = [r for r in results if r.worker.startswith("ray:w1.0@")]
        assert given == len(from_victim) + len(abandoned), "the revived worker was given nothing more"
    assert call_within(120, gone, stopped[0]), "the abandoned worker's process ends (killed)"


def test_a_worker_killed_by_ray_kill_is_replaced_on_its_node(shared_cluster: NodeCluster, tmp_path: Path) -> None:
    options, tasks = slow_tasks(tmp_path)
    with RayBatchRunner(options, workers=2, max_turns_in_flight=4, worker_concurrency=2,
                        limiter_check_seconds=NO_WATCHDOG, worker_options=ON_WORKER_NODE) as runner:
        where = placed(runner)
        victim = runner.workers[1]
        results = run_with_fault(runner, tasks, lambda: ray.kill(victim, no_restart=True), when=busy(runner, "w1.0"))
        after = placed(runner)
        counts = (runner.workers_started, runner.workers_lost, runner.workers_unplaced)
        permits = runner.stats()["in_flight"]
    retried = check_batch(results, tasks, tmp_path)
    assert 1 <= len(retried) <= 2
    assert counts == (3, 1, 0)
    assert permits == 0, "the killed worker's permits were given back"
    assert after["w1.1"]["node_id"] == where["w1.0"]["node_id"], "the freed capacity took the replacement"


def test_workers_placed_while_no_batch_ran_are_not_given_up(shared_cluster: NodeCluster, tmp_path: Path) -> None:
    # placement_timeout bounds the wait for a placement, not the time before the next batch:
    # workers placed after start() (or a replacement placed after its batch ended) whose first
    # answer no batch has taken in yet serve the next batch, however late it comes.
    options, tasks = slow_tasks(tmp_path)
    with RayBatchRunner(options, workers=2, max_turns_in_flight=4, worker_concurrency=2, placement_timeout=2,
                        worker_options=ON_WORKER_NODE) as runner:
        placed(runner)
        time.sleep(3)  # past placement_timeout, the answers in but not yet read
        results = call_within(120, runner.run, tasks[:4])
        counts = (runner.workers_started, runner.workers_lost, runner.workers_unplaced)
    assert [(r.task_id, r.status) for r in results] == [(t.id, "ok") for t in tasks[:4]], [r.error for r in results]
    assert counts == (2, 0, 0)


def test_batch_command_sigkilled_on_the_cluster_then_run_again(shared_cluster: NodeCluster, tmp_path: Path) -> None:
    write_script(tmp_path / "script.json", "finished", delay_ms=300, chunk=2)
    tasks, out = write_tasks(tmp_path, N), tmp_path / "results.jsonl"
    env = dict(os.environ)
    env.pop("RAY_ADDRESS", None)
    env.pop("HARNESS_SESSION_ROOT", None)
    args = ["--ray-address", shared_cluster.cluster.address, "--workers", "2", "--concurrency", "4"]
    proc = subprocess.Popen(command(tmp_path, tasks, out, *args), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    interrupt_when(out, proc, 3, signal.SIGKILL)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL, err.decode()
    first_run = read_results(out)
    assert 3 <= len(first_run) < N, "killed mid-batch"

    again = subprocess.run(command(tmp_path, tasks, out, *args), env=env, capture_output=True, timeout=180)
    assert again.returncode == 0, again.stderr.decode()
    assert f"{N} tasks, {len(first_run)} already in".encode() in again.stderr
    check_resumed(out, N, first_run, tmp_path)  # 12 lines, one per task, the first run's kept
    assert all(r["attempts"] == 1 for r in read_results(out)), "the rerun starts the unanswered tasks afresh"
