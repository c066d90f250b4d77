#!/usr/bin/env python3
"""Kernel-level GPU profile of libvisiontrain training steps, for the GPU machine (which has
PyTorch but no Nsight Systems): torch.profiler's CUPTI collector records every kernel and copy of
the process, the library's included, when the library is loaded into the same process through
the Python bindings.  Prints the kernels by total GPU time (a table, one row per kernel name).

usage: gpu_kernel_profile.py LIBRARY [--arch resnet18] [--classes 1000] [--channels 3]
                             [--imgsz 224] [--batch 128] [--steps 5] [--precision tf32] [--rows 40]
"""
import argparse
import ctypes
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bindings",
                                "python"))
import visiontrain as vt  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("library")
    ap.add_argument("--arch", default="resnet18")
    ap.add_argument("--classes", type=int, default=1000)
    ap.add_argument("--channels", type=int, default=3)
    ap.add_argument("--imgsz", type=int, default=224)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--precision", default="tf32")
    ap.add_argument("--rows", type=int, default=40)
    a = ap.parse_args()
    vt.load_library(a.library)
    torch.cuda.init()
    m = vt.Model(a.arch, a.classes, channels=a.channels, imgsz=a.imgsz)
    t = vt.Trainer(m, device="0", precision=a.precision)
    n = a.batch * a.channels * a.imgsz * a.imgsz
    x = torch.rand(n)  # host memory; handed over as raw float32 bytes (numpy is optional)
    raw = memoryview((ctypes.c_float * n).from_address(x.data_ptr())).cast("B")
    y = [i % a.classes for i in range(a.batch)]
    for _ in range(3):
        t.step(raw, y)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(a.steps):
            t.step(raw, y)
        torch.cuda.synchronize()
    print(f"{a.arch} {a.imgsz}px batch {a.batch} {a.precision}, {a.steps} steps:")
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=a.rows,
                                    max_name_column_width=70))


if __name__ == "__main__":
    main()
