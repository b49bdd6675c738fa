"""The page's "open the trace" section names Perfetto only for what Perfetto opens: Chrome JSON and .pftrace, not a
SQLite database (an Nsight Systems export or AMD's rocpd). Perfetto's trace processor detects its formats by their
first bytes (src/trace_processor/util/trace_type.cc: GuessTraceType); a SQLite file header is none of them."""

from __future__ import annotations

from pathlib import Path

from wizard.api import inspect_traces
from wizard.report.html import perfetto_hint
from wizard.testing.rocpd import write_rocpd
from wizard.testing.traces import KernelSpec, TraceBuilder


def test_a_rocpd_database_is_not_offered_to_perfetto(tmp_path: Path) -> None:
    database = write_rocpd(tmp_path / "run.db")
    hint = perfetto_hint(inspect_traces([str(database)]))
    assert "<h2>Open the run in its profiler's own tools</h2>" in hint
    assert f"Perfetto does not open a rocpd database (<code>{database}</code>)" in hint
    assert "ui.perfetto.dev" not in hint


def test_beside_a_json_trace_only_the_json_is_offered(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.add(KernelSpec("k", (1, 1, 1), (32, 1, 1)))
    trace = b.write(tmp_path / "t.json")
    database = write_rocpd(tmp_path / "run.db")
    hint = perfetto_hint(inspect_traces([str(trace), str(database)]))
    assert f"<li><code>{trace}</code></li>" in hint and f"<li><code>{database}</code></li>" not in hint
    assert "Perfetto does not open a rocpd database" in hint


def test_a_name_gets_the_article_of_how_it_is_read() -> None:
    """A capital is read as its letter (an H100, an RTX, an Nsight, a V100, a Perfetto), a lower-case word as a word
    (a rocpd database, a gzip-compressed one, an unknown one): every format's name in the table reads right."""
    from wizard.formatting import article

    said = {
        name: article(name) for name in ("H100", "RTX 4090", "Nsight", "V100", "Perfetto", "rocpd", "gzip", "unknown")
    }
    assert said == {"H100": "an", "RTX 4090": "an", "Nsight": "an", "V100": "a", "Perfetto": "a", "rocpd": "a",
                    "gzip": "a", "unknown": "an"}  # fmt: skip
