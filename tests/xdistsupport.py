"""Handing tests to pytest-xdist workers by group, for the unit and the integration tests.

Both conftests group tests whose module-scoped fixtures are expensive, so that one worker makes
each such fixture once: ``scheduler(config, log, scope_of)`` is xdist's LoadScopeScheduling (a
scope's tests in one worker, the scopes with the most tests first) with SCOPE_OF(nodeid) as the
scope. xdist's own ``--dist loadgroup`` cannot be used: it renames a test by setting
Item._nodeid, which pytest 9 no longer reads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


def scheduler(config: pytest.Config, log: Any, scope_of: Callable[[str], str]) -> Any:
    """An xdist scheduler handing out the tests by SCOPE_OF(nodeid) (returned by the conftest's
    pytest_xdist_make_scheduler hook)."""
    from xdist.scheduler import LoadScopeScheduling

    class Groups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return Groups(config, log)
