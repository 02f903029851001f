"""The SDK's machinery behind the public modules; nothing here is a stable API.

* :mod:`.inbox`: the queues between the reader thread and a request's consumer (blocking and
  asyncio);
* :mod:`.decode`: the fast path's decoding (a run of raw lines in one parse) and the one guard
  every frame passes.
"""
