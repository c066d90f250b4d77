#!/usr/bin/env python3
"""PyTorch reference for `train_throughput arch=resnet18 imgsz=224 channels=3 classes=1000
batch=128`: torchvision's ResNet-18 trained on random data with SGD momentum 0.9.  For the GPU
machine (PyTorch 2.11 + torchvision there).  Prints img/s and steady-state peak device memory.

usage: torch_resnet18.py [--batch 128] [--steps 30] [--warmup 10] [--precision tf32|fp32|bf16]
                         [--channels-last] [--compile] [--device cuda]
"""
import argparse
import time

import torch
import torch.nn as nn
import torchvision


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--imgsz", type=int, default=224)
    ap.add_argument("--precision", default="tf32", choices=["tf32", "fp32", "bf16"])
    ap.add_argument("--channels-last", action="store_true")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = a.precision == "tf32"
    torch.backends.cudnn.allow_tf32 = a.precision == "tf32"
    dev = torch.device(a.device)
    net = torchvision.models.resnet18(num_classes=1000).to(dev)
    fmt = torch.channels_last if a.channels_last else torch.contiguous_format
    net = net.to(memory_format=fmt)
    step_net = torch.compile(net) if a.compile else net
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    x = torch.rand(a.batch, 3, a.imgsz, a.imgsz, device=dev).to(memory_format=fmt)
    y = torch.randint(0, 1000, (a.batch,), device=dev)
    lossf = nn.CrossEntropyLoss()
    for s in range(a.warmup + a.steps):
        if s == a.warmup:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=a.precision == "bf16"):
            loss = lossf(step_net(x), y)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    peak = torch.cuda.max_memory_allocated() / 2**30
    print(f"pytorch {torch.__version__} resnet18 {a.imgsz}px batch {a.batch} {a.precision}"
          f"{' channels-last' if a.channels_last else ''}{' compile' if a.compile else ''}: "
          f"{a.steps * a.batch / dt:.1f} img/s, peak {peak:.2f} GiB", flush=True)


if __name__ == "__main__":
    main()
