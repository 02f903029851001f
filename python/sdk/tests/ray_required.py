"""Ray for the test modules that need it: imported, or the module skipped where Ray is not
installed, except with ``HARNESS_REQUIRE_RAY=1`` (CI), where a missing Ray fails instead of
hiding the tests. Call ``import_ray()`` before importing anything that imports Ray itself
(``ray_cluster_support``)."""

from __future__ import annotations

import os
from types import ModuleType

import pytest


def import_ray() -> ModuleType:
    try:
        import ray
    except ImportError:
        if os.environ.get("HARNESS_REQUIRE_RAY") == "1":
            raise
        pytest.skip("Ray is not installed (pip install 'python/sdk[ray]'); HARNESS_REQUIRE_RAY=1 makes this fail",
                    allow_module_level=True)
    return ray
