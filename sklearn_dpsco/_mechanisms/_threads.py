"""Threads over disjoint row-chunks for compiled passes that run without the GIL (speed only).

A pass is split only where the chunks' results combine exactly (integer tallies), so a
result never depends on ``n_jobs``, the number of chunks or the machine. ``n_jobs`` has
joblib's meaning, as everywhere in this package: None is one thread outside a
``joblib.parallel_config`` context, -1 every CPU.
"""

import os
from concurrent.futures import ThreadPoolExecutor

from joblib import effective_n_jobs

__all__ = ["MIN_CHUNK_VALUES", "map_threads", "row_chunks"]

#: Fewest values (rows x columns) a thread's chunk gets: below about a millisecond of counting a
#: thread's start and the tallies' sum are not worth it.
MIN_CHUNK_VALUES = 2**19


def row_chunks(n_rows, n_values, n_jobs=None, min_values=None):
    """Row ranges ``[(start, stop), ...]`` for the threads ``n_jobs`` gives (one range when it gives one,
    or when the work is small: ``min_values`` per chunk, default :data:`MIN_CHUNK_VALUES` read at call time)."""
    min_values = MIN_CHUNK_VALUES if min_values is None else min_values
    threads = effective_n_jobs(n_jobs)
    if threads > 1:  # (os.cpu_count costs about 0.1 ms: not asked for one thread)
        threads = min(threads, os.cpu_count() or 1, max(1, n_values // max(min_values, 1)), max(1, n_rows))
    bounds = [n_rows * k // threads for k in range(threads + 1)]
    return list(zip(bounds[:-1], bounds[1:]))


def map_threads(fn, chunks):
    """``[fn(start, stop) for each chunk]``, the chunks on threads (results in the chunks' order)."""
    if len(chunks) == 1:
        return [fn(*chunks[0])]
    with ThreadPoolExecutor(max_workers=len(chunks)) as pool:
        return list(pool.map(lambda c: fn(*c), chunks))
