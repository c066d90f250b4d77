"""ONNX export parity: every model family and size is exported, checked with
onnx.checker.check_model(full_check=True) and run in onnxruntime (CPU), and its outputs are
compared with the library's own on the same inputs: random tensors through vt_model_forward,
and real decoded images through the predict functions (classes, boxes after NMS, masks).

usage: onnx_parity.py [HELPER]   (HELPER: the built tests/forward_outputs_helper, which gives
every output of a model where vt_model_forward gives the first: iseg-n's mask coefficients and
prototypes are compared with it; without it those two are compared through the masks only)

Not a unittest module (its name does not start with "test", so the python suite does not run it
twice): meson runs it as the `onnx` test.  Exit 77 (meson: SKIP) only when numpy, onnx or
onnxruntime is not installed, or when this build has no ONNX export; scripts/install-deps.sh
installs them.  Models are trained for a step or two first, so the batch-norm statistics that
the export folds are not the initial 0 / 1; det-n and iseg-n are trained for a few epochs so
that they find boxes for the NMS comparison (and iseg-n masks that are not empty).
"""

import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

import vt_test_env  # noqa: F401  (sets up the import path and the library)

SKIP = 77
missing = []
try:
    import numpy as np
except ImportError:
    missing.append("numpy")
try:
    import onnx
    import onnx.checker
except ImportError:
    missing.append("onnx")
try:
    import onnxruntime as ort
except ImportError:
    missing.append("onnxruntime")
if missing:
    print("SKIP: python3 (%s) lacks %s; scripts/install-deps.sh installs them with pip"
          % (sys.executable, ", ".join(missing)))
    sys.exit(SKIP)

import visiontrain as vt  # noqa: E402

TOL = 1e-4          # max abs error / range of the library's output
IOU_MIN = 0.99
failures = []


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg)
    if not cond:
        failures.append(msg)


def read_png(path):
    """8-bit, non-interlaced gray / RGB / RGBA PNG (what vt_synth_generate writes) -> HxWxC."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = hdr
    c = {0: 1, 2: 3, 6: 4}.get(ctype)
    if depth != 8 or interlace or c is None:
        raise ValueError("%s: unsupported PNG (depth %d, colour type %d)" % (path, depth, ctype))
    raw = zlib.decompress(idat)
    stride = w * c
    out = np.zeros((h, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.int32)
    for y in range(h):
        ft = raw[y * (stride + 1)]
        line = np.frombuffer(raw, np.uint8, stride, y * (stride + 1) + 1).astype(np.int32)
        cur = np.zeros(stride, dtype=np.int32)
        for x in range(stride):
            a = cur[x - c] if x >= c else 0
            b = prev[x]
            cc = prev[x - c] if x >= c else 0
            if ft == 0:
                p = 0
            elif ft == 1:
                p = a
            elif ft == 2:
                p = b
            elif ft == 3:
                p = (a + b) // 2
            else:
                pa, pb, pc = abs(b - cc), abs(a - cc), abs(a + b - 2 * cc)
                p = a if pa <= pb and pa <= pc else b if pb <= pc else cc
            cur[x] = (line[x] + p) & 255
        out[y] = cur
        prev = cur
    return out.reshape(h, w, c)


def to_input(img, channels=3):
    """HxWx3 uint8 -> 1xCxHxW float32 in 0..1, the contract of the exported input (gray:
    0.299 R + 0.587 G + 0.114 B)."""
    f = img[:, :, :3].astype(np.float32)
    if channels == 1:
        f = (np.float32(0.299) * f[:, :, 0] + np.float32(0.587) * f[:, :, 1]
             + np.float32(0.114) * f[:, :, 2])[:, :, None]
    return (f * np.float32(1 / 255)).transpose(2, 0, 1)[None].copy()


def rel_err(ref, got):
    rng = float(ref.max() - ref.min())
    return float(np.abs(ref.astype(np.float64) - got).max()) / (rng if rng > 0 else 1.0)


def iou(a, b):
    iw = min(a[2], b[2]) - max(a[0], b[0])
    ih = min(a[3], b[3]) - max(a[1], b[1])
    if iw <= 0 or ih <= 0:
        return 0.0
    inter = iw * ih
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def session(path):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def trained(arch, data, task, imgsz, channels=3, **opts):
    """A new model of arch trained on data with opts (no run folder, no validation)."""
    with vt.Dataset(data, task=task) as ds:
        model = vt.Model(arch, ds.num_classes, imgsz=imgsz, channels=channels)
        with vt.Trainer(model, ds, save=0, val=0, workers=0, **opts) as t:
            t.run()
    return model


def export_checked(model, path, **opts):
    t0 = time.time()
    model.export(path, **opts)
    onnx.checker.check_model(path, full_check=True)
    meta = {p.key: p.value for p in onnx.load(path).metadata_props}
    desc = " ".join("%s=%s" % kv for kv in sorted(opts.items())) or "defaults"
    check(meta.get("arch") == model.arch and meta.get("imgsz") == str(model.imgsz)
          and "input" in meta and "outputs" in meta,
          "%s (%s): check_model(full_check=True) passes, metadata_props hold the contract "
          "(%.1f s)" % (model.arch, desc, time.time() - t0))
    return session(path)


def random_parity(model, sess, batch, seed):
    x = np.random.default_rng(seed).random((batch, model.channels, model.imgsz, model.imgsz),
                                           dtype=np.float32)
    ref = model.forward(x)
    got = sess.run(None, {"images": x})[0].reshape(ref.shape)
    e = rel_err(ref, got)
    check(e <= TOL, "%s: random tensors (batch %d): max abs error %.2e of the output range %.3g"
          % (model.arch, batch, e, float(ref.max() - ref.min())))
    return e


def images(root, sub, n):
    files = []
    for dirpath, _, names in os.walk(os.path.join(root, sub)):
        files += [os.path.join(dirpath, f) for f in sorted(names) if f.endswith(".png")]
    return sorted(files)[:n]


def classify_family(tmp, data, arch, opts, channels=3):
    with trained(arch, data, "classify", 32, channels, epochs=1, batch=4) as m:
        sess = export_checked(m, os.path.join(tmp, "%s-%d.onnx" % (arch, channels)), **opts)
        batch = 3 if opts.get("batch") == "dynamic" else int(opts.get("batch", 1))
        e = random_parity(m, sess, batch, 1)
        worst = 0.0
        for f in images(data, "val", 4):
            img = read_png(f)
            ref = np.array(m.classify(f), dtype=np.float32)   # the library decodes the file
            x = to_input(img, channels)
            if batch > 1:
                x = np.repeat(x, batch, axis=0)
            got = sess.run(None, {"images": x})[0][0]
            worst = max(worst, rel_err(ref, got))
        check(worst <= TOL, "%s (%d channels): decoded images vs vt_model_predict_file: max abs "
              "error %.2e of the probability range" % (arch, channels, worst))
        return e, worst


def segment_family(tmp, root, arch):
    with trained(arch, os.path.join(root, "data.yaml"), "segment", 64, epochs=1, batch=4) as m:
        sess = export_checked(m, os.path.join(tmp, arch + ".onnx"), batch="dynamic")
        e = random_parity(m, sess, 2, 2)
        worst, agree, total = 0.0, 0, 0
        for f in images(os.path.join(root, "images"), "val", 3):
            img = read_png(f)[:, :, :3]
            ref = m.forward(to_input(img))
            logits = sess.run(None, {"images": to_input(img)})[0]
            worst = max(worst, rel_err(ref, logits))
            mask = m.segment(img)
            best = logits[0].argmax(axis=0)
            # a pixel whose two best logits are closer than the tolerance may go either way
            top2 = np.sort(ref[0], axis=0)[-2:]
            clear = (top2[1] - top2[0]) > TOL * float(ref.max() - ref.min())
            agree += int(((best == mask) | ~clear).sum())
            total += mask.size
        check(worst <= TOL, "%s: decoded images: max abs error %.2e of the logit range"
              % (arch, worst))
        check(agree == total, "%s: argmax of the ONNX logits = vt_model_segment_pixels on %d of "
              "%d pixels" % (arch, agree, total))
        return e, worst


def gap_threshold(scores, q, cap):
    """The midpoint of the first gap of at least 1e-3 (relative) between two sorted distinct
    scores from the q-quantile up (then down), below cap."""
    u = np.unique(scores.astype(np.float64))
    u = u[u < cap]
    start = int(q * (len(u) - 1))
    order = list(range(start, len(u) - 1)) + list(range(start - 1, -1, -1))
    for i in order:
        if u[i + 1] - u[i] >= 1e-3 * u[i + 1]:
            return float("%.6g" % ((u[i] + u[i + 1]) / 2))
    return float("%.6g" % cap)


def detect_family(tmp, root, arch, epochs):
    with trained(arch, os.path.join(root, "data.yaml"), "detect", 64, epochs=epochs, batch=8,
                 optimizer="adamw", lr0=0.002, warmup_epochs=1) as m:
        sess = export_checked(m, os.path.join(tmp, arch + ".onnx"), batch="dynamic")
        e = random_parity(m, sess, 2, 3)
        files = images(os.path.join(root, "images"), "val", 6)
        imgs = [read_png(f)[:, :, :3] for f in files]
        worst = max(rel_err(m.forward(to_input(i)), sess.run(None, {"images": to_input(i)})[0])
                    for i in imgs)
        check(worst <= TOL, "%s: decoded images: raw head max abs error %.2e of its range"
              % (arch, worst))
        # A threshold that leaves real candidates: near the 90th percentile of the cells' best
        # scores over these images (an untrained head sits at the 0.01 prior everywhere), in a
        # gap between two scores, so that no box is within rounding of it (ONNX and the library
        # agree to ~1e-7, and a box at the threshold itself could go either way).
        best = []
        for i in imgs:
            h = m.forward(to_input(i))[0]
            best.append((1 / (1 + np.exp(-h[4:]))).max(axis=0).ravel())
        conf = gap_threshold(np.concatenate(best), 0.9, 0.25)
        iou_t = 0.5
        s2 = export_checked(m, os.path.join(tmp, arch + "-nms.onnx"), nms=1, conf="%.6g" % conf,
                            iou=iou_t, max_det=100)
        n_lib = n_match = n_raw = 0
        min_iou = 1.0
        for img in imgs:
            ref = m.detect(img, conf=float("%.6g" % conf), iou=iou_t, max_det=100)
            n_raw += len(m.detect(img, conf=float("%.6g" % conf), iou=1.0, max_det=100))
            boxes, scores, classes = s2.run(None, {"images": to_input(img)})
            n_lib += len(ref)
            used = set()
            for d in ref:
                cand = [(iou((d.x0, d.y0, d.x1, d.y1), boxes[k]), k) for k in range(len(boxes))
                        if k not in used and int(classes[k]) == d.index]
                if cand:
                    v, k = max(cand)
                    if v >= IOU_MIN and abs(float(scores[k]) - d.score) <= 1e-4:
                        used.add(k)
                        n_match += 1
                        min_iou = min(min_iou, v)
            check(len(boxes) == len(ref), "%s nms=1: %d boxes from onnxruntime, %d from "
                  "vt_model_detect_pixels" % (arch, len(boxes), len(ref)))
        check(n_lib > 0 and n_match == n_lib,
              "%s nms=1 (conf %.4g, iou %.2g): %d of %d library boxes matched (same class, "
              "IoU >= %.2f, score within 1e-4); lowest IoU %.6f"
              % (arch, conf, iou_t, n_match, n_lib, IOU_MIN, min_iou))
        # the trained det-n finds overlapping candidates, so NMS itself is compared too
        if epochs > 1:
            check(n_raw > n_lib, "%s: NMS at IoU %.2g suppressed %d of %d candidates"
                  % (arch, iou_t, n_raw - n_lib, n_raw))
        return e, worst, n_lib, min_iou


def all_outputs(model, x, tmp):
    """Every output of the library's predictor for the NCHW batch x (vt_model_forward gives
    output 0 only), through HELPER; None without it."""
    helper = sys.argv[1] if len(sys.argv) > 1 else None
    if not helper:
        return None
    d = tempfile.mkdtemp(dir=tmp)
    model.save(os.path.join(d, "m.vtm"))
    np.ascontiguousarray(x, dtype=np.float32).tofile(os.path.join(d, "in.f32"))
    r = subprocess.run([helper, os.path.join(d, "m.vtm"), os.path.join(d, "in.f32"),
                        str(len(x)), d], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError("%s exited %d: %s" % (helper, r.returncode, r.stderr.strip()))
    out = []
    for line in r.stdout.split("\n"):
        if line.startswith("out"):
            w = line.split()
            out.append(np.fromfile(os.path.join(d, w[0] + ".f32"), dtype=np.float32)
                       .reshape([int(v) for v in w[1:]]))
    return out


def got_shape(sess, name):
    """The last dimension of a graph output (a number) as the file declares it."""
    return [o.shape for o in sess.get_outputs() if o.name == name][0][-1]


def iseg_masks(coefs, protos, boxes, stride):
    """The exported nms=1 contract: per detection sigmoid(coefs @ protos) > 0.5 (the logit > 0)
    at prototype resolution inside its box (a mask pixel when its centre is in [x0, x1) x
    [y0, y1)); also the logits, to tell which pixels sit on the threshold."""
    k, mh, mw = protos.shape[1:]
    z = (coefs.astype(np.float64) @ protos.reshape(k, -1).astype(np.float64)).reshape(-1, mh, mw)
    cx = (np.arange(mw) + 0.5) * stride
    cy = (np.arange(mh) + 0.5) * stride
    inside = np.zeros(z.shape, dtype=bool)
    for i, b in enumerate(boxes):
        inside[i] = ((cy[:, None] >= b[1]) & (cy[:, None] < b[3]) & (cx[None] >= b[0])
                     & (cx[None] < b[2]))
    return (z > 0) & inside, z, inside


def instance_family(tmp, root, arch, epochs):
    """iseg-*: the three raw outputs (head as det-*, coefs, protos) on random tensors and
    decoded images; with nms=1 the detections as vt_model_instances_pixels gives them and
    their masks made from the exported coefs and protos against the library's."""
    # one warm-up epoch (the detectors' default is 3): one-epoch models must find objects
    with trained(arch, os.path.join(root, "data.yaml"), "instance", 64, epochs=epochs, batch=8,
                 optimizer="adamw", lr0=0.002, warmup_epochs=1) as m:
        sess = export_checked(m, os.path.join(tmp, arch + ".onnx"), batch="dynamic")
        names = [o.name for o in sess.get_outputs()]
        check(names == ["head", "coefs", "protos"], "%s: outputs %s" % (arch, names))
        meta = {p.key: p.value for p in onnx.load(os.path.join(tmp, arch + ".onnx"))
                .metadata_props}
        stride = float(meta.get("mask_stride", "nan"))
        task = [t.name for t in vt.tasks() if t.task == vt.Task.INSTANCE]   # vt_task_name
        check(meta.get("task") in task and stride == m.imgsz / got_shape(sess, "protos")
              and meta.get("strides") == "8",
              "%s: metadata task=%s (the library's %s), mask_stride=%s, strides=%s"
              % (arch, meta.get("task"), task, meta.get("mask_stride"), meta.get("strides")))
        files = images(os.path.join(root, "images"), "val", 6)
        imgs = [read_png(f)[:, :, :3] for f in files]
        xr = np.random.default_rng(4).random((2, 3, m.imgsz, m.imgsz), dtype=np.float32)
        xi = np.concatenate([to_input(i) for i in imgs])
        errs = {}
        for what, x in [("random tensors (batch 2)", xr), ("decoded images", xi)]:
            got = sess.run(None, {"images": x})
            refs = all_outputs(m, x, tmp)
            head = m.forward(x)
            e = [rel_err(head, got[0])]
            if refs is not None:
                # the helper runs one image at a time, vt_model_forward a batch: float rounding
                d = rel_err(refs[0], head)
                check(d <= 1e-5, "%s: the helper's head is vt_model_forward's (max abs error "
                      "%.2e of the range)" % (arch, d))
                e += [rel_err(r, g.reshape(r.shape)) for r, g in zip(refs[1:], got[1:])]
            else:
                print("note %s: no HELPER argument: coefs and protos not compared raw" % arch)
            errs[what] = e
            check(max(e) <= TOL and got[1].shape == (len(x), 32) + head.shape[2:]
                  and got[2].shape[1] == 32,
                  "%s: %s: max abs error / range: %s (head, coefs %s, protos %s)"
                  % (arch, what, ", ".join("%.2e" % v for v in e), got[1].shape, got[2].shape))
        # the threshold as detect_family chooses it
        best = []
        for i in imgs:
            h = m.forward(to_input(i))[0]
            best.append((1 / (1 + np.exp(-h[4:]))).max(axis=0).ravel())
        conf = float("%.6g" % gap_threshold(np.concatenate(best), 0.9, 0.25))
        iou_t = 0.5
        s2 = export_checked(m, os.path.join(tmp, arch + "-nms.onnx"), nms=1, conf="%.6g" % conf,
                            iou=iou_t, max_det=100)
        names = [o.name for o in s2.get_outputs()]
        check(names == ["boxes", "scores", "classes", "coefs", "protos"],
              "%s nms=1: outputs %s" % (arch, names))
        n_lib = n_match = exact = on_edge = px = n_raw = 0
        min_iou = min_miou = 1.0
        for img in imgs:
            assert img.shape[:2] == (m.imgsz, m.imgsz)  # the letterbox is the identity
            ref = m.instances(img, conf=conf, iou=iou_t, max_det=100)
            n_raw += len(m.instances(img, conf=conf, iou=1.0, max_det=100))
            boxes, scores, classes, coefs, protos = s2.run(None, {"images": to_input(img)})
            masks, z, inside = iseg_masks(coefs, protos, boxes, stride)
            s = int(stride)
            n_lib += len(ref)
            check(len(boxes) == len(ref) and coefs.shape == (len(boxes), 32),
                  "%s nms=1: %d instances from onnxruntime (coefs %s), %d from "
                  "vt_model_instances_pixels" % (arch, len(boxes), coefs.shape, len(ref)))
            used = set()
            for d in ref:
                cand = [(iou((d.x0, d.y0, d.x1, d.y1), boxes[k]), k) for k in range(len(boxes))
                        if k not in used and int(classes[k]) == d.index]
                if not cand:
                    continue
                v, k = max(cand)
                if v < IOU_MIN or abs(float(scores[k]) - d.score) > 1e-4:
                    continue
                used.add(k)
                n_match += 1
                min_iou = min(min_iou, v)
                # the image is the input here: its pixel (x, y) is mask pixel (x, y) // stride
                mine = np.repeat(np.repeat(masks[k], s, axis=0), s, axis=1)
                lib = np.asarray(d.mask).astype(bool)
                union = int((mine | lib).sum())
                mi = int((mine & lib).sum()) / union if union else 1.0
                min_miou = min(min_miou, mi)
                exact += int(np.array_equal(mine, lib))
                px += int(lib.sum())
                zr = float(np.abs(z[k][inside[k]]).max()) if inside[k].any() else 0.0
                on_edge += int(((np.abs(z[k]) <= TOL * zr) & inside[k]).sum())
        check(n_lib > 0 and n_match == n_lib,
              "%s nms=1 (conf %.4g, iou %.2g): %d of %d library instances matched (same class, "
              "box IoU >= %.2f, score within 1e-4); lowest box IoU %.6f"
              % (arch, conf, iou_t, n_match, n_lib, IOU_MIN, min_iou))
        # after one epoch every mask logit is still below 0 (empty masks): the raw coefs and
        # protos above are the check there; the trained iseg-n has real masks
        check(n_match > 0 and (px > 0 or epochs == 1) and min_miou > IOU_MIN,
              "%s nms=1: masks from coefs @ protos vs vt_model_instances_pixels: %d of %d "
              "identical, lowest mask IoU %.6f (%d object pixels, %d mask logits within "
              "rounding of 0)" % (arch, exact, n_match, min_miou, px, on_edge))
        if epochs > 1:
            check(n_raw > n_lib, "%s: NMS at IoU %.2g suppressed %d of %d candidates"
                  % (arch, iou_t, n_raw - n_lib, n_raw))
        return errs, n_lib, n_match, min_miou, exact, px


def refused(what, fn, words):
    """fn() raises UnsupportedError naming every one of words."""
    try:
        fn()
        msg = None
    except vt.UnsupportedError as e:
        msg = str(e)
    check(msg is not None and all(w in msg for w in words),
          "%s is refused: %s" % (what, msg))


def main():
    tmp = tempfile.mkdtemp(prefix="vt-onnx-")
    try:
        return run(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(tmp):
    t_start = time.time()
    cls_data = os.path.join(tmp, "cls")
    det_root = os.path.join(tmp, "det")
    seg_root = os.path.join(tmp, "seg")
    inst_root = os.path.join(tmp, "inst")
    vt.synth_generate(cls_data, classes=3, train=8, val=4, imgsz=32)
    vt.synth_generate(det_root, task="detect", classes=3, train=64, val=6, imgsz=64)
    vt.synth_generate(seg_root, task="segment", classes=3, train=8, val=3, imgsz=64)
    vt.synth_generate(inst_root, task="instance", classes=3, train=64, val=6, imgsz=64)
    model = vt.Model("cls-n", 3, imgsz=32)
    try:
        model.export(os.path.join(tmp, "probe.onnx"))
    except vt.UnsupportedError as e:
        print("SKIP: this build has no ONNX export: %s" % e)
        return SKIP
    finally:
        model.close()

    summary = []
    # opsets, batch modes and fold=0 (BatchNormalization nodes) vary over the families, so each
    # is written at least once
    for arch, opts in [("cnn-small", {"opset": 13, "batch": 2}), ("cls-n", {"opset": 21}),
                       ("cls-s", {"batch": "dynamic", "fold": 0}), ("cls-m", {"batch": "dynamic"}),
                       ("resnet18", {"batch": "dynamic"})]:
        summary.append((arch,) + classify_family(tmp, cls_data, arch, opts) + ("",))
    summary.append(("cnn-small",) + classify_family(tmp, cls_data, "cnn-small", {}, channels=1)
                   + ("gray input",))
    for arch in ["seg-n", "seg-s", "seg-m"]:
        summary.append((arch,) + segment_family(tmp, seg_root, arch) + ("",))
    for arch, epochs in [("det-n", 6), ("det-s", 1), ("det-m", 1)]:
        e, ei, n, mi = detect_family(tmp, det_root, arch, epochs)
        summary.append((arch, e, ei, "nms=1: %d boxes, lowest IoU %.6f" % (n, mi)))
    for arch, epochs in [("iseg-n", 6), ("iseg-s", 1), ("iseg-m", 1)]:
        errs, n, nm, mi, ex, px = instance_family(tmp, inst_root, arch, epochs)
        er, ed = errs["random tensors (batch 2)"], errs["decoded images"]
        summary.append((arch, max(er), max(ed), "head/coefs/protos %s; nms=1: %d instances, "
                        "%d masks identical (%d px), lowest mask IoU %.6f"
                        % ("/".join("%.1e" % v for v in ed), n, ex, px, mi)))
    # what stays refused
    with vt.Model("iseg-n", 3, imgsz=64) as m:
        refused("iseg-n nms=1 batch=dynamic", lambda: m.export(
            os.path.join(tmp, "no.onnx"), nms=1, batch="dynamic"), ["nms=1", "batch=1"])
    with vt.Model("seg-n", 3, imgsz=64) as m:
        refused("seg-n nms=1", lambda: m.export(os.path.join(tmp, "no.onnx"), nms=1),
                ["nms=1", "seg-n"])
    check(not os.path.exists(os.path.join(tmp, "no.onnx")), "a refused export writes no file")

    print("\nparity, max abs error / output range (fp32): random tensors, decoded images")
    for arch, e, ei, extra in summary:
        print("  %-10s %.2e  %.2e  %s" % (arch, e, ei, extra))
    print("%d failures, %.0f s" % (len(failures), time.time() - t_start))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
