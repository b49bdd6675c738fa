"""The compiled core's ``Memo`` (wizard/_core.c), a .pftrace sequence's memo of annotations by their bytes where the
core is bound (issue 48, the seventh round's next step): the core looks a note up in it by the bytes where they lie,
so it must be the memo, a mapping with a dict's answers, and not a cache beside one.

The dict is the second computation: random calls (set, replace, delete, clear, look-ups, iteration) on both, the same
answers, errors and order after each. Hostile keys: the core's hash is not keyed, so keys made here to share their
slot (the hash written out again below, from _core.c's ``bytes_hash``) must turn the memo into a dict rather than
make each look-up walk them all; the notes still get the memo's answers through the reader's ``event_args``.
"""

from __future__ import annotations

import gc
import random
import sys
import weakref
from typing import Any

import pytest

from tests.helpers import call_outcome, dfield, vfield
from wizard.trace.read import perfetto

core = pytest.importorskip("wizard._core", reason="the compiled core is not built here (no C compiler)")
if not hasattr(core, "Memo"):
    pytest.skip("the compiled core here was built before its Memo", allow_module_level=True)

MASK = 2**64 - 1


def core_hash(b: bytes) -> int:
    """_core.c's bytes_hash, written out: FNV-1a's primes eight bytes a step (in the machine's order, as memcpy reads
    them), the rest a byte a step, then the low bits mixed from every bit."""
    h = 1469598103934665603 ^ len(b)
    k = 0
    while k + 8 <= len(b):
        h = ((h ^ int.from_bytes(b[k : k + 8], sys.byteorder)) * 1099511628211) & MASK
        h ^= h >> 29
        k += 8
    for c in b[k:]:
        h = ((h ^ c) * 1099511628211) & MASK
    h ^= h >> 32
    h = (h * 0xD6E8FEB86659FD93) & MASK
    return h ^ (h >> 32)


def outcome(mapping: Any, op: str, key: Any, value: Any) -> Any:
    """One call on a mapping: what it answered or raised (type and words), then its entries in their order."""

    def call() -> Any:
        if op == "set":
            mapping[key] = value
        elif op == "del":
            del mapping[key]
        elif op == "get":
            return mapping.get(key)
        elif op == "get default":
            return mapping.get(key, "default")
        elif op == "item":
            return mapping[key]
        elif op == "in":
            return key in mapping
        elif op == "clear":
            mapping.clear()
        return None

    return (
        call_outcome(call),
        len(mapping),
        list(mapping),
        list(mapping.keys()),
        list(mapping.values()),
        list(mapping.items()),
    )


KEYS: list[Any] = [b"", b"a", b"ab", b"\x00", b"12345678", b"123456789", b"x" * 64, b"x" * 65, bytearray(b"a")]
ODD_KEYS: list[Any] = ["a", 1, None, (b"a",), [b"a"], {}]  # not bytes: refused on set, a miss (or a dict's TypeError)


def test_a_memo_answers_as_a_dict_does_on_random_calls() -> None:
    """Set, replace, delete, clear and every look-up, keys of every length around a word and odd ones: the same
    answer or error and the same entries in the same order as a dict's, after each of 20,000 calls."""
    rng = random.Random(48)
    memo, twin = core.Memo(), dict[Any, Any]()
    ops = ["set"] * 5 + ["del", "get", "get default", "item", "in"] * 2 + ["clear"]
    for n in range(20_000):
        op = rng.choice(ops)
        key = rng.choice([*KEYS, bytes([rng.randrange(40)]) * rng.randrange(3)]) if rng.random() < 0.95 else None
        if key is None:
            key = rng.choice(ODD_KEYS)
        value = ("stream", n)
        got = outcome(memo, op, key, value)
        if op == "set" and not isinstance(key, (bytes, bytearray)):  # the one difference: a memo's keys are bytes
            words = (
                f"unhashable type: '{type(key).__name__}'"
                if isinstance(key, (list, dict))
                else "a Memo's keys are bytes"
            )
            assert got[0] == ("TypeError", words)
            continue
        assert got == outcome(twin, op, key, value), (n, op, key)
    assert not memo.spilled


def test_a_memo_takes_no_arguments_and_is_not_hashable() -> None:
    with pytest.raises(TypeError, match="Memo\\(\\) takes no arguments"):
        core.Memo({b"a": 1})
    with pytest.raises(TypeError, match="unhashable"):
        hash(core.Memo())
    with pytest.raises(TypeError, match=r"Memo.get\(key\[, default\]\)"):
        core.Memo().get()


def colliding(count: int, bits: int = 16) -> list[bytes]:
    """count keys whose hashes share their low bits: the same slot in every table of up to 2**bits slots."""
    found: list[bytes] = []
    want = None
    n = 0
    while len(found) < count:
        key = b"k%d" % n
        n += 1
        low = core_hash(key) & ((1 << bits) - 1)
        if want is None:
            want = low
        if low == want:
            found.append(key)
    return found


@pytest.fixture(scope="module")
def hostile() -> list[bytes]:
    return colliding(40, bits=12)  # ~160,000 hashes in Python; 40 keys: more than MEMO_PROBES on one slot's path


def test_the_hash_written_out_is_the_cores(hostile: list[bytes]) -> None:
    """The keys made to collide do: 32 fill one slot's path (MEMO_PROBES) and the memo stays a table; the 33rd would
    lie further, and the memo turns into a dict, the same entries in the same order."""
    memo = core.Memo()
    for n, key in enumerate(hostile[:32]):
        memo[key] = n
    assert not memo.spilled
    memo[hostile[32]] = 32
    assert memo.spilled
    assert list(memo.items()) == [(key, n) for n, key in enumerate(hostile[:33])]


def test_a_spilled_memo_still_answers_as_a_dict(hostile: list[bytes]) -> None:
    """After it turned into a dict: random calls answered as a dict answers them; cleared, it is a table again."""
    rng = random.Random(7)
    memo, twin = core.Memo(), {}
    for key in hostile:
        memo[key] = twin[key] = key
    assert memo.spilled
    for n in range(3_000):
        op = rng.choice(["set", "del", "get", "item", "in"])
        key = rng.choice(hostile + KEYS[:4])
        assert outcome(memo, op, key, n) == outcome(twin, op, key, n), (n, op, key)
    memo.clear()
    assert not memo.spilled and len(memo) == 0
    memo[b"a"] = 1
    assert dict(memo) == {b"a": 1}


def test_a_table_rebuilt_with_colliding_keys_spills_too(hostile: list[bytes]) -> None:
    """Keys that fit one slot's path in a small table (deleted ones leave holes) are moved when the table grows: the
    32 colliding ones and enough others to make it grow, each look-up right after."""
    memo, twin = core.Memo(), {}
    for key in hostile[:32]:
        memo[key] = twin[key] = 0
    for n in range(200):
        memo[b"other %d" % n] = twin[b"other %d" % n] = n
        if n % 3 == 0:
            del memo[hostile[n % 32]], twin[hostile[n % 32]]
            memo[hostile[n % 32]] = twin[hostile[n % 32]] = n
        assert list(memo.items()) == list(twin.items())
    assert all(memo[key] == value for key, value in twin.items())


def note(name: bytes, value: int) -> bytes:
    """A DebugAnnotation with its name written out (field 10) and an int value (field 3)."""
    return dfield(10, name) + vfield(3, value)


def test_notes_get_the_memos_answers_through_a_spilled_memo(hostile: list[bytes]) -> None:
    """The reader's event_args on a memo turned into a dict: each note gets what the memo holds (a value set for its
    bytes from Python included), as the twin does on a dict."""
    notes = [note(b"stream", 7), note(b"device", 1), note(b"correlation", 12)]
    data = b"".join(notes)
    spans, at = [], 0
    for n in notes:
        spans.append((at, at + len(n)))
        at += len(n)
    results = []
    for kind, function in (("core", core.event_args), ("twin", perfetto.pure_event_args)):
        seq = perfetto._Sequence()
        memo: Any = core.Memo() if kind == "core" else {}
        seq.memo = memo
        for key in hostile:
            seq.memo[key] = ("device", 0)
        seq.memo[notes[0]] = ("stream", 77)  # another answer for the stream's bytes: the event gets it
        args: dict[str, Any] = {}
        got = function(data, spans, seq, args, len(seq.memo))
        results.append((got, args, list(memo.items())))
        if kind == "core":
            assert memo.spilled
    assert results[0] == results[1]
    assert results[0][1] == {"stream": 77, "device": 1, "correlation": 12}


class Held:
    """A value that sees the memo it is held by (a cycle through it), and changes it when it is freed."""

    def __init__(self, memo: Any, key: bytes) -> None:
        self.memo, self.key = memo, key

    def __del__(self) -> None:
        try:
            self.memo[self.key + b"!"] = ("stream", 1)
            len(self.memo), list(self.memo.items())
        except Exception:  # noqa: BLE001 - a finalizer's error goes nowhere: what is checked is that nothing breaks
            pass


def test_a_memo_is_collected_and_survives_finalizers_that_change_it() -> None:
    """The cyclic collector sees what a memo holds (a memo held by its own value is freed), and a value freed by a
    replace, a delete or a clear may change the memo as it goes: the memo is consistent each time."""
    memo = core.Memo()
    held = Held(memo, b"a")
    memo[b"a"] = held
    ref = weakref.ref(held)
    del memo, held
    gc.collect()
    assert ref() is None
    memo = core.Memo()
    for action in ("replace", "delete", "clear"):
        memo[b"k"] = Held(memo, b"k")
        if action == "replace":
            memo[b"k"] = 1
            assert memo[b"k"] == 1
        elif action == "delete":
            del memo[b"k"]
            assert b"k" not in memo
        else:
            memo.clear()
        assert memo[b"k!"] == ("stream", 1)
        memo.clear()


class Loud(bytes):
    """A bytes subclass whose own hash and comparison must never run inside the memo (they could change it)."""

    def __hash__(self) -> int:
        raise AssertionError("a key's __hash__ ran inside the memo")

    def __eq__(self, other: object) -> bool:
        raise AssertionError("a key's __eq__ ran inside the memo")


@pytest.mark.parametrize("spilled", [False, True], ids=["table", "spilled"])
def test_a_bytes_subclass_is_kept_and_found_by_its_bytes(hostile: list[bytes], spilled: bool) -> None:
    """A key that is a bytes subclass is kept as plain bytes and found by its bytes, in the table and once spilled:
    its own methods never run, so no Python code runs while the memo finds, sets or moves an entry."""
    memo = core.Memo()
    if spilled:
        for key in hostile:
            memo[key] = 0
        assert memo.spilled
    memo[Loud(b"stream")] = ("stream", 7)
    assert memo[b"stream"] == memo.get(Loud(b"stream")) == ("stream", 7) and Loud(b"stream") in memo
    assert [type(key) for key in memo if key == b"stream"] == [bytes]
    memo[b"stream"] = ("stream", 8)
    assert memo[Loud(b"stream")] == ("stream", 8)
    del memo[Loud(b"stream")]
    assert b"stream" not in memo
    with pytest.raises(KeyError):
        del memo[Loud(b"stream")]
