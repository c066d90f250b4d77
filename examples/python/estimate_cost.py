#!/usr/bin/env python3
"""Estimate the time and cost of a training run on every GPU of the catalog, before renting one.

    python3 estimate_cost.py [key=value ...]

Keys are the estimator's (model=cls-s classes=10 train=20000 val=2000 epochs=100 imgsz=224
batch=64 precision=tf32 gpus=1 ...; see `vt help estimate`), plus calibrate=1 to first measure
a few training steps on this machine's CPU (seconds=S: the measurement budget, default 10),
and prices=FILE.csv to override catalog prices ("name,price_usd_h" then one GPU a line).
"""
import os
import sys

try:
    import visiontrain as vt
except ImportError:  # not installed: use the bindings of this source tree
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "bindings", "python"))
    import visiontrain as vt


def main(argv):
    # A sensible default run; the command line overrides it.
    settings = {"model": "cls-s", "classes": "10", "train": "20000", "val": "2000",
                "epochs": "100", "imgsz": "224", "batch": "64"}
    settings.update(kv.split("=", 1) for kv in argv[1:] if "=" in kv)
    calibrate = settings.pop("calibrate", "0") == "1"
    seconds = settings.pop("seconds", None)
    prices = settings.pop("prices", None)

    try:
        with vt.Estimator() as est:
            est.set(*("%s=%s" % kv for kv in settings.items()))
            if prices:
                est.catalog.load_csv(prices)

            if calibrate:   # measure real training steps on this machine first
                print("calibrating on the CPU ...", flush=True)
                est.calibrate("cpu", **({"seconds": seconds} if seconds else {}))
                local = est.run(gpu="local")
                print("this machine: %.1f s per epoch, %.2f h in all"
                      % (local.epoch_seconds, local.hours))

            # Rank every catalog GPU, cheapest first, and show the ten best.
            print("%-16s %5s %10s %9s %9s" % ("GPU", "fits", "s/epoch", "hours", "cost USD"))
            for r in est.rank("cost", limit=10):
                print("%-16s %5s %10.1f %9.2f %9s" % (
                    r.name, "yes" if r.fits else "no", r.epoch_seconds, r.hours,
                    "-" if r.cost_usd is None else "%.2f" % r.cost_usd))
            print("advice:", vt.dataset_advice(int(settings["train"])))
    except vt.OptionError as e:     # a bad key or value: the message lists what is valid
        print(e, file=sys.stderr)
        return 2
    except vt.VisionTrainError as e:
        print("error:", e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
