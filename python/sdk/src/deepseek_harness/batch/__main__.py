"""``python -m deepseek_harness.batch tasks.jsonl --out results.jsonl [--ray-address ADDR]``

Runs every task of ``tasks.jsonl`` not yet answered in ``results.jsonl`` (see
:mod:`deepseek_harness.batch.files` for both formats), appending each result as it finishes:
run it again after an interruption and it does only what is left. Locally with an asyncio pool,
or on Ray with ``--ray-address`` (``local``: a cluster of this machine only; ``auto``: the one
``ray start`` runs here; ``HOST:PORT``: a remote head).

Exit status: 0 when every task is answered ``ok``, 1 when some result is a failure, 2 for a
bad command line or tasks file, 130 when interrupted (the results so far are kept). "Every task"
is every task of the tasks file, its results of earlier runs in the results file included: a
resumed run (or one with nothing left to do) whose earlier results hold a failure exits 1, so a
job that runs the same command again after an interruption does not turn green.

``--retry-failed`` runs again the tasks whose latest result failed (their new result is appended:
the file keeps the history, and a task's latest result is the one that counts, for what is left
to run and for the exit status). Without it, failed tasks stay as they are and the final message
says how many there are and names the flag.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence

from ..options import HarnessOptions
from .files import ResultWriter, TaskFileError, finished_results, read_tasks
from .local import iter_local
from .progress import ProgressBar
from .tasks import BatchResult, BatchTask, options_from_dict


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m deepseek_harness.batch",
                                description="Run agent tasks from a JSON-lines file; resumable.")
    p.add_argument("tasks", help="JSON lines: {id, prompt, workspace, session_id?, options?}")
    p.add_argument("--out", required=True, help="results file (JSON lines, appended; finished ids are skipped)")
    p.add_argument("--retry-failed", action="store_true",
                   help="also run the tasks whose latest result in --out failed (the new result is appended)")
    p.add_argument("--ray-address", help="run on Ray: 'local', 'auto' or HOST:PORT of the head")
    p.add_argument("--concurrency", type=int, default=8,
                   help="turns in flight: the local pool's size, or the cap across the Ray cluster (default 8)")
    p.add_argument("--workers", type=int, default=4, help="Ray worker actors (default 4)")
    p.add_argument("--provider", help="default provider of tasks without one (HarnessOptions.provider)")
    p.add_argument("--model", help="default model (HarnessOptions.model)")
    p.add_argument("--session-root", help="where session logs go (shared by the machines for resume by session id)")
    p.add_argument("--options", default="{}", help="JSON object of more default HarnessOptions fields")
    bar = p.add_mutually_exclusive_group()
    bar.add_argument("--progress", dest="progress", action="store_true", default=None, help="always draw the bar")
    bar.add_argument("--no-progress", dest="progress", action="store_false", help="never draw the bar")
    args = p.parse_args(argv)
    if args.concurrency < 1 or args.workers < 1:
        p.error("--concurrency and --workers must be at least 1")
    return args


def default_options(args: argparse.Namespace) -> HarnessOptions:
    fields: Dict[str, Any] = json.loads(args.options)
    if not isinstance(fields, dict):
        raise ValueError("--options must be a JSON object")
    for name in ("provider", "model", "session_root"):
        if getattr(args, name) is not None:
            fields[name] = getattr(args, name)
    return options_from_dict(fields)


def run_all(args: argparse.Namespace, todo: List[BatchTask], options: HarnessOptions,
            consume: Callable[[BatchResult], None]) -> None:
    """Runs ``todo`` locally or on Ray, handing each result to ``consume`` as it arrives."""
    if args.ray_address is None:
        # asyncio.run turns Ctrl-C into cancelling the batch (turns aborted, bridges closed),
        # then raises KeyboardInterrupt here.
        asyncio.run(_local(todo, options, args.concurrency, consume))
        return
    try:
        import ray
        from ..ray import iter_batch
    except ImportError as exc:
        raise SystemExit(f"--ray-address needs Ray: pip install 'deepseek-harness[ray]' ({exc})") from None
    if args.ray_address == "local":
        ray.init(include_dashboard=False, log_to_driver=False)
    else:
        ray.init(address=args.ray_address, log_to_driver=False)
    try:
        with contextlib.closing(iter_batch(todo, options, workers=args.workers,
                                           max_turns_in_flight=args.concurrency)) as results:
            for result in results:
                consume(result)
    finally:
        ray.shutdown()


async def _local(todo: List[BatchTask], options: HarnessOptions, concurrency: int,
                 consume: Callable[[BatchResult], None]) -> None:
    async with contextlib.aclosing(iter_local(todo, options, concurrency=concurrency)) as results:
        async for result in results:
            consume(result)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    try:
        options = default_options(args)
        tasks = read_tasks(args.tasks, options)
    except (TaskFileError, ValueError, OSError) as exc:
        print(f"batch: {exc}", file=sys.stderr)
        return 2
    done = finished_results(args.out)  # each id's latest result: ok or not
    # A retried task's new result is appended after its failed one, and the latest wins.
    todo = [t for t in tasks if t.id not in done or (args.retry_failed and not done[t.id])]
    retried = sum(1 for t in todo if t.id in done)
    skipped = len(tasks) - len(todo)
    # The results of earlier runs count as this run's (results for ids not in the tasks file do not).
    failed_before = sum(1 for t in tasks if t.id in done and not done[t.id]) - retried
    show = args.progress if args.progress is not None else sys.stderr.isatty()
    bar = ProgressBar(len(tasks), initial=skipped) if show and todo else None
    counts = {"ok": 0, "failed": 0}
    again = f" ({retried} of them failed before: retried)" if retried else ""
    print(f"batch: {len(tasks)} tasks, {skipped} already in {args.out}, {len(todo)} to run{again}", file=sys.stderr)
    try:
        with ResultWriter(args.out) as writer:
            def consume(result: BatchResult) -> None:
                writer.write(result)
                counts["ok" if result.ok else "failed"] += 1
                if bar is not None:
                    bar(skipped + counts["ok"] + counts["failed"], len(tasks), result)

            run_all(args, todo, options, consume)
    except KeyboardInterrupt:
        print(f"\nbatch: interrupted after {counts['ok'] + counts['failed']} results; run again to resume",
              file=sys.stderr)
        return 130
    finally:
        if bar is not None:
            bar.close()
    earlier = f"; of the {skipped} earlier results in {args.out}, {failed_before} failed" if skipped else ""
    if failed_before:
        # Otherwise a rerun of the same command would say "0 to run" and exit 1 for ever.
        earlier += " (--retry-failed runs them again)"
    print(f"batch: ran {len(todo)}: {counts['ok']} ok, {counts['failed']} failed{earlier}", file=sys.stderr)
    return 1 if counts["failed"] or failed_before else 0


if __name__ == "__main__":
    sys.exit(main())
