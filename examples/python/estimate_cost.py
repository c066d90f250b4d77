#!/usr/bin/env python3
"""Estimate the time and cost of a training run on every GPU of the catalog, before renting one.

    python3 estimate_cost.py [key=value ...]

Keys are the estimator's (model=cls-s classes=10 train=20000 val=2000 epochs=100 imgsz=224
batch=64 precision=tf32 gpus=1 ...; see `vt help estimate`), plus calibrate=1 to first measure
a few training steps on this machine's CPU (seconds=S: the measurement budget, default 10).

The Python bindings do not wrap the estimator yet, so this example calls the C API
(vt_estimator_* in visiontrain.h) through ctypes, on the library the bindings loaded.
"""
import ctypes
import os
import sys

try:
    import visiontrain as vt
except ImportError:  # not installed: use the bindings of this source tree
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "bindings", "python"))
    import visiontrain as vt

# Enum values from visiontrain.h (fixed forever).
VT_OK, VT_ERR_NOT_FOUND = 0, 4
VT_EST_EPOCH_SECONDS, VT_EST_TOTAL_SECONDS, VT_EST_COST_USD, VT_EST_FITS = 5, 6, 7, 10
VT_RANK_COST = 1

P, c_int, c_double, c_char_p = ctypes.c_void_p, ctypes.c_int, ctypes.c_double, ctypes.c_char_p


def native():
    """The library the bindings use, with the estimator's prototypes declared."""
    lib = vt.load_library()
    for name, res, args in [
            ("vt_estimator_create", c_int, [ctypes.POINTER(P)]),
            ("vt_estimator_destroy", None, [P]),
            ("vt_estimator_set", c_int, [P, c_char_p]),
            ("vt_estimator_last_error", c_char_p, [P]),
            ("vt_estimator_calibrate", c_int, [P, c_char_p, c_char_p]),
            ("vt_estimator_run", c_int, [P]),
            ("vt_estimator_result", c_int, [P, c_int, ctypes.POINTER(c_double)]),
            ("vt_estimator_rank", c_int, [P, c_int, ctypes.POINTER(c_int), c_int,
                                          ctypes.POINTER(c_int)]),
            ("vt_estimator_rank_result", c_int, [P, c_int, c_int, ctypes.POINTER(c_double)]),
            ("vt_estimator_catalog", P, [P]),
            ("vt_catalog_gpu_name", c_char_p, [P, c_int]),
            ("vt_estimate_dataset_advice", c_char_p, [ctypes.c_int64]),
            ("vt_last_error", c_char_p, [])]:
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


def main(argv):
    lib = native()
    est = P()
    if lib.vt_estimator_create(ctypes.byref(est)) != VT_OK:
        print(lib.vt_last_error().decode(), file=sys.stderr)
        return 1
    try:
        def err():
            return lib.vt_estimator_last_error(est).decode()

        def result(gpu, what):
            """A result of the ranking for catalog GPU `gpu` (None: not known, e.g. no price)."""
            v = c_double()
            return v.value if lib.vt_estimator_rank_result(est, gpu, what, ctypes.byref(v)) \
                == VT_OK else None

        # A sensible default run; the command line overrides it.
        settings = {"model": "cls-s", "classes": "10", "train": "20000", "val": "2000",
                    "epochs": "100", "imgsz": "224", "batch": "64"}
        settings.update(kv.split("=", 1) for kv in argv[1:] if "=" in kv)
        calibrate = settings.pop("calibrate", "0") == "1"
        seconds = settings.pop("seconds", None)
        for key, value in settings.items():
            if lib.vt_estimator_set(est, ("%s=%s" % (key, value)).encode()) != VT_OK:
                print(err(), file=sys.stderr)   # lists the valid keys or the valid range
                return 2

        if calibrate:   # measure real training steps on this machine first
            print("calibrating on the CPU ...", flush=True)
            opts = ("seconds=%s" % seconds).encode() if seconds else None
            if lib.vt_estimator_calibrate(est, b"cpu", opts) != VT_OK:
                print("calibration failed:", err(), file=sys.stderr)
                return 1
            lib.vt_estimator_set(est, b"gpu=local")
            if lib.vt_estimator_run(est) == VT_OK:
                epoch, total = c_double(), c_double()
                lib.vt_estimator_result(est, VT_EST_EPOCH_SECONDS, ctypes.byref(epoch))
                lib.vt_estimator_result(est, VT_EST_TOTAL_SECONDS, ctypes.byref(total))
                print("this machine: %.1f s per epoch, %.2f h in all"
                      % (epoch.value, total.value / 3600))

        # Rank every catalog GPU, cheapest first.
        count = c_int()
        if lib.vt_estimator_rank(est, VT_RANK_COST, None, 0, ctypes.byref(count)) != VT_OK:
            print("ranking failed:", err(), file=sys.stderr)
            return 2
        order = (c_int * count.value)()
        if lib.vt_estimator_rank(est, VT_RANK_COST, order, count.value,
                                 ctypes.byref(count)) != VT_OK:
            print("ranking failed:", err(), file=sys.stderr)
            return 1
        catalog = lib.vt_estimator_catalog(est)
        print("%-16s %5s %10s %9s %9s" % ("GPU", "fits", "s/epoch", "hours", "cost USD"))
        for gpu in list(order)[:10]:   # the ten best
            cost = result(gpu, VT_EST_COST_USD)
            print("%-16s %5s %10.1f %9.2f %9s" % (
                lib.vt_catalog_gpu_name(catalog, gpu).decode(),
                "yes" if result(gpu, VT_EST_FITS) else "no",
                result(gpu, VT_EST_EPOCH_SECONDS), result(gpu, VT_EST_TOTAL_SECONDS) / 3600,
                "-" if cost is None else "%.2f" % cost))
        print("advice:", lib.vt_estimate_dataset_advice(int(settings["train"])).decode())
        return 0
    finally:
        lib.vt_estimator_destroy(est)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
