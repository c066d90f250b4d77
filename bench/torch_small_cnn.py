#!/usr/bin/env python3
"""PyTorch reference for bench/train_throughput: the small CNN of ../shared/GUIDE.md section 4
(input 1x28x28, 10 classes; conv3x3(1->32)+BN+ReLU+maxpool2, conv3x3(32->64)+BN+ReLU+maxpool2,
conv3x3(64->128)+BN+ReLU, global average pool, linear(128->10); SGD momentum 0.9, cross-entropy),
trained on random data.  Prints one line per batch size in the same format as train_throughput.

usage: torch_small_cnn.py [--batch 64] [--steps 30] [--warmup 5] [--threads N] [--device cpu]
                          [--bf16] [--channels-last]
--bf16: torch.autocast(dtype=torch.bfloat16) around the forward and the loss (on the CPU,
oneDNN's bf16 convolutions where the processor has AVX512-BF16 or AMX), the counterpart of
the library's precision=bf16.
"""
import argparse
import time

import torch
import torch.nn as nn


def small_cnn(nc=10):
    def cbr(i, o):
        return [nn.Conv2d(i, o, 3, 1, 1, bias=False), nn.BatchNorm2d(o), nn.ReLU(inplace=True)]
    return nn.Sequential(*cbr(1, 32), nn.MaxPool2d(2), *cbr(32, 64), nn.MaxPool2d(2),
                         *cbr(64, 128), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, nc))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0, help="0 = torch's default")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--bf16", action="store_true")
    ap.add_argument("--channels-last", action="store_true")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    dev = torch.device(a.device)
    net = small_cnn().to(dev)
    fmt = torch.channels_last if a.channels_last else torch.contiguous_format
    net = net.to(memory_format=fmt)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    x = torch.rand(a.batch, 1, 28, 28, device=dev).to(memory_format=fmt)
    y = torch.arange(a.batch, device=dev) % 10
    lossf = nn.CrossEntropyLoss()
    for s in range(a.warmup + a.steps):
        if s == a.warmup:
            if dev.type == "cuda":
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
            t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=a.bf16):
            loss = lossf(net(x), y)
        loss.backward()
        opt.step()
    if dev.type == "cuda":
        torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    peak = f"  peak {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB" if dev.type == "cuda" else ""
    ips = a.steps * a.batch / dt
    tag = ("bf16 " if a.bf16 else "") + ("cl " if a.channels_last else "")
    print(f"pytorch {torch.__version__:<10} {tag}cnn-small  batch {a.batch:4d}  {ips:9.1f} img/s  "
          f"{1e3 * dt / a.steps:8.2f} ms/step  threads {torch.get_num_threads()}  "
          f"loss {loss.item():.3f}{peak}", flush=True)


if __name__ == "__main__":
    main()
