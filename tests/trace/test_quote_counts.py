"""Where a minified block is cut, the quotes before a candidate separator are counted (scan.unescaped_quotes): the
compiled core's ``quote_counts`` counts quotes and backslashes in one pass eight bytes at a time, its twin
``pure_quote_counts`` with two ``bytes.count`` calls. They must agree on every buffer, every alignment of the
eight-byte words and every pair of indices ``bytes.count`` takes (negative ones from the end, past either end
clipped, reversed), and refuse what is not bytes or not an index with the same words."""

from __future__ import annotations

import random

import pytest

from tests.helpers import call_outcome
from wizard.compiled_core import compiled
from wizard.trace.read import scan

CORE = compiled()
needs_core = pytest.mark.skipif(CORE is None, reason="the compiled core is not built here")


def _agree(*args: object) -> None:
    assert CORE is not None
    assert call_outcome(CORE.quote_counts, *args) == call_outcome(scan.pure_quote_counts, *args), repr(args)


def test_the_counts_are_the_quotes_and_backslashes_between_the_indices() -> None:
    text = b'{"name": "a\\"b", "x": "\\\\"}'
    assert scan.quote_counts(text, 0, len(text)) == (9, 3)  # the escaped one counted: unescaped_quotes drops it
    assert scan.quote_counts(text, 1, 8) == (2, 0)  # "name"
    assert scan.quote_counts(text, -5, 10**30) == (2, 2)  # "\\"} from the end, clipped past it
    assert scan.quote_counts(text, 9, 2) == (0, 0)


@needs_core
def test_the_twins_agree_at_every_alignment_and_length() -> None:
    """Buffers of 0 to 40 bytes drawn from the bytes that matter (quote, backslash, the bytes one away from them,
    0x80 and 0xff for the zero-byte test's high bit), every start and end from -3 to the length plus 3."""
    rng = random.Random(48)
    alphabet = b'"\\!#[]\x00\x80\xff\xa2\xdca'
    for n in range(41):
        buf = bytes(rng.choice(alphabet) for _ in range(n))
        for start in range(-3, n + 4):
            for end in range(-3, n + 4):
                _agree(buf, start, end)


@needs_core
def test_the_twins_agree_on_a_block_and_odd_arguments() -> None:
    rng = random.Random(7)
    block = bytes(rng.choice(b'"\\{},:ab \n') for _ in range(1 << 16))
    for start, end in [(0, len(block)), (5, len(block) - 3), (-(10**30), 10**30), (10**30, -(10**30))]:
        _agree(block, start, end)
    for args in [("text", 0, 1), (bytearray(b'"'), 0, 1), (memoryview(b'"'), 0, 1), (b'"', None, 1),
                 (b'"', 0, 1.0), (None, "0", 1), (b'"', True, 1)]:  # fmt: skip
        _agree(*args)
    assert CORE is not None
    with pytest.raises(TypeError, match="three arguments"):
        CORE.quote_counts(b"", 0)


@needs_core
@pytest.mark.parametrize("fill", [b'"', b"\\", b'"\\', b'a"'])
def test_the_twins_agree_where_every_lane_fills(fill: bytes) -> None:
    """Where SSE2 is, the core counts sixteen bytes a step, each byte's lane holding at most 255 matches, summed
    every 255 steps (4,080 bytes, wizard/_core.c quotes_and_backslashes): a buffer of nothing but quotes or
    backslashes fills every lane of every chunk, and the lengths about a chunk's end take each way out of it."""
    for n in [4_079, 4_080, 4_081, 4_095, 4_096, 8_160, 8_161, 65_536 + 7, 1 << 20]:
        buf = (fill * (n // len(fill) + 1))[:n]
        for start, end in [(0, n), (1, n), (3, n - 5), (4_080, n)]:
            _agree(buf, start, end)
