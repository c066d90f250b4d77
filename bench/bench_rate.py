"""Shared by the inference benchmarks: the bindings of this tree on sys.path, and rate()."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bindings",
                                "python"))


def rate(fn, seconds):
    """Calls of fn a second over `seconds` of wall time, after three warm-up calls."""
    for _ in range(3):
        fn()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        fn()
        n += 1
    return n / (time.perf_counter() - t0)
