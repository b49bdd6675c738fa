"""docs/health.md's gate table holds what a fresh run decides (issue 45's Done-when): every input in
../shared/traces and every planted case, its exit status, its findings and the action for each exit 1."""

from __future__ import annotations

import pytest

from tests import gate_table
from tests.conftest import needs_shared


@needs_shared
def test_the_gate_table_is_a_fresh_run() -> None:
    made = gate_table.fresh()
    assert made == gate_table.current(), "docs/health.md's gate table is stale: python -m tests.gate_table --write"


@pytest.mark.parametrize("name", list(gate_table.PLANTED))
def test_each_planted_case_fails_the_gate(name: str, tmp_path: object) -> None:
    """Issue 45 items 1-3: a cut trace, noise after the header, a GPU and no GPU event, a missing rank, duplicated
    ranks, a foreign rank, a cut rank beside a straggler: each exits 1 under the default --fail-on warning."""
    from pathlib import Path

    path = gate_table.PLANTED[name](Path(str(tmp_path)))
    row = gate_table.row(name, path)
    assert row.split(" | ")[1] == "1", row
    assert "`warpwizard run " in row.split(" | ")[3], row  # the action is named
