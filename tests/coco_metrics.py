"""The library's detection metrics against pycocotools on the same boxes.

usage: coco_metrics.py HELPER   (HELPER: the built tests/coco_eval_helper)

Each case is scored by lib/train/detect_eval.c (through HELPER) and by pycocotools' COCOeval
(iouType 'bbox'); mAP50, mAP50-95 and every class's AP50 and AP50-95 must agree to 1e-4.
Exit 77 (meson: skipped) only when pycocotools cannot be imported.

What is compared, and why the fixtures are as they are:
- pycocotools' figures are stats[1] (AP50) and stats[0] (AP50-95) at area 'all' and maxDets
  100: the mean over the categories of the GT file with at least one ground truth (a category
  without any has precision -1 and is left out of the mean).  The library leaves classes without
  ground truth out the same way (AP -1), and every class is listed in the categories here.
- pycocotools keeps the 100 best detections per image and class; the library keeps all of
  them.  The fixtures stay under 100 per image and class (checked).
- Scores are all different (checked): equal scores may be ranked differently by the two sides.
- The library computes IoU in float, pycocotools in double: no IoU lies within 1e-6 of a
  threshold 0.50 .. 0.95 unless it is that decimal exactly (as 0.5 and 0.75 of the tiny integer
  boxes are), which both sides then round to their own rounding of the threshold (checked).
  The boxes are small enough for float areas to be exact (checked).
- Coordinates are multiples of 1/16 and scores multiples of 2^-20, so the text file the helper
  reads carries exactly the values pycocotools gets.
"""

import contextlib
import io
import os
import random
import subprocess
import sys
import tempfile
from fractions import Fraction

try:
    import numpy as np
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval
except ImportError as e:
    print(f"SKIP: pycocotools is not importable ({e}); scripts/install-deps.sh installs it")
    sys.exit(77)

TOL = 1e-4
# classes: 0 common, 1 in the ground truth but never predicted, 2 predicted but never in the
# ground truth, 3 tiny boxes
NC = 4
IOU_THRS = np.linspace(0.5, 0.95, 10)  # the same values as COCOeval's Params


def q16(v):
    return round(v * 16) / 16


# Hand-made images, one box a line: IMAGE CLASS gt|SCORE X0 Y0 X1 Y1.
EDGE_BOXES = """
# image 1: one object found three times (IoU 0.95, 0.80, 0.72: the lower-scored duplicates
# are false positives at the thresholds the first one matched), one at IoU 0.7497 (just
# under 0.75), a class-1 object nobody predicts, a class-2 box with no class-2 ground truth
# anywhere
1 0 gt   10 10 60 60
1 0 0.90 11 10 60 61.5
1 0 0.85 14 12 62 63.5
1 0 0.30 2.5 4 58 62
1 0 gt   100 100 150 170
1 0 0.70 106 104 154 168
1 1 gt   20 120 80 180
1 2 0.80 120 20 160 60
# image 2: two overlapping objects, the best-scored detection overlaps both (IoU 0.54 and
# 0.90: it must take the second), the other one takes the first (0.92); tiny boxes at IoU 1,
# 0.5 (4 / 8) and 0.75 (12 / 16) exactly, and one at IoU 0.39 (a false positive and a miss)
2 0 gt   30 30 90 90
2 0 gt   50 30 110 90
2 0 0.95 48 31 107 90
2 0 0.60 29 29 88 91
2 3 gt   50 50 53 53
2 3 0.88 50 50 53 53
2 3 gt   60 60 63 62
2 3 0.77 61 60 64 62
2 3 gt   70 70 74 74
2 3 0.66 70 70 74 73
2 3 gt   80 80 82 82
2 3 0.55 80.5 80.5 82.5 82.5
# image 3: no ground truth, a confident false positive of class 0 and a tiny one of class 3
3 0 0.97 5 5 45 45
3 3 0.40 7 7 9 9
# image 4: nothing at all (listed in the images); image 5: a class-0 object predicted as
# class 2 only, and one found at IoU 0.92
5 0 gt   40 40 100 80
5 2 0.75 41 40 100 81
5 0 gt   120 20 180 100
5 0 0.45 122 21 181 102
# image 6: a detection with the same IoU (90 / 110) with two objects; COCOeval gives it the
# later one, so the next detection, which is exactly the earlier one, matches at IoU 1
6 0 gt   200 0 210 10
6 0 gt   202 0 212 10
6 0 0.50 201 0 211 10
6 0 0.35 200 0 210 10
"""


def edge_case():
    """EDGE_BOXES as (image id, class, box, score or None for ground truth), scores rounded to
    multiples of 2^-20."""
    b = []
    for line in EDGE_BOXES.splitlines():
        if line and not line.startswith("#"):
            img, c, s, *box = line.split()
            s = None if s == "gt" else round(float(s) * (1 << 20)) / (1 << 20)
            b.append((int(img), int(c), tuple(float(v) for v in box), s))
    return b, range(1, 7)


def recall_steps_case(first_image=100):
    """20 objects of class 0 (two per image), detected in an order that reaches recall 0.35,
    0.70 and 0.95 exactly just before false positives: COCOeval samples the precision at
    np.linspace(0, 1, 101), whose 0.35, 0.70 and 0.95 lie one ulp above those recalls."""
    b, score = [], 1 - 1 / 128  # odd multiples of 1/128: none equal an edge case's score
    objs = [(first_image + k // 2, (k % 2 * 50.0, 0.0, k % 2 * 50.0 + 30, 30.0)) for k in range(20)]
    for hits, misses in [(7, 3), (7, 2), (5, 2), (1, 0)]:
        for _ in range(hits):
            img, box = objs.pop(0)
            b += [(img, 0, box, None), (img, 0, box, score)]
            score -= 1 / 64
        for m in range(misses):
            b.append((first_image + m, 0, (200.0, 200.0, 230.0, 230.0), score))
            score -= 1 / 64
    return b, range(first_image, first_image + 10)


def random_case(seed=20240611, images=60, first_image=10):
    """Seeded random boxes: objects of 2-120 px of classes 0, 1, 3, found (jittered) or not,
    some twice, plus false positives of classes 0, 2, 3; a few images are empty."""
    rng = random.Random(seed)
    b = []
    for img in range(first_image, first_image + images):
        for _ in range(rng.choice([0, 0, 1, 3, 5, 8])):
            c = rng.choice([0, 0, 1, 3])
            w, h = rng.uniform(2, 120), rng.uniform(2, 120)
            if c == 3:
                w, h = rng.uniform(2, 8), rng.uniform(2, 8)
            x, y = rng.uniform(0, 500), rng.uniform(0, 500)
            g = tuple(q16(v) for v in (x, y, x + max(w, 1), y + max(h, 1)))
            b.append((img, c, g, None))
            if c == 1:
                continue  # class 1 is never predicted
            for _ in range(rng.choice([0, 1, 1, 1, 2])):
                j = rng.uniform(0.02, 0.25)
                d = [g[0] + rng.uniform(-j, j) * w, g[1] + rng.uniform(-j, j) * h,
                     g[2] + rng.uniform(-j, j) * w, g[3] + rng.uniform(-j, j) * h]
                d = tuple(q16(v) for v in d)
                if d[2] - d[0] >= 1 and d[3] - d[1] >= 1:
                    b.append((img, c, d, 0.0))
        for _ in range(rng.choice([0, 1, 2, 4])):
            c = rng.choice([0, 2, 3])
            x, y = rng.uniform(0, 500), rng.uniform(0, 500)
            w, h = rng.uniform(2, 100), rng.uniform(2, 100)
            b.append((img, c, tuple(q16(v) for v in (x, y, x + w, y + h)), 0.0))
    # distinct scores, exactly representable in float and double
    ks = rng.sample(range(1, 1 << 20), sum(s is not None for *_, s in b))
    it = iter(ks)
    return [(i, c, box, None if s is None else next(it) / (1 << 20)) for i, c, box, s in b], \
        range(first_image, first_image + images)


def exact_iou(a, g):
    iw = min(a[2], g[2]) - max(a[0], g[0])
    ih = min(a[3], g[3]) - max(a[1], g[1])
    if iw <= 0 or ih <= 0:
        return Fraction(0)
    a, g = [tuple(Fraction(v) for v in x) for x in (a, g)]
    inter = (min(a[2], g[2]) - max(a[0], g[0])) * (min(a[3], g[3]) - max(a[1], g[1]))
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (g[2] - g[0]) * (g[3] - g[1]) - inter)


def check_fixture(name, boxes):
    """The conditions under which the two sides must agree (see the module's docstring)."""
    scores = [s for *_, s in boxes if s is not None]
    assert len(scores) == len(set(scores)), f"{name}: equal scores"
    per = {}
    for img, c, _, s in boxes:
        if s is not None:
            per[img, c] = per.get((img, c), 0) + 1
    assert max(per.values()) < 100, f"{name}: over 100 detections of one class in one image"
    for *_, box, _ in boxes:  # float areas (and sums of two) exact: under 2^23 sixteenths^2
        assert (box[2] - box[0]) * (box[3] - box[1]) * 256 < 1 << 23, (name, box)
    thrs = [Fraction(50 + 5 * k, 100) for k in range(10)]
    for img, c, d, s in boxes:
        if s is None:
            continue
        for img2, c2, g, s2 in boxes:
            if s2 is None and img2 == img and c2 == c:
                v = exact_iou(d, g)
                for k, t in enumerate(thrs):
                    assert v == t or abs(v - t) > Fraction(1, 10**6), \
                        f"{name}: IoU {float(v)} next to threshold {float(t)} ({d} vs {g})"
                    # an exact hit is a match on both sides (the library: float IoU against
                    # the float threshold; pycocotools: double IoU against linspace's value)
                    f32 = np.float32(v.numerator) / np.float32(v.denominator)
                    assert v != t or (float(v) >= IOU_THRS[k] and
                                      f32 >= np.float32((50 + 5 * k) / 100)), (name, d, g)


def ours(helper, boxes, tmp):
    path = os.path.join(tmp, "boxes.txt")
    with open(path, "w") as f:
        f.write(f"classes {NC}\n")
        # grouped by image, as the helper wants; floats print exactly (1/16 and 2^-20 steps)
        for img, c, box, s in sorted(boxes, key=lambda b: b[0]):
            coords = " ".join(repr(v) for v in box)
            f.write(f"gt {img} {c} {coords}\n" if s is None else f"det {img} {c} {coords} {s!r}\n")
    out = subprocess.run([helper, path], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"coco_eval_helper failed ({out.returncode}): {out.stderr}")
    r = {"class": {}}
    for line in out.stdout.splitlines():
        w = line.split()
        if w[0] == "class":
            r["class"][int(w[1])] = (float(w[2]), float(w[3]), int(w[4]))
        else:
            r[w[0]] = float(w[1])
    return r


def coco(boxes, image_ids):
    """pycocotools on the same boxes: corners -> [x, y, w, h], category id = class + 1 (any
    ids would do), annotation ids from 1 (COCOeval takes id 0 for 'no match')."""
    xywh = lambda b: [b[0], b[1], b[2] - b[0], b[3] - b[1]]  # noqa: E731
    anns = [{"id": k + 1, "image_id": img, "category_id": c + 1, "bbox": xywh(box),
             "area": (box[2] - box[0]) * (box[3] - box[1]), "iscrowd": 0}
            for k, (img, c, box, _) in enumerate(b for b in boxes if b[3] is None)]
    dets = [{"image_id": img, "category_id": c + 1, "bbox": xywh(box), "score": s}
            for img, c, box, s in boxes if s is not None]
    with contextlib.redirect_stdout(io.StringIO()):  # pycocotools reports progress on stdout
        gt = COCO()
        gt.dataset = {"images": [{"id": i} for i in image_ids], "annotations": anns,
                      "categories": [{"id": c + 1, "name": str(c)} for c in range(NC)]}
        gt.createIndex()
        ev = COCOeval(gt, gt.loadRes(dets), "bbox")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    p = ev.eval["precision"][:, :, :, 0, 2]  # T x R x K at area 'all', 100 detections
    per = {c: (float(np.mean(p[0, :, c])), float(np.mean(p[:, :, c]))) for c in range(NC)}
    return {"map50": float(ev.stats[1]), "map50_95": float(ev.stats[0]), "class": per}


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    e_boxes, e_imgs = edge_case()
    r_boxes, r_imgs = random_case()
    s_boxes, s_imgs = recall_steps_case()
    cases = [("edge cases", e_boxes, e_imgs), ("recall steps", s_boxes, s_imgs),
             ("random", r_boxes, r_imgs),
             ("all three", e_boxes + s_boxes + r_boxes, [*e_imgs, *s_imgs, *r_imgs])]
    bad = []
    with tempfile.TemporaryDirectory(prefix="vt-coco-") as tmp:
        for name, boxes, imgs in cases:
            check_fixture(name, boxes)
            a, b = ours(sys.argv[1], boxes, tmp), coco(boxes, imgs)
            with_gt = sum(1 for c in range(NC) if any(s is None and k == c for _, k, _, s in boxes))
            ndet = sum(s is not None for *_, s in boxes)
            print(f"{name}: {len(boxes) - ndet} ground truths, {ndet} detections, "
                  f"{len(imgs)} images, {with_gt} classes with ground truth")
            if a["classes_with_gt"] != with_gt:
                bad.append(f"{name}: {a['classes_with_gt']} classes with ground truth, "
                           f"not {with_gt}")
            rows = [("mAP50", a["map50"], b["map50"]), ("mAP50-95", a["map50_95"], b["map50_95"])]
            for c in range(NC):
                rows += [(f"class {c} AP50", a["class"][c][0], b["class"][c][0]),
                         (f"class {c} AP50-95", a["class"][c][1], b["class"][c][1])]
            for what, x, y in rows:
                ok = abs(x - y) <= TOL
                print(f"  {what:18s} ours {x: .6f}  pycocotools {y: .6f}"
                      f"{'' if ok else '  DIFFERENT'}")
                if not ok:
                    bad.append(f"{name}: {what} {x:.6f} vs {y:.6f}")
    if bad:
        print("FAIL:\n  " + "\n  ".join(bad))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
