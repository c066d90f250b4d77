"""Prediction img/s of the library's vt_model_forward (freshly initialised weights: speed does
not depend on them): one image a call on 1 thread and on the default (every online processor),
and --batch images a call on the default, for a few models; beside it, where PyTorch and
torchvision import, torchvision's ResNet-18 in eval mode under torch.no_grad() the same ways
(the same network as the library's resnet18).

    VT_LIBRARY=build/libvisiontrain.so.0 /usr/bin/python3 bench/predict_throughput.py \\
        [--seconds 4] [--batch 16] [--models cls-s:224,cls-m:224,resnet18:224,det-n:640,seg-n:512]

(/usr/bin/python3: Debian's python3-torch lives there.)  Each row runs for --seconds after a
warm-up; img/s = images / wall seconds.  bench/onnx_det_throughput.py compares det-n with
onnxruntime.
"""

import argparse
import os

from bench_rate import rate  # puts this tree's bindings on sys.path too
import numpy as np  # noqa: E402
import visiontrain as vt  # noqa: E402


def torch_rows(imgsz, seconds, batch):
    try:
        import torch
        import torchvision
    except ImportError:
        return []
    m = torchvision.models.resnet18(num_classes=10).eval()
    rows = []
    for threads, n in ((1, 1), (os.cpu_count(), 1), (os.cpu_count(), batch)):
        torch.set_num_threads(threads)
        x = torch.rand(n, 3, imgsz, imgsz)
        with torch.no_grad():
            r = n * rate(lambda: m(x), seconds)
        rows.append(("torchvision resnet18 %d (torch %s, %d thread%s, batch %d)" % (
            imgsz, torch.__version__, threads, "" if threads == 1 else "s", n), r))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--models", default="cls-s:224,cls-m:224,resnet18:224,det-n:640,seg-n:512")
    a = ap.parse_args()
    rows = []
    for spec in a.models.split(","):
        arch, imgsz = spec.split(":")
        imgsz = int(imgsz)
        with vt.Model(arch, 10, imgsz=imgsz) as m:
            for threads, n in ((1, 1), (0, 1), (0, a.batch)):
                m.threads = threads
                x = np.random.default_rng(0).random((n, m.channels, imgsz, imgsz),
                                                    dtype=np.float32)
                which = "1 thread" if threads else "default threads"
                rows.append(("%s %d (%s, batch %d)" % (arch, imgsz, which, n),
                             n * rate(lambda: m.forward(x), a.seconds)))
        if arch == "resnet18":
            rows += torch_rows(imgsz, a.seconds, a.batch)
    print("%d CPUs, %s" % (os.cpu_count(), vt.cpu_kernels()))
    for label, r in rows:
        print("  %-62s %8.2f img/s" % (label, r))


if __name__ == "__main__":
    main()
