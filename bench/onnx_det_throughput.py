"""Inference img/s of det-n exported to ONNX and run in onnxruntime (CPU provider), next to the
library's own predictor on the same machine in the same run.

    VT_LIBRARY=build/libvisiontrain.so.0 python3 bench/onnx_det_throughput.py \
        [--imgsz 640] [--classes 80] [--seconds 10]

Speed does not depend on the weights, so the model is a freshly initialised det-n.  Rows:
  library detect    vt_model_detect_pixels on a imgsz x imgsz image: float conversion, forward,
                    decode, NMS; with 1 thread (vt_model_set_threads) and the default (every
                    processor)
  library forward   vt_model_forward on the prepared float input (the raw head only)
  onnxruntime       the exported file (nms=0: the raw head; nms=1: decode + NMS in the graph),
                    with 1 thread and with onnxruntime's default
Each row runs for --seconds after a warm-up; img/s = images / wall seconds.
"""

import argparse
import os
import tempfile

from bench_rate import rate  # puts this tree's bindings on sys.path too
import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
import visiontrain as vt  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--imgsz", type=int, default=640)
    ap.add_argument("--classes", type=int, default=80)
    ap.add_argument("--seconds", type=float, default=10)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="vt-onnx-bench-")
    img = np.random.default_rng(0).integers(0, 256, (a.imgsz, a.imgsz, 3), dtype=np.uint8)
    x = (img.astype(np.float32) / np.float32(255)).transpose(2, 0, 1)[None].copy()
    rows = []
    with vt.Model("det-n", a.classes, imgsz=a.imgsz) as m:
        raw, nms = os.path.join(tmp, "det-n.onnx"), os.path.join(tmp, "det-n-nms.onnx")
        m.export(raw)
        m.export(nms, nms=1)
        for threads in (1, 0):
            m.threads = threads
            which = "1 thread" if threads else "default threads"
            rows.append(("library detect (%s)" % which, rate(lambda: m.detect(img), a.seconds)))
            rows.append(("library forward (%s)" % which, rate(lambda: m.forward(x), a.seconds)))
    for path, what in ((raw, "raw head"), (nms, "nms=1")):
        for threads in (1, 0):
            so = ort.SessionOptions()
            so.intra_op_num_threads = threads
            s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            label = "onnxruntime %s (%s)" % (what, "1 thread" if threads else "default threads")
            rows.append((label, rate(lambda: s.run(None, {"images": x}), a.seconds)))
    print("det-n, %d classes, imgsz %d, batch 1, onnxruntime %s, %d CPUs" % (
        a.classes, a.imgsz, ort.__version__, os.cpu_count()))
    base = rows[0][1]
    for label, r in rows:
        print("  %-40s %8.2f img/s  %5.2fx" % (label, r, r / base))


if __name__ == "__main__":
    main()
