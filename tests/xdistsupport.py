"""Handing tests to pytest-xdist workers by group, for the unit and the integration tests.

Both conftests group tests whose module-scoped fixtures are expensive, so that one worker makes
each such fixture once: ``scheduler(config, log, scope_of)`` is xdist's LoadScopeScheduling (a
scope's tests in one worker, the scopes with the most tests first) with SCOPE_OF(nodeid) as the
scope. xdist's own ``--dist loadgroup`` cannot be used: it renames a test by setting
Item._nodeid, which pytest 9 no longer reads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest


def scheduler(
    config: pytest.Config, log: Any, scope_of: Callable[[str], str], first: Sequence[str] = ()
) -> Any:
    """An xdist scheduler handing out the tests by SCOPE_OF(nodeid) (returned by the conftest's
    pytest_xdist_make_scheduler hook); the scopes named in FIRST before all others, in that order
    (the longest ones: started last, one of them would run on alone at the end)."""
    from xdist.scheduler import LoadScopeScheduling

    class Groups(LoadScopeScheduling):
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

        def _assign_work_unit(self, node: Any) -> None:
            if not self.ordered:  # the work queue is complete at the first assignment
                for scope in reversed(first):
                    if scope in self.workqueue:
                        self.workqueue.move_to_end(scope, last=False)
                self.ordered = True
            super()._assign_work_unit(node)

    return Groups(config, log)
