"""``python -m deepseek_harness``: the doctor (see ``_doctor.py``)."""

import sys

from ._doctor import main

sys.exit(main())
