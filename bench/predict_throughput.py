"""Prediction one image at a time: img/s of the library's vt_model_forward (batch 1, freshly
initialised weights: speed does not depend on them) on 1 thread and on the default (every
online processor), for a few models; beside it, where PyTorch and torchvision import,
torchvision's ResNet-18 in eval mode under torch.no_grad() on 1 and on every thread, the same
network as the library's resnet18.

    VT_LIBRARY=build/libvisiontrain.so.0 /usr/bin/python3 bench/predict_throughput.py \\
        [--seconds 4] [--models cls-s:224,cls-m:224,resnet18:224,det-n:640,seg-n:512]

(/usr/bin/python3: Debian's python3-torch lives there.)  Each row runs for --seconds after a
warm-up; img/s = images / wall seconds.  bench/onnx_det_throughput.py compares det-n with
onnxruntime.
"""

import argparse
import os

from bench_rate import rate  # puts this tree's bindings on sys.path too
import numpy as np  # noqa: E402
import visiontrain as vt  # noqa: E402


def torch_rows(imgsz, seconds):
    try:
        import torch
        import torchvision
    except ImportError:
        return []
    m = torchvision.models.resnet18(num_classes=10).eval()
    x = torch.rand(1, 3, imgsz, imgsz)
    rows = []
    for threads in (1, os.cpu_count()):
        torch.set_num_threads(threads)
        with torch.no_grad():
            r = rate(lambda: m(x), seconds)
        rows.append(("torchvision resnet18 %d (torch %s, %d thread%s)" % (
            imgsz, torch.__version__, threads, "" if threads == 1 else "s"), r))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--models", default="cls-s:224,cls-m:224,resnet18:224,det-n:640,seg-n:512")
    a = ap.parse_args()
    rows = []
    for spec in a.models.split(","):
        arch, imgsz = spec.split(":")
        imgsz = int(imgsz)
        with vt.Model(arch, 10, imgsz=imgsz) as m:
            x = np.random.default_rng(0).random((1, m.channels, imgsz, imgsz), dtype=np.float32)
            for threads in (1, 0):
                m.threads = threads
                which = "1 thread" if threads else "default threads"
                rows.append(("%s %d (%s)" % (arch, imgsz, which),
                             rate(lambda: m.forward(x), a.seconds)))
        if arch == "resnet18":
            rows += torch_rows(imgsz, a.seconds)
    print("batch 1, %d CPUs, %s" % (os.cpu_count(), vt.cpu_kernels()))
    for label, r in rows:
        print("  %-52s %8.2f img/s" % (label, r))


if __name__ == "__main__":
    main()
