"""Model: train, validate, predict and save in a few calls, over Dataset and Trainer.

    model = vt.Model("det-n")                                  # classes come from the data
    metrics = model.train(data="det/data.yaml", epochs=20, imgsz=640)
    model.val(data="det/data.yaml")
    for r in model.predict("det/images/val"):                 # a file, folder, list or array
        print(r.path, r.boxes.xyxy, r.boxes.conf, r.boxes.cls)
    model.save("det.vtm")
    model = vt.Model("runs/detect/train/weights/best.vtm")    # a saved model
"""

import glob
import logging
import os
import sys
import time

from . import _core, _native
from ._console import LogLines, TrainPrinter, data_summary, final_report, val_report
from ._core import BadStateError, Dataset, Status, Task, Trainer, UnsupportedError
from ._results import (Boxes, InstanceMasks, Masks, Probs, Results, image_size,
                       numpy_or_none)

# Options of Dataset() (how the data is opened); the others of train()/val() go to the Trainer.
_DATASET_KEYS = ("policy", "decode", "min_size")
# Options of a new model's vt_model_create() that train() accepts too (before the model exists).
_NEW_MODEL_KEYS = ("channels", "dropout")
# What a validation sets besides the tasks' metrics (_val_metrics): its loss, detection's F1 (at
# the threshold of its P and R) and the fitness.
_VAL_EXTRA = ("val_loss", "f1", "fitness")
_IMAGE_EXTS = (".png", ".jpg", ".jpeg")


def _val_metrics():
    """The keys of the metrics a validation sets: every task's (the library's), _VAL_EXTRA."""
    keys = set(_VAL_EXTRA)
    for info in _core.tasks():
        keys.update(info.metrics)
    return keys


def _is_model_file(model):
    return isinstance(model, os.PathLike) or (
        isinstance(model, str) and (model.lower().endswith(".vtm") or os.path.isfile(model)))


def _split_options(options, keys):
    return {k: options.pop(k) for k in keys if k in options}


def _summary_args(ds_options):
    """policy= and decode= of the data summary, as the dataset was opened (the library's
    defaults: drop, decode=0)."""
    decode = ds_options.get("decode", False)
    return dict(policy=str(ds_options.get("policy", "drop")),
                decode=str(decode).lower() not in ("0", "false", "no"))


class Model(_core.Model):
    """A model of one task (classification "cls-*", detection "det-*", segmentation "seg-*", ...:
    visiontrain.tasks() lists them, with their model prefixes and default models).

    Model("det-n") is a new model whose classes come from the data of its first train();
    Model("det-n", 3, imgsz=64) builds it now with 3 classes; Model("path/best.vtm") loads a
    saved model (Model.load(path) too).  Options of a new model: imgsz=, channels= (1|3),
    dropout=, seed= (weight initialisation).

    train(), val(), predict() and save() are the usual workflow; classify(), detect() and
    segment() give the raw per-image outputs, and Trainer(model, dataset) the full control.
    """

    def __init__(self, model="cls-n", num_classes=None, **options):
        if _is_model_file(model):
            if num_classes is not None or options:
                raise TypeError("Model(%r): a saved model takes no num_classes or options"
                                % (model,))
            loaded = _core.Model.load(model)
            self._adopt(loaded)
            return
        self._fresh()
        if num_classes is not None:
            _core.Model.__init__(self, model, num_classes, **options)
            return
        arch = str(model)
        task = _core._arch_task(arch)   # the library's (vt_arch_task)
        if task is None:
            # a name the library does not know: a two-class copy says what is wrong with it
            with _core.Model(arch, 2, **options) as probe:
                task = probe.task
        self._lib = _native.lib()
        self._new = (arch, dict(options), task)   # built by train() from the data's classes

    def _fresh(self):
        self._new = None      # (arch, options, task) of a model train() still has to build
        self._data = None     # the data of the last train(), val()'s default
        self.run_dir = None   # the run folder of the last train()
        self.metrics = None   # the metrics train() or val() returned last

    def _init(self, lib, ptr):
        _core.Model._init(self, lib, ptr)
        if not hasattr(self, "_new"):
            self._fresh()

    def _adopt(self, other):
        """Take over other's native handle (other is left closed)."""
        if not hasattr(self, "_new"):
            self._fresh()
        old = self._h
        self._lib, self._h = other._lib, other._h
        other._h = None
        self._new = None
        if old is not None:
            old.close()

    def _ptr(self):
        if self._h is None and self._new is not None:
            raise BadStateError("Model(%r) has no weights yet: train() builds it from the data's "
                                "classes (or give the number of classes: Model(%r, N))"
                                % (self._new[0], self._new[0]), Status.BAD_STATE)
        return _core.Model._ptr(self)

    @property
    def closed(self):
        return self._new is None and _core.Model.closed.fget(self)

    @property
    def arch(self):
        return self._new[0] if self._new is not None else _core.Model.arch.fget(self)

    @property
    def task(self):
        if self._new is not None:
            return self._new[2]
        return _core.Model.task.fget(self)

    @property
    def names(self):
        """{class id: name} (the id as a string where the model has no name for it); {} before
        a new model's first train()."""
        if self._new is not None:
            return {}
        return {i: n if n is not None else str(i) for i, n in enumerate(self.class_names)}

    # ---- training and validation ----

    def train(self, data, epochs=None, imgsz=None, batch=None, verbose=True, **options):
        """Train on a dataset and return the metrics (a dict: loss, val_loss, lr and the task's
        top1 / top5, precision / recall / map50 / map50_95, or miou / pixel_acc, ...).

        ``data``: a classification ImageFolder, a YOLO data.yaml (or its folder) or a COCO JSON.
        Other options are the trainer's (visiontrain.options(): lr0=, optimizer=, patience=,
        device=, workers=, project=, name=, save=0, ...) and the dataset's (policy=, decode=,
        min_size=).  A run folder <project>/<task>/<name> (runs/detect/train, train2, ...) gets
        the checkpoints, results.csv and plots; model.run_dir names it.  Afterwards the model
        holds the best epoch's weights (weights/best.vtm) and the metrics are that epoch's;
        with save=0 (no run folder) the last weights and metrics.  device=[0, 1] (or "0,1")
        trains one process per GPU, as `vt train device=0,1` does: rank 0 prints and writes
        the run folder, and this model gets its best weights and metrics (after a Ctrl-C it
        keeps the weights it had; the run folder's weights/last.vtm holds the ranks').  Prints the progress
        as `vt train` does (the data summary to stderr when the data has problems).  verbose=False
        prints nothing: the data summary, its problems (level warning) and the final metrics
        (info) go to logging.getLogger("visiontrain") instead, as the library's notes always do
        (silence them there: setLevel(logging.ERROR)).  Ctrl-C stops cleanly
        (KeyboardInterrupt) with the weights reached so far.
        """
        options = dict(options)
        for key, value in (("epochs", epochs), ("imgsz", imgsz), ("batch", batch)):
            if value is not None:
                options[key] = value
        data = os.fspath(data)
        # imported here, not at the top: `python -m visiontrain._ranks` (a rank) would warn
        # that the package had imported it already
        from . import _ranks
        if _ranks.launches_ranks(options.get("device")):
            return _ranks.train(self, data, verbose, options)   # device=[0, 1]: one per GPU
        ds_options = _split_options(options, _DATASET_KEYS)
        epoch_metrics = []

        def record(event, p):
            if event == _core.Event.EPOCH_END:
                epoch_metrics.append(dict(p.metrics))

        with Dataset(data, task=self.task, **ds_options) as ds:
            self._build(ds, options)
            with Trainer(self, ds, **options) as trainer:
                printer = None
                if verbose:
                    printer = TrainPrinter(trainer, self.task)
                    printer.start(self, data, ds, **_summary_args(ds_options))
                else:   # the data summary still reaches the "visiontrain" logger
                    data_summary(ds, data, LogLines(logging.INFO), LogLines(logging.WARNING),
                                 **_summary_args(ds_options))
                trainer.on_progress(printer)
                try:
                    final = trainer.run(callback=record)
                finally:
                    if printer is not None:
                        printer.clear_bar()
                    self.run_dir = trainer.run_dir
        self._data = data
        metrics = final
        best = os.path.join(self.run_dir, "weights", "best.vtm") if self.run_dir else None
        if best and os.path.isfile(best):
            self._adopt(_core.Model.load(best))
            # the epoch that wrote best.vtm: the first to reach the run's best fitness (a
            # resumed run's best may come from before it; then the last metrics stay)
            top = epoch_metrics[-1].get("best_fitness") if epoch_metrics else None
            best_epochs = [m for m in epoch_metrics if top is not None and
                           m.get("fitness") == top]
            if best_epochs:
                metrics = best_epochs[0]
        best = best if best and os.path.isfile(best) else None
        if printer is not None:
            printer.finish(metrics, self.run_dir, best)
        else:   # the final metrics too (level info)
            final_report(self.task, metrics, self.run_dir, best, LogLines(logging.INFO))
        self.metrics = metrics
        return metrics

    def _build(self, ds, options):
        """Build a new model (Model("det-n")) with the classes of the open dataset ds, taking
        its options (channels=, dropout=) out of train()'s; imgsz= stays the trainer's and is
        the model's too.  Nothing to do for a model that has its weights."""
        if self._new is None:
            return
        arch, model_options, _ = self._new
        model_options = dict(model_options, **_split_options(options, _NEW_MODEL_KEYS))
        if options.get("imgsz") is not None:
            model_options.setdefault("imgsz", options["imgsz"])
        self._adopt(_core.Model(arch, ds.num_classes, **model_options))

    def val(self, data=None, split="val", batch=None, imgsz=None, verbose=True, **options):
        """Evaluate on a split of a dataset (default: the data of the last train()) and return
        its metrics: val_loss and top1 / top5, precision / recall / map50 / map50_95, or miou /
        pixel_acc.  Options: the trainer's batch=, imgsz=, device=, workers=, precision= and
        the dataset's policy=, decode=, min_size=.  Prints the `vt val` lines (first the data
        summary to stderr when the data has problems); verbose=False sends them to
        logging.getLogger("visiontrain") instead (problems: warning, metrics: info)."""
        if data is None:
            data = self._data
        if data is None:
            raise TypeError("val() needs data=: a dataset (this model was not trained here)")
        self._ptr()
        options = dict(options)
        ds_options = _split_options(options, _DATASET_KEYS)
        for key, value in (("imgsz", imgsz), ("batch", batch)):
            if value is not None:
                options[key] = value
        options["save"] = 0
        data = os.fspath(data)
        with Dataset(data, task=self.task, **ds_options) as ds, \
                Trainer(self, ds, **options) as trainer:
            if ds.problems():   # as `vt val`: the summary of a dataset with problems
                data_summary(ds, data, sys.stdout if verbose else LogLines(logging.INFO),
                             sys.stderr if verbose else LogLines(logging.WARNING),
                             **_summary_args(ds_options))
            t0 = time.time()
            all_metrics = trainer.validate(split)
            val_report(trainer, self.task, str(split), ds.num_images(split), time.time() - t0,
                       out=None if verbose else LogLines(logging.INFO))
        val_metrics = _val_metrics()
        self.metrics = {k: v for k, v in all_metrics.items() if k in val_metrics}
        return self.metrics

    # ---- prediction ----

    def predict(self, source, conf=0.25, iou=0.7, max_det=300, verbose=True):
        """Predict on images; returns a list of Results, one per image, in order.

        ``source``: an image file (PNG or JPEG), a folder (its .png/.jpg/.jpeg files, sorted), a
        glob pattern ("imgs/*.png"), a numpy uint8 array (H, W) or (H, W, C) with RGB(A)
        channels, a batch array (N, H, W, C), a PIL image, or a list of any of these.
        Detection and instance segmentation: boxes with score >= conf after class-aware NMS
        at IoU ``iou``, at most ``max_det`` per image; instance segmentation adds each box's
        mask (Results.masks, an InstanceMasks: data is (N, H, W) uint8 at the image's size).  Prints one line per image unless verbose=False."""
        task = self.task
        names = self.names
        images = _images(source)
        out = []
        for k, (path, image) in enumerate(images):
            t0 = time.time()
            if image is None:
                shape = image_size(path)
                image = path
            else:
                shape = _array_shape(image)
            if task == Task.DETECT:
                dets = self.detect(image, conf=conf, iou=iou, max_det=max_det)
                r = Results(path, shape, names, boxes=Boxes(
                    [(d.x0, d.y0, d.x1, d.y1) for d in dets], [d.score for d in dets],
                    [d.index for d in dets], shape))
            elif task == Task.INSTANCE:
                objs = self.instances(image, conf=conf, iou=iou, max_det=max_det)
                h, w = shape if shape else (None, None)
                planes = []
                for o in objs:
                    if isinstance(o.mask, tuple):
                        w, h, data = o.mask
                    else:
                        (h, w), data = o.mask.shape, o.mask.tobytes()
                    planes.append(data)
                if w is None:  # no objects and a header that could not be read
                    w = h = 0
                r = Results(path, shape or (h, w), names, boxes=Boxes(
                    [(o.x0, o.y0, o.x1, o.y1) for o in objs], [o.score for o in objs],
                    [o.index for o in objs], shape), masks=InstanceMasks(w, h, planes))
            elif task == Task.SEGMENT:
                mask = self.segment(image)
                if isinstance(mask, tuple):
                    w, h, data = mask
                else:
                    (h, w), data = mask.shape, mask.tobytes()
                r = Results(path, (h, w), names, masks=Masks(w, h, data))
            elif task == Task.CLASSIFY:
                r = Results(path, shape, names, probs=Probs(self.classify(image)))
            else:
                raise UnsupportedError("Model.predict() gives no results for %s models yet"
                                       % _core._task_title(task), Status.UNSUPPORTED)
            out.append(r)
            if verbose:
                sys.stdout.write("image %d/%d %s: %s%s (%.1f ms)\n" % (
                    k + 1, len(images), path,
                    "%dx%d " % (r.orig_shape[1], r.orig_shape[0]) if r.orig_shape else "",
                    r.verbose(), 1000 * (time.time() - t0)))
        if verbose:
            sys.stdout.flush()
        return out

    def save(self, path=None):
        """Save the weights and configuration (atomically) to ``path`` (default: the arch's
        name + ".vtm" in the working folder); returns the path."""
        if path is None:
            path = self.arch + ".vtm"
        _core.Model.save(self, path)
        return os.fspath(path)

    def __repr__(self):
        if self._new is not None:
            return "<visiontrain.Model %s (new: train() builds it from the data's classes)>" \
                % self._new[0]
        return _core.Model.__repr__(self)


def _array_shape(image):
    """(height, width) of an in-memory image (numpy array or PIL image)."""
    shape = getattr(image, "shape", None)
    if shape is not None and len(shape) >= 2:
        return (int(shape[0]), int(shape[1]))
    size = getattr(image, "size", None)
    if isinstance(size, tuple) and len(size) == 2:
        return (int(size[1]), int(size[0]))
    return None


def _images(source):
    """source -> [(path, None) for files, (name, image) for in-memory images]."""
    out = []

    def add(item, top):
        if isinstance(item, (str, os.PathLike)):
            path = os.fspath(item)
            if os.path.isdir(path):
                files = sorted(os.path.join(path, f) for f in os.listdir(path)
                               if f.lower().endswith(_IMAGE_EXTS) and
                               os.path.isfile(os.path.join(path, f)))
                if not files:
                    raise FileNotFoundError("no .png/.jpg/.jpeg images in %s" % path)
                out.extend((f, None) for f in files)
            elif not os.path.exists(path) and glob.has_magic(path):
                files = sorted(glob.glob(path))
                if not files:
                    raise FileNotFoundError("no files match %s" % path)
                out.extend((f, None) for f in files)
            else:
                out.append((path, None))
            return
        np = numpy_or_none()
        if np is not None and isinstance(item, np.ndarray) and item.ndim == 4:
            for a in item:
                out.append(("image%d" % len(out), a))
            return
        if top and isinstance(item, (list, tuple)):
            for x in item:
                add(x, False)
            return
        out.append(("image%d" % len(out), item))

    add(source, True)
    return out
