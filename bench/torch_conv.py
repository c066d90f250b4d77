#!/usr/bin/env python3
"""oneDNN's convolution (through Debian's PyTorch 1.13, whose CPU convolutions it runs) on one
shape, timed as build/bench/conv_profile times ours: the best forward and the best backward
(input and weight gradients) over reps, 2 threads by default.  Prints one line in
conv_profile's units, so the two can be read side by side:

  conv_profile n=256 cin=32 h=14 w=14 cout=64 bf16=1 keep=0
  torch_conv.py --n 256 --cin 32 --h 14 --w 14 --cout 64 --bf16

usage: torch_conv.py [--n 64] [--cin 32] [--h 14] [--w 14] [--cout 64] [--k 3] [--s 1] [--p 1]
                     [--threads 2] [--reps 20] [--bf16] [--nchw]
--bf16: bf16 input and weight (what torch.autocast gives a convolution on the CPU: oneDNN's
AVX512-BF16 or AMX kernels), fp32 otherwise; channels-last (oneDNN's fast layout) unless --nchw.
"""
import argparse
import time

import torch
import torch.nn.functional as F


def main():
    ap = argparse.ArgumentParser()
    for k, v in (("n", 64), ("cin", 32), ("h", 14), ("w", 14), ("cout", 64), ("k", 3), ("s", 1),
                 ("p", 1), ("threads", 2), ("reps", 20)):
        ap.add_argument("--" + k, type=int, default=v)
    ap.add_argument("--bf16", action="store_true")
    ap.add_argument("--nchw", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    dt = torch.bfloat16 if a.bf16 else torch.float32
    fmt = torch.contiguous_format if a.nchw else torch.channels_last
    x = torch.randn(a.n, a.cin, a.h, a.w).to(dt).to(memory_format=fmt).requires_grad_()
    w = torch.randn(a.cout, a.cin, a.k, a.k).to(dt).to(memory_format=fmt).requires_grad_()
    ho = (a.h + 2 * a.p - a.k) // a.s + 1
    wo = (a.w + 2 * a.p - a.k) // a.s + 1
    dy = torch.randn(a.n, a.cout, ho, wo).to(dt).to(memory_format=fmt)
    tf = tb = 1e9
    for _ in range(a.reps + 2):
        x.grad = w.grad = None
        t0 = time.perf_counter()
        y = F.conv2d(x, w, stride=a.s, padding=a.p)
        t1 = time.perf_counter()
        y.backward(dy)
        t2 = time.perf_counter()
        tf, tb = min(tf, t1 - t0), min(tb, t2 - t1)
    fl = 2.0 * a.cout * a.cin * a.k * a.k * a.n * ho * wo
    print(f"torch {torch.__version__} conv n{a.n} {a.cin}x{a.h}x{a.w} -> {a.cout} k{a.k} s{a.s} "
          f"p{a.p}, {a.threads} threads, {'bf16' if a.bf16 else 'fp32'} "
          f"{'nchw' if a.nchw else 'channels-last'}")
    print(f"  forward   {tf * 1e3:8.3f} ms  {fl / tf * 1e-9:6.1f} GFLOP/s")
    print(f"  backward  {tb * 1e3:8.3f} ms  {2 * fl / tb * 1e-9:6.1f} GFLOP/s")


if __name__ == "__main__":
    main()
