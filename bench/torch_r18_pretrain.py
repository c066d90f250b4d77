#!/usr/bin/env python3
"""Pretrain torchvision's ResNet-18 in PyTorch on an ImageFolder and export it to ONNX with its
batch norms kept (TrainingMode.PRESERVE), for bench/transfer.sh: the stand-in for an ImageNet
checkpoint (none can be downloaded here) that `vt import` reads and det-r18 / seg-r18 start
from.  AdamW lr 1e-3, random horizontal flips, images resized to --imgsz.  Prints the val
top-1.

usage: torch_r18_pretrain.py DATA OUT.onnx [--epochs 5] [--imgsz 64] [--batch 32]
                             [--threads 2] [--seed 1]
"""
import argparse
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torchvision
from PIL import Image  # Debian's python3-pil


def load(root, split, imgsz):
    classes = sorted(os.listdir(os.path.join(root, "train")))
    xs, ys = [], []
    for k, c in enumerate(classes):
        d = os.path.join(root, split, c)
        for name in sorted(os.listdir(d)):
            im = Image.open(os.path.join(d, name)).convert("RGB").resize((imgsz, imgsz),
                                                                          Image.BILINEAR)
            xs.append(np.asarray(im, dtype=np.float32).transpose(2, 0, 1) / 255.0)
            ys.append(k)
    return torch.tensor(np.stack(xs)), torch.tensor(ys), classes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("out")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--imgsz", type=int, default=64)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    xt, yt, classes = load(a.data, "train", a.imgsz)
    xv, yv, _ = load(a.data, "val", a.imgsz)
    model = torchvision.models.resnet18(num_classes=len(classes))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=5e-4)
    lossf = nn.CrossEntropyLoss()
    t0 = time.time()
    for ep in range(a.epochs):
        model.train()
        perm = torch.randperm(len(xt))
        for i in range(0, len(xt) - 1, a.batch):
            idx = perm[i:i + a.batch]
            x = xt[idx]
            flip = torch.rand(len(idx)) < 0.5
            x[flip] = x[flip].flip(3)
            opt.zero_grad()
            loss = lossf(model(x), yt[idx])
            loss.backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            top1 = (model(xv).argmax(1) == yv).float().mean().item()
        print("epoch %d/%d loss %.4f val top1 %.4f (%.0f s)" % (ep + 1, a.epochs, loss.item(),
                                                                top1, time.time() - t0),
              flush=True)
    model.eval()
    torch.onnx.export(model, torch.zeros(1, 3, a.imgsz, a.imgsz), a.out, opset_version=13,
                      training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False,
                      input_names=["images"], output_names=["logits"])
    print("torch %s resnet18 top1 %.4f" % (torch.__version__, top1))


if __name__ == "__main__":
    main()
