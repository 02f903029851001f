"""``python -m deepseek_harness``: the doctor (see ``_doctor.py``); ``python -m deepseek_harness
view [options]``: the session viewer (see ``_viewer.py``)."""

import os
import sys

from ._doctor import main

# 128 + SIGPIPE: what a shell reports for `cat` and friends whose reader left early.
EXIT_READER_GONE = 141

if sys.argv[1:2] == ["view"]:
    from ._viewer import main as view

    sys.exit(view())

try:
    status = main()
    sys.stdout.flush()
except BrokenPipeError:
    # The reader closed the pipe (`python -m deepseek_harness --json | head -1`): what it read
    # is all it wanted, so no traceback. Python would flush stdout once more at exit and print
    # "Exception ignored ... BrokenPipeError": point stdout at /dev/null first.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    status = EXIT_READER_GONE
sys.exit(status)
