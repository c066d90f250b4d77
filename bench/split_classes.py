#!/usr/bin/env python3
"""Make a dataset of some classes of another, for bench/transfer.sh: a new folder (the source is
only read) with the images whose objects all belong to CLASSES, their ids renumbered 0..k-1 in
the order given, and a data.yaml naming them.

  YOLO layout (data.yaml, images/{train,val}, labels/{train,val}): an image goes in when every
  label line has a class of CLASSES; images without labels (backgrounds) go in too, every other
  one, so each of two disjoint class lists gets half of them.
  ImageFolder (train/<class>/, val/<class>/): the class folders of CLASSES (names, not ids).

usage: split_classes.py SRC OUT --classes 0,1,2,3 [--train N] [--val N] [--offset 0|1]
  --train / --val: at most N images per split (YOLO: the first N in file order; ImageFolder:
  N per class).  --offset: which half of the backgrounds (0 even, 1 odd).
Python's standard library only; images are hard links where the file system allows, else copies.
"""
import argparse
import os
import shutil


def place(src, dst):
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def yolo_names(src):
    names, inside = {}, False
    with open(os.path.join(src, "data.yaml")) as f:
        for line in f:
            if line.startswith("names:"):
                inside = True
                continue
            if inside and line.startswith("  ") and ":" in line:
                k, v = line.strip().split(":", 1)
                names[int(k)] = v.strip()
            elif inside:
                inside = False
    return names


def split_yolo(src, out, classes, limits, offset):
    names = yolo_names(src)
    remap = {c: i for i, c in enumerate(classes)}
    counts = {}
    for split in ("train", "val"):
        idir, ldir = os.path.join(src, "images", split), os.path.join(src, "labels", split)
        kept, background = 0, 0
        for name in sorted(os.listdir(idir)):
            if limits[split] is not None and kept >= limits[split]:
                break
            stem = os.path.splitext(name)[0]
            lpath = os.path.join(ldir, stem + ".txt")
            lines = []
            if os.path.exists(lpath):
                with open(lpath) as f:
                    lines = [l.split() for l in f if l.strip()]
            if not lines:
                background += 1
                if background % 2 != offset:
                    continue
            elif any(int(l[0]) not in remap for l in lines):
                continue
            place(os.path.join(idir, name), os.path.join(out, "images", split, name))
            if lines:
                os.makedirs(os.path.join(out, "labels", split), exist_ok=True)
                with open(os.path.join(out, "labels", split, stem + ".txt"), "w") as f:
                    for l in lines:
                        f.write(" ".join([str(remap[int(l[0])])] + l[1:]) + "\n")
            kept += 1
        counts[split] = kept
    with open(os.path.join(out, "data.yaml"), "w") as f:
        f.write("train: images/train\nval: images/val\nnc: %d\nnames:\n" % len(classes))
        for i, c in enumerate(classes):
            f.write("  %d: %s\n" % (i, names.get(c, str(c))))
    return counts


def split_folder(src, out, classes, limits):
    counts = {}
    for split in ("train", "val"):
        n = 0
        for c in classes:
            cdir = os.path.join(src, split, c)
            files = sorted(os.listdir(cdir))
            if limits[split] is not None:
                files = files[:limits[split]]
            for name in files:
                place(os.path.join(cdir, name), os.path.join(out, split, c, name))
            n += len(files)
        counts[split] = n
    return counts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--classes", required=True)
    ap.add_argument("--train", type=int)
    ap.add_argument("--val", type=int)
    ap.add_argument("--offset", type=int, default=0)
    a = ap.parse_args()
    if os.path.exists(a.out):
        raise SystemExit("split_classes.py: %s exists; give a new folder" % a.out)
    limits = {"train": a.train, "val": a.val}
    classes = a.classes.split(",")
    if os.path.exists(os.path.join(a.src, "data.yaml")):
        counts = split_yolo(a.src, a.out, [int(c) for c in classes], limits, a.offset)
    else:
        counts = split_folder(a.src, a.out, classes, limits)
    print("%s: classes %s, train %d, val %d images" % (a.out, a.classes, counts["train"],
                                                       counts["val"]))


if __name__ == "__main__":
    main()
