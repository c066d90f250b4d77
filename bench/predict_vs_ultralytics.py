"""End-to-end detection prediction, an 8-bit image in and boxes out: the library's det-n
(Model.detect) against Ultralytics' YOLOv8n through its own predictor (YOLO.predict, PyTorch),
side by side in one run.  Both freshly initialised at 80 classes (speed does not depend on the
weights), imgsz 640, on a 640x480 (4:3) and a 640x640 image, one image a call, on 1 thread and
on every processor.  Both letterbox a 4:3 image onto 640 x 480 (the smallest canvas of multiples
of 32), a square one onto 640 x 640.

    VT_LIBRARY=build/libvisiontrain.so.0 /tmp/peer-ultralytics/venv/bin/python \\
        bench/predict_vs_ultralytics.py [--seconds 6] [--rounds 2]

(the peer's virtual environment is the one bench/det_vs_ultralytics.sh sets up; without
ultralytics the library's rows alone are printed).  Rows take turns, --rounds times; each runs
for --seconds after a warm-up, img/s = images / wall seconds, the best round printed.
"""

import argparse
import os

from bench_rate import rate  # puts this tree's bindings on sys.path too
import numpy as np  # noqa: E402
import visiontrain as vt  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=6)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    images = {"640x480": rng.integers(0, 256, (480, 640, 3), dtype=np.uint8),
              "640x640": rng.integers(0, 256, (640, 640, 3), dtype=np.uint8)}
    ncpu = os.cpu_count()
    ours = vt.Model("det-n", 80, imgsz=640)
    try:
        import torch
        from ultralytics import YOLO
        peer = YOLO("yolov8n.yaml")
        peer_tag = "ultralytics %s yolov8n (torch %s)" % (
            __import__("ultralytics").__version__, torch.__version__)
    except ImportError:
        peer = None
    rows = {}
    for _ in range(a.rounds):
        for name, img in images.items():
            for threads in (1, ncpu):
                ours.threads = 1 if threads == 1 else 0
                key = ("libvisiontrain det-n", name, threads)
                r = rate(lambda: ours.detect(img, conf=0.25), a.seconds)
                rows[key] = max(rows.get(key, 0), r)
                if peer is None:
                    continue
                torch.set_num_threads(threads)
                key = (peer_tag, name, threads)
                r = rate(lambda: peer.predict(img, imgsz=640, conf=0.25, verbose=False,
                                              device="cpu"), a.seconds)
                rows[key] = max(rows.get(key, 0), r)
    print("%d CPUs, %s" % (ncpu, vt.cpu_kernels()))
    for (who, name, threads), r in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][2])):
        print("  %-48s %s image, %2d thread%s %8.2f img/s" % (
            who, name, threads, " " if threads == 1 else "s", r))
    ours.close()


if __name__ == "__main__":
    main()
