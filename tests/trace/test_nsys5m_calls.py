"""RuntimeIndex.add_columns (an Nsight Systems export's calls, issue 48 at 5M kernels): the same columns and last
end as the calls one by one, and no whole-column copy beyond what it keeps."""

from __future__ import annotations

import pickle
import tracemalloc

import numpy as np
import pytest

from wizard.trace.read import records
from wizard.trace.read.records import RuntimeIndex


def _calls(n: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(5)
    corr = np.arange(1, n + 1, dtype=np.int64)
    starts = np.cumsum(rng.integers(0, 5, n)).astype(np.float64) / 2
    durations = np.where(rng.random(n) < 0.2, 0.0, rng.integers(-3, 40, n) / 4)
    threads = rng.integers(0, 3, n).astype(np.int32)
    names = rng.integers(0, 4, n).astype(np.int32)
    return corr, starts, durations, threads, names


KEYS = [(7, 70), (7, 71), (8, 80)]
NAMES = ["cudaLaunchKernel", "cudaMemcpyAsync", "cuLaunchKernel", "cudaEventRecord"]


@pytest.mark.parametrize("chunk", [7, 1 << 18])
def test_columns_are_the_calls_one_by_one(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    monkeypatch.setattr(records, "_CHUNK", chunk)  # chunks that split the columns unevenly, and one chunk
    corr, starts, durations, threads, names = _calls(1000)
    index = RuntimeIndex()
    index.add_columns(corr, starts, durations, threads, names, thread_keys=KEYS, name_list=NAMES)
    one_by_one = RuntimeIndex()
    columns = (corr, starts, durations, threads, names)
    for c, s, d, t, m in zip(*(column.tolist() for column in columns), strict=True):
        pid, tid = KEYS[t]
        one_by_one.add(c, pid, tid, s, NAMES[m], dur=d)
    assert list(index.correlations) == list(one_by_one.correlations) == corr.tolist()
    assert list(index.starts) == starts.tolist()
    assert [index.thread(t) for t in index.threads] == [KEYS[t] for t in threads.tolist()]
    assert [index.name_list[m] for m in index.names] == [NAMES[m] for m in names.tolist()]
    by_hand = max(s + d if d > 0 else s for s, d in zip(starts.tolist(), durations.tolist(), strict=True))
    assert index.last_end == one_by_one.last_end == by_hand


def test_no_whole_column_copy_beyond_what_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """The peak is the kept arrays plus one 4-byte column (the numbered threads or names being copied in):
    ``tobytes()`` copies and the last end's whole-column temporaries added 9 bytes a call (37 against 28)."""
    monkeypatch.setattr(records, "_CHUNK", 4096)
    n = 400_000
    corr, starts, durations, threads, names = _calls(n)
    index = RuntimeIndex()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        index.add_columns(corr, starts, durations, threads, names, thread_keys=KEYS, name_list=NAMES)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held - before >= 24 * n  # the kept columns: 8 + 4 + 8 + 4 bytes a call
    assert peak - held <= 4 * n + (1 << 20)


def test_batches_with_growing_key_lists_number_each_key_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Nsight reader adds a batch at a time, its lists of thread keys and names growing as new ones come: every
    batch numbers only the keys added since the last (numbering all of them each batch was batches times keys: 5.4 s
    for a million calls with a name and thread each, 0.6 s in one call), and the result is the calls one by one."""
    numbered: list[object] = []
    thread_id = RuntimeIndex._thread_id

    def counted(self: RuntimeIndex, key: tuple[object, object]) -> int:
        numbered.append(key)
        return thread_id(self, key)

    monkeypatch.setattr(RuntimeIndex, "_thread_id", counted)
    index, one_by_one = RuntimeIndex(), RuntimeIndex()
    keys: list[tuple[int, int]] = []
    names: list[str] = []
    by_batches = 0  # keys numbered by the batches' add_columns
    for batch in range(5):
        keys += [(1, 10 * batch + k) for k in range(3)]  # three new threads and names a batch
        names += [f"call{batch}-{k}" for k in range(3)]
        threads = np.array([len(keys) - 1, 0, len(keys) - 2, len(keys) - 3], dtype=np.int32)
        corr = np.arange(4 * batch, 4 * batch + 4, dtype=np.int64)
        starts = corr.astype(np.float64)
        before = len(numbered)
        index.add_columns(corr, starts, np.ones(4), threads, threads, thread_keys=keys, name_list=names)
        by_batches += len(numbered) - before
        for c, t in zip(corr.tolist(), threads.tolist(), strict=True):
            pid, tid = keys[t]
            one_by_one.add(c, pid, tid, float(c), names[t], dur=1.0)
    assert [index.thread(t) for t in index.threads] == [one_by_one.thread(t) for t in one_by_one.threads]
    assert [index.name_list[m] for m in index.names] == [one_by_one.name_list[m] for m in one_by_one.names]
    assert by_batches == len(keys) == 15  # each key once, not 3 + 6 + 9 + 12 + 15
    other = RuntimeIndex()  # another list, of other keys, is numbered anew
    other.add_columns(np.arange(1), np.zeros(1), np.ones(1), np.zeros(1, np.int32), np.zeros(1, np.int32),
                      thread_keys=[(9, 9)], name_list=["x"])  # fmt: skip
    assert other.thread(other.threads[0]) == (9, 9)
    assert pickle.loads(pickle.dumps(index))._mapped == {}  # the reader's lists are not pickled with it
