"""Prediction results of Model.predict(): one Results per image, with Boxes (detection), Probs
(classification), Masks (segmentation) or Boxes and InstanceMasks (instance segmentation).  Arrays are numpy arrays when numpy can be imported,
plain (nested) lists otherwise."""

import struct

_NUMPY = []   # [module or None], filled on first use


def numpy_or_none():
    """numpy when it can be imported, else None (tried once)."""
    if not _NUMPY:
        try:
            import numpy
        except ImportError:
            numpy = None
        _NUMPY.append(numpy)
    return _NUMPY[0]


def _array(values, dtype):
    """values (a list, or a list of rows) -> a numpy array of dtype, or the list itself."""
    np = numpy_or_none()
    if np is None:
        return values
    return np.asarray(values, dtype=dtype)


def _tolist(a):
    return a.tolist() if hasattr(a, "tolist") else list(a)


class Boxes(object):
    """Detected boxes of one image, best score first.

    xyxy: (N, 4) corners x0, y0, x1, y1 in the image's pixels; conf: (N,) scores 0..1; cls: (N,)
    class ids; xywh: centres and sizes in pixels; xyxyn / xywhn: the same normalised to 0..1 of
    the image (None when the image size is unknown).  numpy arrays (float32; cls int64) when
    numpy is installed, else lists.  len(boxes), boxes[i] (a Boxes of one box) and iteration
    work as on a list."""

    def __init__(self, xyxy, conf, cls, orig_shape):
        self._xyxy = [list(map(float, b)) for b in xyxy]
        self._conf = [float(c) for c in conf]
        self._cls = [int(c) for c in cls]
        self.orig_shape = orig_shape

    @property
    def xyxy(self):
        return _array(self._xyxy, "float32") if self._xyxy else _empty2()

    @property
    def conf(self):
        return _array(self._conf, "float32")

    @property
    def cls(self):
        return _array(self._cls, "int64")

    @property
    def xywh(self):
        rows = [[(x0 + x1) / 2, (y0 + y1) / 2, x1 - x0, y1 - y0] for x0, y0, x1, y1 in self._xyxy]
        return _array(rows, "float32") if rows else _empty2()

    def _normalised(self, rows):
        if not self.orig_shape:
            return None
        h, w = self.orig_shape
        rows = [[r[0] / w, r[1] / h, r[2] / w, r[3] / h] for r in rows]
        return _array(rows, "float32") if rows else _empty2()

    @property
    def xyxyn(self):
        return self._normalised(self._xyxy)

    @property
    def xywhn(self):
        return self._normalised(_tolist(self.xywh))

    @property
    def data(self):
        """(N, 6): x0, y0, x1, y1, conf, cls per row."""
        rows = [b + [c, float(k)] for b, c, k in zip(self._xyxy, self._conf, self._cls)]
        return _array(rows, "float32") if rows else _empty2(6)

    def __len__(self):
        return len(self._conf)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return Boxes(self._xyxy[i], self._conf[i], self._cls[i], self.orig_shape)
        i = range(len(self))[i]
        return Boxes(self._xyxy[i:i + 1], self._conf[i:i + 1], self._cls[i:i + 1],
                     self.orig_shape)

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __repr__(self):
        return "<visiontrain.Boxes %d>" % len(self)


def _empty2(cols=4):
    np = numpy_or_none()
    return [] if np is None else np.zeros((0, cols), dtype="float32")


class Probs(object):
    """Class probabilities of one image.  data: (num_classes,) probabilities; top1: the best
    class id; top5: the five best ids, best first; top1conf / top5conf: their probabilities."""

    def __init__(self, probs):
        self._p = [float(v) for v in probs]
        self._order = sorted(range(len(self._p)), key=lambda i: -self._p[i])

    @property
    def data(self):
        return _array(self._p, "float32")

    @property
    def top1(self):
        return self._order[0]

    @property
    def top5(self):
        return self._order[:5]

    @property
    def top1conf(self):
        return self._p[self._order[0]]

    @property
    def top5conf(self):
        return _array([self._p[i] for i in self._order[:5]], "float32")

    def __len__(self):
        return len(self._p)

    def __repr__(self):
        return "<visiontrain.Probs top1=%d %.3f>" % (self.top1, self.top1conf)


class Masks(object):
    """The class of every pixel of one image (semantic segmentation: the model's class ids,
    where 0 is the background).
    data: (H, W) class ids (numpy uint8, or a list of rows of ints); shape: (H, W); classes:
    the class ids present, sorted; area(c): the fraction of the image's pixels of class c."""

    def __init__(self, width, height, mask_bytes):
        self._w, self._h = width, height
        self._bytes = bytes(mask_bytes)
        counts = {}
        for v in set(self._bytes):
            counts[v] = self._bytes.count(v)
        self._counts = counts

    @property
    def data(self):
        np = numpy_or_none()
        if np is not None:
            return np.frombuffer(self._bytes, dtype=np.uint8).reshape(self._h, self._w).copy()
        w = self._w
        return [list(self._bytes[r * w:(r + 1) * w]) for r in range(self._h)]

    @property
    def shape(self):
        return (self._h, self._w)

    @property
    def classes(self):
        return sorted(self._counts)

    def area(self, cls):
        n = self._w * self._h
        return self._counts.get(int(cls), 0) / float(n) if n else 0.0

    def __repr__(self):
        return "<visiontrain.Masks %dx%d classes=%s>" % (self._w, self._h, self.classes)


class InstanceMasks(object):
    """The masks of one image's objects (instance segmentation), in the order of its Boxes.
    data: (N, H, W) numpy uint8, 1 where object i is (a list of N masks, each a list of rows of
    ints, without numpy); shape: (H, W); len(masks), masks[i] (object i's (H, W) mask) and
    iteration work as on a list; area(i): the fraction of the image's pixels object i covers."""

    def __init__(self, width, height, planes):
        self._w, self._h = width, height
        self._planes = [bytes(p) for p in planes]

    def _mask(self, plane):
        np = numpy_or_none()
        if np is not None:
            return np.frombuffer(plane, dtype=np.uint8).reshape(self._h, self._w).copy()
        w = self._w
        return [list(plane[r * w:(r + 1) * w]) for r in range(self._h)]

    @property
    def data(self):
        np = numpy_or_none()
        if np is not None:
            return np.frombuffer(b"".join(self._planes), dtype=np.uint8).reshape(
                len(self._planes), self._h, self._w).copy()
        return [self._mask(p) for p in self._planes]

    @property
    def shape(self):
        return (self._h, self._w)

    def area(self, i):
        n = self._w * self._h
        return (n - self._planes[i].count(0)) / float(n) if n else 0.0

    def __len__(self):
        return len(self._planes)

    def __getitem__(self, i):
        return self._mask(self._planes[i])

    def __iter__(self):
        for p in self._planes:
            yield self._mask(p)

    def __repr__(self):
        return "<visiontrain.InstanceMasks %d of %dx%d>" % (len(self), self._w, self._h)


class Results(object):
    """The prediction for one image.

    path: the image file (or "imageN" for an in-memory image); orig_shape: (height, width), or
    None where the file's header could not be read; names: {class id: name}; boxes (detection
    models), probs (classification) and masks (segmentation): the one of its task, None for
    the others; instance segmentation has boxes and masks (InstanceMasks, one per box).
    len(results) is the number of boxes (detection, instances), else 0 or 1."""

    def __init__(self, path, orig_shape, names, boxes=None, probs=None, masks=None):
        self.path = path
        self.orig_shape = orig_shape
        self.names = names
        self.boxes = boxes
        self.probs = probs
        self.masks = masks

    def __len__(self):
        if self.boxes is not None:
            return len(self.boxes)
        return 1 if (self.probs is not None or self.masks is not None) else 0

    def summary(self):
        """A list of dicts, one per box (name, class, confidence, box), class (top1) or class
        present in the mask (name, class, area)."""
        out = []
        if self.boxes is not None:
            for (x0, y0, x1, y1), c, k in zip(self.boxes._xyxy, self.boxes._conf,
                                              self.boxes._cls):
                out.append({"name": self.names.get(k, str(k)), "class": k, "confidence": c,
                            "box": {"x1": x0, "y1": y0, "x2": x1, "y2": y1}})
        if self.probs is not None:
            k = self.probs.top1
            out.append({"name": self.names.get(k, str(k)), "class": k,
                        "confidence": self.probs.top1conf})
        if isinstance(self.masks, InstanceMasks):
            for d, i in zip(out, range(len(self.masks))):
                d["area"] = self.masks.area(i)
        elif self.masks is not None:
            for k in self.masks.classes:
                out.append({"name": self.names.get(k, str(k)), "class": k,
                            "area": self.masks.area(k)})
        return out

    def verbose(self):
        """A short description, as predict(verbose=True) prints it: "2 circle, 1 square"."""
        if self.boxes is not None:
            counts = {}
            for k in self.boxes._cls:
                counts[k] = counts.get(k, 0) + 1
            return ", ".join("%d %s" % (n, self.names.get(k, str(k)))
                             for k, n in sorted(counts.items())) or "no detections"
        return ", ".join("%s %.2f" % (d["name"], d.get("confidence", d.get("area", 0.0)))
                         for d in self.summary())

    def __repr__(self):
        return "<visiontrain.Results %s %s: %s>" % (
            self.path, "x".join(str(v) for v in self.orig_shape) if self.orig_shape else "?",
            self.verbose())


def image_size(path):
    """(height, width) of a PNG or JPEG file from its header, None when it cannot be read."""
    try:
        with open(path, "rb") as f:
            head = f.read(32)
            if head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR":
                w, h = struct.unpack(">II", head[16:24])
                return (h, w)
            if head[:2] != b"\xff\xd8":
                return None
            f.seek(2)
            while True:
                b = f.read(1)
                while b and b != b"\xff":
                    b = f.read(1)
                while b == b"\xff":
                    b = f.read(1)
                if not b:
                    return None
                marker = b[0]
                if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
                    continue   # markers without a length
                seg = f.read(2)
                if len(seg) < 2:
                    return None
                length = struct.unpack(">H", seg)[0]
                if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                    sof = f.read(5)
                    if len(sof) < 5:
                        return None
                    h, w = struct.unpack(">HH", sof[1:5])
                    return (h, w)
                f.seek(length - 2, 1)
    except OSError:
        return None
