"""The SDK's machinery behind the public modules; nothing here is a stable API.

* :mod:`.process`: the bridge process: spawn, environment, stderr drain, the close ->
  SIGTERM -> SIGKILL escalation, reaping at interpreter exit;
* :mod:`.process_limit`: the process limit (``ulimit -u``) a bridge inherits, and whether it is
  why the bridge hung or aborted as it started;
* :mod:`.start_timeout`: the bound of ``initialize`` (the start), and killing a bridge that
  did not answer it;
* :mod:`.fs_names`: file names Python escaped (the C locale) sent as the UTF-8 names they are;
* :mod:`.forking`: what a forked child does with its copies of the parent's harnesses (fresh
  locks, the bridge's pipes closed), so that it raises at once instead of hanging;
* :mod:`.inbox`: the queues between the reader thread and a request's consumer (blocking and
  asyncio);
* :mod:`.router`: the reader: line framing, dispatch of every frame to its waiter, subagent
  routing, subscriptions, failing every waiter when the transport ends;
* :mod:`.decode`: the fast path's decoding (a run of raw lines in one parse) and the one guard
  every frame passes;
* :mod:`.link`: a started bridge's plumbing (process, reader thread, router, writes, close),
  which never points back at its connection, so a connection dropped unclosed is collected
  and its finalizer closes the bridge;
* :mod:`.connection`: a running bridge: lifecycle, writing requests, waiting for responses;
  its functions (``send``, ``request``, ``outcome``, ``forget``, ``answer_requests``, ...) are
  what the other modules here do with a connection, never its private names;
* :mod:`.session_requests`: the sessions API's requests (list, read, fork, delete, compact),
  history paging, and a session's log path in the folder the bridge reports, for both fronts;
* :mod:`.harness_setup`: what a harness makes of its options before the bridge runs (the
  checked tools, approvals and hooks, ``initialize``'s keywords) and the log folder it learns;
* :mod:`.tool_dispatch`: running client tools and the approval callback
  (:mod:`.tool_answers`: the answers they send);
* :mod:`.prompt`: one ``session/prompt`` in flight, seen from its consumer (settle, cancel,
  timeout), for both fronts;
* :mod:`.turn`: the turn collector and the stream buffer the blocking and asyncio fronts share.

The wire's types (the params these modules send, the results and events they read) are in
:mod:`deepseek_harness.wire`.

The public modules (``client``, ``subscriptions``, ``api``, ``async_api``) import from here,
never a private name of each other.
"""
