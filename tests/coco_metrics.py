"""The library's detection metrics against pycocotools on the same boxes, and its mask
(instance segmentation) metrics on the same bitmaps.

usage: coco_metrics.py HELPER   (HELPER: the built tests/coco_eval_helper)

Each case is scored by lib/task/detect_eval.c (through HELPER) and by pycocotools' COCOeval
(iouType 'bbox' for boxes, 'segm' for masks); mAP50, mAP50-95 and every class's AP50 and AP50-95
must agree to 1e-4 (they agree to float rounding; the largest difference of each kind is
printed).  Exit 77 (meson: skipped) only when pycocotools cannot be imported.

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

The masks ('segm'): random ellipses, star polygons and blobs (unions of discs) rasterised at
64 x 64 .. 160 x 160, several classes, detections that are jittered copies of the objects (some
twice, some exact, some of another class) and false positives, an image of 50 objects and 300
detections, empty masks, duplicated objects, images without objects or without detections, and
equal scores.  pycocotools gets the same bitmaps as RLE (pycocotools.mask.encode), iscrowd 0,
area 'all', maxDets [1, 10, 1000] (no image has 1000 detections of a class, checked), so
neither side drops detections.  What the fixtures keep to:
- Mask IoUs are quotients of pixel counts: the library rounds them to float, pycocotools to
  double.  As for boxes, no IoU lies within 1e-6 of a threshold unless it is that decimal
  exactly, and then both sides take it as a hit (checked); and no two different IoUs of one
  detection with two objects of its class, at 0.5 or more, round to the same float (checked), so
  the "highest IoU" is the same object on both sides.
- Equal scores are allowed here: both sides rank them by image (in id order, the order the
  helper gets them in) and then by their order in the image (the helper's input order, which
  is the order of the detections given to loadRes).
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
    from pycocotools import mask as mask_util
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
    def lines():
        # grouped by image, as the helper wants; floats print exactly (1/16 and 2^-20 steps)
        for img, c, box, s in sorted(boxes, key=lambda b: b[0]):
            coords = " ".join(repr(v) for v in box)
            yield f"gt {img} {c} {coords}\n" if s is None else f"det {img} {c} {coords} {s!r}\n"
    return run_helper(helper, NC, lines(), tmp)


def run_helper(helper, nc, lines, tmp):
    """HELPER on a file of "classes NC" and the given lines; its figures as a dict."""
    path = os.path.join(tmp, "objects.txt")
    with open(path, "w") as f:
        f.write(f"classes {nc}\n")
        f.writelines(lines)
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


# ---- masks ---------------------------------------------------------------------------------
# classes: 0 and 4 common, 1 in the ground truth but never predicted, 2 predicted but never in
# the ground truth, 3 small objects
SEGM_NC = 5


def render(shape, w, h):
    """A shape (kind, parameters) as an h x w bitmap of 0/1 bytes, sampled at pixel centres."""
    y, x = np.mgrid[0:h, 0:w] + 0.5
    kind, prm = shape
    if kind == "ellipse":
        cx, cy, a, b, th = prm
        u, v = (x - cx) * np.cos(th) + (y - cy) * np.sin(th), -(x - cx) * np.sin(th) + (y - cy) * np.cos(th)
        m = (u / a) ** 2 + (v / b) ** 2 <= 1
    elif kind == "blob":
        m = np.zeros((h, w), bool)
        for cx, cy, r in prm:
            m |= (x - cx) ** 2 + (y - cy) ** 2 <= r * r
    elif kind == "polygon":  # even-odd rule over the edges
        m = np.zeros((h, w), bool)
        n = len(prm)
        for k in range(n):
            (x0, y0), (x1, y1) = prm[k], prm[(k + 1) % n]
            if y0 == y1:
                continue
            crosses = (y0 <= y) != (y1 <= y)
            xc = x0 + (y - y0) * (x1 - x0) / (y1 - y0)
            m ^= crosses & (x < xc)
    elif kind == "rect":
        x0, y0, x1, y1 = prm
        m = (x >= x0) & (x < x1) & (y >= y0) & (y < y1)
    else:
        m = np.zeros((h, w), bool)  # "empty"
    return m.astype(np.uint8)


def random_shape(rng, w, h, small=False):
    cx, cy = rng.uniform(0, w), rng.uniform(0, h)
    size = rng.uniform(1.5, 5) if small else rng.uniform(4, min(w, h) / 3)
    kind = rng.choice(["ellipse", "polygon", "blob"])
    if kind == "ellipse":
        return kind, (cx, cy, size * rng.uniform(0.5, 1.5), size * rng.uniform(0.5, 1.5),
                      rng.uniform(0, np.pi))
    if kind == "blob":
        return kind, [(cx + rng.uniform(-size, size), cy + rng.uniform(-size, size),
                       size * rng.uniform(0.4, 1)) for _ in range(rng.randint(2, 4))]
    n = rng.randint(5, 10)
    angles = sorted(rng.uniform(0, 2 * np.pi) for _ in range(n))
    return kind, [(cx + size * r * np.cos(a), cy + size * r * np.sin(a))
                  for a, r in ((a, rng.uniform(0.5, 1.5)) for a in angles)]


def jitter(rng, shape, j):
    """The shape moved and resized by up to j of its size: a detection of it."""
    kind, prm = shape
    f = lambda v: v * (1 + rng.uniform(-j, j))  # noqa: E731
    if kind == "ellipse":
        cx, cy, a, b, th = prm
        return kind, (cx + rng.uniform(-j, j) * a, cy + rng.uniform(-j, j) * b, f(a), f(b),
                      th + rng.uniform(-j, j))
    if kind == "blob":
        return kind, [(cx + rng.uniform(-j, j) * r, cy + rng.uniform(-j, j) * r, f(r))
                      for cx, cy, r in prm]
    xs, ys = [p[0] for p in prm], [p[1] for p in prm]
    span = max(max(xs) - min(xs), max(ys) - min(ys), 1)
    dx, dy = rng.uniform(-j, j) * span, rng.uniform(-j, j) * span
    return kind, [(x + dx + rng.uniform(-j, j) * span / 4, y + dy + rng.uniform(-j, j) * span / 4)
                  for x, y in prm]


def random_segm_case(seed=20240612, images=40, first_image=1000):
    """Seeded random instances: (image id, class, bitmap, score or None for ground truth) and
    the images' (id, w, h)."""
    rng = random.Random(seed)
    objs, imgs = [], []
    for img in range(first_image, first_image + images + 1):
        crowded = img == first_image + images  # the last one: 50 objects, 300 detections
        w, h = (160, 160) if crowded else (rng.randint(64, 160), rng.randint(64, 160))
        imgs.append((img, w, h))
        dets = []
        for _ in range(50 if crowded else rng.choice([0, 0, 1, 3, 5, 8, 12])):
            c = rng.choice([0, 0, 4, 1, 3])
            g = random_shape(rng, w, h, small=c == 3)
            gm = render(g, w, h)
            objs.append((img, c, gm, None))
            if c == 1:
                continue  # class 1 is never predicted
            for _ in range(rng.choice([0, 1, 1, 1, 2, 3] if crowded else [0, 1, 1, 1, 2])):
                k = rng.random()
                dc = c if rng.random() > 0.1 else rng.choice([0, 2, 4])
                dets.append((img, dc, gm.copy() if k < 0.05 else
                             render(jitter(rng, g, rng.uniform(0.02, 0.3)), w, h), 0.0))
        for _ in range(300 - len(dets) if crowded else rng.choice([0, 1, 2, 4])):
            dets.append((img, rng.choice([0, 2, 3, 4]), render(random_shape(rng, w, h), w, h), 0.0))
        objs += dets[:300]
    # scores: multiples of 2^-20, with some equal ones (within and across images)
    ks = [rng.randrange(1, 1 << 20) for _ in objs]
    for k in range(0, len(ks) - 40, 37):
        ks[k + rng.randrange(1, 40)] = ks[k]
    objs = [(i, c, m, None if s is None else k / (1 << 20)) for (i, c, m, s), k in zip(objs, ks)]
    return objs, imgs


def edge_segm_case(first_image=900):
    """Hand-made masks: duplicated objects, empty masks, IoU 0.5 and 0.75 exactly, equal
    scores, images without objects, without detections, and with nothing."""
    i1, i2, i3, i4, i5 = range(first_image, first_image + 5)
    ell = render(("ellipse", (30, 30, 14, 9, 0.4)), 64, 64)
    ell2 = render(("ellipse", (32, 31, 13, 9, 0.5)), 64, 64)
    empty = lambda w, h: np.zeros((h, w), np.uint8)  # noqa: E731
    rect = lambda w, h, *b: render(("rect", b), w, h)  # noqa: E731
    s = [k / 64 for k in (60, 50, 40, 30, 20)]
    objs = [
        # image 1: one object given twice (equal IoUs: pycocotools takes the later one), found
        # exactly (score 60/64) and jittered (50/64), plus a class-4 object found at 40/64
        (i1, 0, ell, None), (i1, 0, ell.copy(), None),
        (i1, 0, ell.copy(), s[0]), (i1, 0, ell2, s[1]),
        (i1, 4, rect(64, 64, 5, 50, 20, 60), None), (i1, 4, rect(64, 64, 6, 50, 20, 61), s[2]),
        # image 2 (80 x 64): an empty object and an empty detection; small objects found at IoU
        # 0.5 (4 / 8) and 0.75 (12 / 16) exactly, the first with the score of image 1's best
        (i2, 0, empty(80, 64), None), (i2, 0, empty(80, 64), s[3]),
        (i2, 3, rect(80, 64, 10, 10, 12, 12), None), (i2, 3, rect(80, 64, 10, 10, 12, 14), s[0]),
        (i2, 3, rect(80, 64, 40, 40, 44, 44), None), (i2, 3, rect(80, 64, 40, 40, 44, 43), s[2]),
        # image 3 (70 x 100): no object; false positives with equal scores, one tying image 2's
        (i3, 0, rect(70, 100, 0, 0, 30, 30), s[4]), (i3, 4, rect(70, 100, 5, 5, 9, 9), s[4]),
        (i3, 3, rect(70, 100, 50, 80, 53, 83), s[2]),
        # image 4 (64 x 80): objects nobody finds; image 5: nothing
        (i4, 0, rect(80, 64, 20, 20, 40, 40), None), (i4, 1, rect(80, 64, 50, 5, 70, 30), None),
    ]
    return objs, [(i1, 64, 64), (i2, 80, 64), (i3, 70, 100), (i4, 80, 64), (i5, 96, 64)]


def check_segm_fixture(name, objs, imgs):
    """The conditions under which the two sides must agree (see the module's docstring)."""
    size = {i: (w, h) for i, w, h in imgs}
    per = {}
    for img, c, m, s in objs:
        assert m.shape == size[img][::-1], f"{name}: image {img}: mask of size {m.shape}"
        if s is not None:
            per[img, c] = per.get((img, c), 0) + 1
    assert max(per.values()) < 1000, f"{name}: 1000 detections of one class in one image"
    thrs = [Fraction(50 + 5 * k, 100) for k in range(10)]
    for img, *_ in imgs:
        for c in range(SEGM_NC):
            g = [m.ravel().astype(np.int64) for i, k, m, s in objs if i == img and k == c and s is None]
            d = [m.ravel().astype(np.int64) for i, k, m, s in objs if i == img and k == c and s is not None]
            if not g or not d:
                continue
            g, d = np.stack(g), np.stack(d)
            inter = d @ g.T
            union = d.sum(1)[:, None] + g.sum(1)[None, :] - inter
            for a in range(len(d)):
                seen = {}
                for b in range(len(g)):
                    v = Fraction(int(inter[a, b]), int(union[a, b])) if inter[a, b] else Fraction(0)
                    f32 = np.float32(v.numerator) / np.float32(v.denominator)
                    for k, t in enumerate(thrs):
                        assert v == t or abs(v - t) > Fraction(1, 10**6),                             f"{name}: image {img}: IoU {float(v)} next to threshold {float(t)}"
                        assert v != t or (float(v) >= IOU_THRS[k] and
                                          f32 >= np.float32((50 + 5 * k) / 100)), (name, img, v)
                    if v >= Fraction(1, 2):
                        assert seen.setdefault(f32, v) == v, \
                            f"{name}: image {img}: IoUs {seen[f32]} and {v} are one float"


def runs(m):
    """Row-major run lengths of a bitmap, background first."""
    flat = m.ravel()
    edges = np.flatnonzero(np.diff(flat)) + 1
    r = np.diff(np.concatenate(([0], edges, [flat.size])))
    return ([0] if flat[0] else []) + [int(v) for v in r]


def ours_segm(helper, objs, tmp):
    def lines():
        for img, c, m, s in sorted(objs, key=lambda o: o[0]):  # stable: order within an image kept
            r = runs(m)
            head = f"mgt {img} {c}" if s is None else f"mdet {img} {c} {s!r}"
            yield f"{head} {m.shape[1]} {m.shape[0]} {len(r)} {' '.join(map(str, r))}\n"
    return run_helper(helper, SEGM_NC, lines(), tmp)


def coco_segm(objs, imgs):
    """pycocotools' 'segm' evaluation of the same bitmaps as RLE."""
    enc = lambda m: mask_util.encode(np.asfortranarray(m))  # noqa: E731
    anns = []
    for k, (img, c, m, _) in enumerate(o for o in objs if o[3] is None):
        rle = enc(m)
        anns.append({"id": k + 1, "image_id": img, "category_id": c + 1, "segmentation": rle,
                     "area": float(m.sum()), "bbox": [float(v) for v in mask_util.toBbox(rle)],
                     "iscrowd": 0})
    dets = [{"image_id": img, "category_id": c + 1, "segmentation": enc(m), "score": s}
            for img, c, m, s in objs if s is not None]
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO()
        gt.dataset = {"images": [{"id": i, "width": w, "height": h} for i, w, h in imgs],
                      "annotations": anns,
                      "categories": [{"id": c + 1, "name": str(c)} for c in range(SEGM_NC)]}
        gt.createIndex()
        ev = COCOeval(gt, gt.loadRes(dets), "segm")
        ev.params.maxDets = [1, 10, 1000]
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    p = ev.eval["precision"][:, :, :, 0, 2]  # T x R x K at area 'all', 1000 detections
    per = {c: (float(np.mean(p[0, :, c])), float(np.mean(p[:, :, c]))) for c in range(SEGM_NC)}
    # stats[1] is AP50 at maxDets[2]; stats[0] (AP50-95) is asked at 100 detections, which
    # maxDets lacks (-1), so it is summarised here as summarize() does at 1000
    return {"map50": float(ev.stats[1]), "map50_95": float(np.mean(p[p > -1])), "class": per}


def compare(name, a, b, nc, with_gt, bad):
    """Prints the two sides' figures; appends the disagreements to bad; returns the largest
    difference."""
    if a["classes_with_gt"] != with_gt:
        bad.append(f"{name}: {a['classes_with_gt']} classes with ground truth, not {with_gt}")
    rows = [("mAP50", a["map50"], b["map50"]), ("mAP50-95", a["map50_95"], b["map50_95"])]
    for c in range(nc):
        rows += [(f"class {c} AP50", a["class"][c][0], b["class"][c][0]),
                 (f"class {c} AP50-95", a["class"][c][1], b["class"][c][1])]
    for what, x, y in rows:
        ok = abs(x - y) <= TOL
        print(f"  {what:18s} ours {x: .6f}  pycocotools {y: .6f}{'' if ok else '  DIFFERENT'}")
        if not ok:
            bad.append(f"{name}: {what} {x:.6f} vs {y:.6f}")
    return max(abs(x - y) for _, x, y in rows)


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    e_boxes, e_imgs = edge_case()
    r_boxes, r_imgs = random_case()
    s_boxes, s_imgs = recall_steps_case()
    cases = [("edge cases", e_boxes, e_imgs), ("recall steps", s_boxes, s_imgs),
             ("random", r_boxes, r_imgs),
             ("all three", e_boxes + s_boxes + r_boxes, [*e_imgs, *s_imgs, *r_imgs])]
    bad, worst = [], {"bbox": 0.0, "segm": 0.0}
    with tempfile.TemporaryDirectory(prefix="vt-coco-") as tmp:
        for name, boxes, imgs in cases:
            check_fixture(name, boxes)
            a, b = ours(sys.argv[1], boxes, tmp), coco(boxes, imgs)
            with_gt = sum(1 for c in range(NC) if any(s is None and k == c for _, k, _, s in boxes))
            ndet = sum(s is not None for *_, s in boxes)
            print(f"{name}: {len(boxes) - ndet} ground truths, {ndet} detections, "
                  f"{len(imgs)} images, {with_gt} classes with ground truth")
            worst["bbox"] = max(worst["bbox"], compare(name, a, b, NC, with_gt, bad))
        e_objs, e_imgs = edge_segm_case()
        r_objs, r_imgs = random_segm_case()
        for name, objs, imgs in [("segm edge cases", e_objs, e_imgs), ("segm random", r_objs, r_imgs),
                                 ("segm both", e_objs + r_objs, e_imgs + r_imgs)]:
            check_segm_fixture(name, objs, imgs)
            a, b = ours_segm(sys.argv[1], objs, tmp), coco_segm(objs, imgs)
            with_gt = len({c for _, c, _, s in objs if s is None})
            ndet = sum(s is not None for *_, s in objs)
            print(f"{name}: {len(objs) - ndet} ground truth masks, {ndet} detections, "
                  f"{len(imgs)} images, {with_gt} classes with ground truth")
            worst["segm"] = max(worst["segm"], compare(name, a, b, SEGM_NC, with_gt, bad))
    print(f"max |ours - pycocotools|: bbox {worst['bbox']:.3g}, segm {worst['segm']:.3g}")
    if bad:
        print("FAIL:\n  " + "\n  ".join(bad))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
