#!/usr/bin/env python3
"""PyTorch side of bench/cls_vs_torch.sh: trains the GUIDE's small CNN (the library's cnn-small:
conv3x3-32 BN ReLU maxpool2, conv3x3-64 BN ReLU maxpool2, conv3x3-128 BN ReLU, global average
pool, linear) on an ImageFolder of grayscale images with the library's classification recipe
written in plain PyTorch, and prints top-1 on val after every epoch.

The recipe (the library's defaults; each one a flag, so an ablation changes one thing):
  SGD, lr0 0.01, momentum 0.9, Nesterov, weight decay 5e-4 on conv/linear weights only,
  learning rate per step: linear warm-up over the first epoch, cosine decay to lrf = 0.01 at
  the last epoch; batch 32, reshuffled every epoch; cross-entropy; inputs pixel / 255;
  augmentation: horizontal flip with p = 0.5 and a brightness gain in [1 - hsv_v, 1 + hsv_v]
  (what the library's HSV augmentation does to a grayscale image; 0 = off).
  PyTorch's default initialisation and batch-norm settings (momentum 0.1, eps 1e-5).

usage: torch_cls_peer.py DATA [--epochs 10] [--batch 32] [--threads 2] [--seed 1] [...]
"""
import argparse
import math
import os
import time

import torch
import torch.nn as nn
from PIL import Image

from torch_small_cnn import small_cnn


def load_split(root):
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    xs, ys = [], []
    for k, c in enumerate(classes):
        d = os.path.join(root, c)
        for f in sorted(os.listdir(d)):
            im = Image.open(os.path.join(d, f)).convert("L")
            xs.append(torch.frombuffer(bytearray(im.tobytes()), dtype=torch.uint8)
                      .view(1, im.height, im.width))
            ys.append(k)
    return torch.stack(xs), torch.tensor(ys), classes


def small_cnn_init(nc, init):
    net = small_cnn(nc)  # the network of bench/torch_small_cnn.py, PyTorch's default init
    if init == "he":  # the library's: He normal (conv), normal 1/sqrt(fan_in) (linear), bias 0
        for m in net.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.normal_(m.weight, 0.0, math.sqrt(2.0 / (m.weight[0].numel())))
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0.0, math.sqrt(1.0 / m.in_features))
                nn.init.zeros_(m.bias)
    return net


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lr0", type=float, default=0.01)
    ap.add_argument("--lrf", type=float, default=0.01)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--nesterov", type=int, default=1)
    ap.add_argument("--weight-decay", type=float, default=5e-4)
    ap.add_argument("--decay-all", type=int, default=0, help="1: decay BN and biases too")
    ap.add_argument("--warmup-epochs", type=float, default=1.0)
    ap.add_argument("--fliplr", type=float, default=0.5)
    ap.add_argument("--hsv-v", type=float, default=0.4)
    ap.add_argument("--init", choices=["torch", "he"], default="torch")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    xtr, ytr, classes = load_split(os.path.join(a.data, "train"))
    xva, yva, _ = load_split(os.path.join(a.data, "val"))
    net = small_cnn_init(len(classes), a.init)
    decay, other = [], []
    for m in net.modules():
        for n, p in m.named_parameters(recurse=False):
            (decay if n == "weight" and isinstance(m, (nn.Conv2d, nn.Linear)) else other).append(p)
    groups = [{"params": decay, "weight_decay": a.weight_decay},
              {"params": other, "weight_decay": a.weight_decay if a.decay_all else 0.0}]
    opt = torch.optim.SGD(groups, lr=a.lr0, momentum=a.momentum, nesterov=bool(a.nesterov))
    lossf = nn.CrossEntropyLoss()
    n = len(ytr)
    nb = (n + a.batch - 1) // a.batch
    warm = a.warmup_epochs * nb
    step, train_s, last = 0, 0.0, 0.0
    for ep in range(a.epochs):
        net.train()
        t0 = time.perf_counter()
        perm = torch.randperm(n)
        for b in range(nb):
            idx = perm[b * a.batch:(b + 1) * a.batch]
            x = xtr[idx].float()
            if a.hsv_v > 0:
                g = 1.0 + (torch.rand(len(idx), 1, 1, 1) * 2 - 1) * a.hsv_v
                x = torch.clamp(torch.round(x * g), max=255.0)
            if a.fliplr > 0:
                f = torch.rand(len(idx)) < a.fliplr
                x[f] = x[f].flip(-1)
            x = x / 255.0
            xe = step / nb
            lr = a.lr0 * (1 - (1 - a.lrf) * (1 - math.cos(math.pi * xe / a.epochs)) / 2)
            if warm >= 1 and step < warm:
                lr *= (step + 1) / warm
            for gr in opt.param_groups:
                gr["lr"] = lr
            opt.zero_grad(set_to_none=True)
            loss = lossf(net(x), ytr[idx])
            loss.backward()
            opt.step()
            step += 1
        train_s += time.perf_counter() - t0
        net.eval()
        with torch.no_grad():
            pred = torch.cat([net(xva[i:i + 256].float() / 255.0).argmax(1)
                              for i in range(0, len(yva), 256)])
        last = (pred == yva).float().mean().item()
        print(f"epoch {ep + 1:3d}  loss {loss.item():.4f}  top1 {last:.4f}", flush=True)
    print(f"torch {torch.__version__} top1 {last:.4f} img/s {a.epochs * n / train_s:.1f}", flush=True)


if __name__ == "__main__":
    main()
