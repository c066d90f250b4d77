"""What Model.train() and Model.val() print: the `vt train` / `vt val` display of the command-line
tool (a live bar on a terminal, plain lines otherwise, one table row per epoch), made from the
same progress data (vt_progress) the tool's callback reads.  As the tool does, the data summary
goes to stderr when the dataset has problems (they are warnings), to stdout otherwise; with
verbose=False the same lines go to logging.getLogger("visiontrain") instead (LogLines)."""

import logging
import math
import os
import sys
import time

from . import _core
from ._core import Event, ProblemCode, Split

# The words for a metric in a sentence where its table label is an identifier.
_METRIC_WORDS = {"pixel_acc": "pixel accuracy"}


def _label(key):
    """The table label of a metric key ("map50_95" -> "mAP50-95", the library's)."""
    for k, label in _core._metric_table().values():
        if k == key:
            return label
    return key


def _words(key):
    return _METRIC_WORDS.get(key, _label(key))


def _columns(task):
    """The epoch table's columns of a task, [(label, key, width)]: its metrics (the library's,
    in the order of its results.csv), in an odd width of at least 7 ("top1" in 7, "mAP50-95"
    in 9: as `vt train`); "epoch", loss, val_loss, lr, img/s and time are common."""
    info = _core._task_info(task) if task is not None else None
    cols = []
    for key in info.metrics if info is not None else ():
        label = _label(key)
        cols.append((label, key, max(7, len(label) | 1)))
    return cols


def _best(task):
    """(key, label) of the metric a run's "best" line names: the task's fitness."""
    info = _core._task_info(task) if task is not None else None
    if info is None or info.fitness is None:
        return None
    return info.fitness, _label(info.fitness)


def fmt_duration(s):
    """h:mm:ss (or "Nd hh:mm"), "?" when unknown: as the vt tool writes durations."""
    if s is None or not s >= 0 or s > 1e12:
        return "?"
    t = int(s + 0.5)
    if t >= 86400:
        return "%dd %02d:%02d" % (t // 86400, t // 3600 % 24, t // 60 % 60)
    return "%d:%02d:%02d" % (t // 3600, t // 60 % 60, t % 60)


def _cell(metrics, key):
    v = metrics.get(key)
    return "-" if v is None else "%.4f" % v


class LogLines(object):
    """A text stream for the printers here that hands each complete line to
    logging.getLogger("visiontrain") at `level` (what verbose=False does with them)."""

    def __init__(self, level=logging.INFO, logger=None):
        self.level = level
        self.logger = logger or logging.getLogger("visiontrain")
        self._part = ""

    def write(self, text):
        lines = (self._part + text).split("\n")
        self._part = lines.pop()
        for line in lines:
            line = line.rsplit("\r", 1)[-1].replace("\033[K", "")   # no bar in a log
            if line.strip():
                self.logger.log(self.level, "%s", line)

    def flush(self):
        pass

    def isatty(self):
        return False


# Problem kinds of the summary (examples/vt/datainfo.c): a label entry dropped, an image left out.
_LABEL_CODES = ("BAD_LINE", "CLASS_RANGE", "COORD_RANGE", "ZERO_SIZE", "DUPLICATE",
                "BAD_ANNOTATION", "POLYGON_POINTS")
_IMAGE_CODES = ("MISSING_IMAGE", "IMAGE_UNREADABLE", "CORRUPT_IMAGE", "TRUNCATED_JPEG",
                "IMAGE_TOO_SMALL", "UNSUPPORTED_FORMAT", "MISSING_MASK", "BAD_MASK")
_SUMMARY_ALL, _SUMMARY_EXAMPLES = 10, 3   # every problem up to 10, else the first 3


def _problem_code(code):
    try:
        return ProblemCode(code)
    except ValueError:
        return code


def _code_name(code):
    return code.name.lower() if isinstance(code, ProblemCode) else str(code)


def _kind(code):
    name = code.name if isinstance(code, ProblemCode) else ""
    return "label" if name in _LABEL_CODES else "image" if name in _IMAGE_CODES else "other"


def data_summary(ds, data, out, err=None, policy="drop", decode=True):
    """The data summary of `vt train` / `vt val`: images used and left out per split, the
    problems by reason, each with its file:line (the first few of many).  To err (default
    sys.stderr) when the dataset has problems, else to out."""
    parts = []
    for s in Split:
        n = ds.count("images", s)
        if not n and s == Split.TEST:
            continue
        text = " %s %d of %d images used" % (s.name.lower(), ds.count("usable", s), n)
        bad, sized, skipped = ds.count("corrupt", s), ds.count("size", s), ds.count("skipped", s)
        if bad:
            text += ", %d unreadable" % bad
        if sized:
            text += ", %d outside the size limits" % sized
        if skipped:
            text += ", %d skipped (label problems)" % skipped
        parts.append(text)
    problems = ds.problems()
    line = "data: %s (policy=%s%s):%s" % (data, policy, "" if decode else ", decode=0",
                                          ";".join(parts))
    if not problems:
        out.write(line + "; no problems found\n")
        out.flush()
        return
    out.flush()
    out = err if err is not None else sys.stderr
    by_kind = {"label": {}, "image": {}, "other": {}}     # kind: {code: count}
    for p in problems:
        counts = by_kind[_kind(p.code)]
        counts[int(p.code)] = counts.get(int(p.code), 0) + 1

    def reasons_text(kind):
        """(how many, "coord_range 2, bad_line 1") in the order of the codes, as vt train."""
        counts = by_kind[kind]
        names = ("%s %d" % (_code_name(_problem_code(c)), counts[c]) for c in sorted(counts))
        return sum(counts.values()), ", ".join(names)
    n, text = reasons_text("label")
    if n and policy == "skip":
        line += ".  %d label problem%s, their images skipped: %s" % (n, "" if n == 1 else "s",
                                                                     text)
    elif n:
        # labels one per image (classification) are entries; the other tasks' objects, boxes
        noun = ("entry", "entries") if _core._labels_per_image(ds.task) else ("box", "boxes")
        line += ".  %d %s dropped: %s" % (n, noun[n != 1], text)
    n, text = reasons_text("image")
    if n:
        line += ".  %d image%s left out: %s" % (n, "" if n == 1 else "s", text)
    n, text = reasons_text("other")
    if n:
        line += ".  %d other warning%s: %s" % (n, "" if n == 1 else "s", text)
    shown = _SUMMARY_EXAMPLES if len(problems) > _SUMMARY_ALL else len(problems)
    if shown < len(problems):
        line += ".  The first %d:" % shown
    else:
        line += ".  %s:" % ("The problem" if len(problems) == 1 else "The problems")
    out.write(line + "\n")
    for p in problems[:shown]:
        out.write("  %.300s [%s]\n" % (p.message, _code_name(p.code)))
    if shown < len(problems):
        out.write("  all %d problems: Dataset(%r).problems()\n" % (len(problems), data))
    out.flush()


class TrainPrinter(object):
    """A Trainer.run() progress callback printing what `vt train` prints."""

    def __init__(self, trainer, task, out=None, mode=None, err=None):
        self.trainer = trainer
        self.task = task
        self.columns = _columns(task)     # the task's metrics, as the library lists them
        self.best_metric = _best(task)    # (key, label) of its fitness
        self.out = out or sys.stdout
        self.err = err            # the data summary when the data has problems (sys.stderr)
        if mode is None:
            isatty = getattr(self.out, "isatty", None)
            mode = "bar" if isatty is not None and isatty() else "plain"
        self.mode = mode
        self.t0 = self.epoch_t0 = self.last_draw = time.time()
        self.bar_shown = False
        self.header_done = False
        self.dir_shown = False
        self.best = None          # (value, epoch) of the task's fitness metric

    def start(self, model, data, ds, policy="drop", decode=True):
        """The lines before the first batch: model, data, epochs, batch, image size; then the
        data summary."""
        t = self.trainer
        imgsz = int(t.get("imgsz")) or model.imgsz
        self._print("training %s (%d parameters, %.1f MFLOPs/image) on %s: %d classes, %d train "
                    "/ %d val images; %.0f epochs, batch %.0f, imgsz %d\n"
                    % (model.arch, model.num_params, model.flops(imgsz) / 1e6, data,
                       ds.num_classes, ds.num_images("train"), ds.num_images("val"),
                       t.get("epochs"), t.get("batch"), imgsz))
        data_summary(ds, data, self.out, self.err, policy=policy, decode=decode)
        self.out.flush()
        self.t0 = self.epoch_t0 = self.last_draw = time.time()

    def _print(self, text):
        self.out.write(text)
        self.out.flush()

    def clear_bar(self):
        if self.bar_shown:
            self._print("\r\033[K")
            self.bar_shown = False

    def __call__(self, event, p):
        if not self.dir_shown:
            # the run folder exists once the run has started
            self.dir_shown = True
            run_dir = self.trainer.run_dir
            if run_dir:
                self._print("run folder: %s (weights/last.vtm, weights/best.vtm)\n" % run_dir)
            # the run started from another model's weights (other classes, pretrained=)
            moved, total = (p.metrics.get(k) for k in ("tensors_transferred", "tensors_total"))
            if total:
                self._print("transferred %d/%d tensors\n" % (moved, total))
        if event == Event.BATCH_END:
            self._batch(p)
        elif event == Event.EPOCH_END:
            self._epoch(p)

    def _batch(self, p):
        t = time.time()
        # throttle: 10 redraws a second on a terminal, a line every 10 s otherwise
        every = 0.1 if self.mode == "bar" else 10.0
        if t - self.last_draw < every and p.batch != p.batches:
            return
        if self.mode != "bar" and p.batch == p.batches:
            return   # the epoch row follows
        self.last_draw = t
        done = float(p.epoch - 1) * p.batches + p.batch
        total = float(p.epochs) * p.batches
        eta = (t - self.t0) / done * (total - done) if done > 0 else None
        loss = p.metrics.get("loss", math.nan)
        ips = p.metrics.get("images_per_sec", 0.0)
        if self.mode == "bar":
            fill = int(20.0 * p.batch / p.batches) if p.batches > 0 else 0
            bar = "#" * fill + "." * (20 - fill)
            self._print("\repoch %d/%d [%s] %d/%d  loss %.4f  %.0f img/s  ETA %s\033[K"
                        % (p.epoch, p.epochs, bar, p.batch, p.batches, loss, ips,
                           fmt_duration(eta)))
            self.bar_shown = True
        else:
            self._print("epoch %d/%d batch %d/%d  loss %.4f  %.0f img/s  ETA %s\n"
                        % (p.epoch, p.epochs, p.batch, p.batches, loss, ips, fmt_duration(eta)))

    def _epoch(self, p):
        self.clear_bar()
        cols = self.columns
        if not self.header_done:
            self.header_done = True
            head = "%9s %10s %10s" % ("epoch", "loss", "val_loss")
            head += "".join(" %*s" % (w, h) for h, _, w in cols)
            self._print(head + " %10s %8s %9s\n" % ("lr", "img/s", "time"))
        m = p.metrics
        key = self.best_metric[0] if self.best_metric else None
        if key and m.get(key) is not None and (self.best is None or m[key] > self.best[0]):
            self.best = (m[key], p.epoch)
        t = time.time()
        row = "%9s %10.4f %10s" % ("%d/%d" % (p.epoch, p.epochs), m.get("loss", math.nan),
                                   _cell(m, "val_loss"))
        row += "".join(" %*s" % (w, _cell(m, k)) for _, k, w in cols)
        row += " %10.6f %8.0f %9s\n" % (m.get("lr", 0.0), m.get("images_per_sec", 0.0),
                                         "%.1fs" % (t - self.epoch_t0))
        self.epoch_t0 = t
        self._print(row)

    def finish(self, metrics, run_dir, best_weights):
        """The closing lines: time, best epoch, final validation, where the weights are."""
        self.clear_bar()
        text = "done in %s" % fmt_duration(time.time() - self.t0)
        if self.best is not None:
            text += "; best %s %.4f at epoch %d" % (self.best_metric[1], self.best[0],
                                                    self.best[1])
        self._print(text + "\n")
        final_report(self.task, metrics, run_dir, best_weights, self.out)


def final_report(task, metrics, run_dir, best_weights, out):
    """The final metrics and where the weights are (the last lines of `vt train`): the task's
    metrics (the library's) with their labels, e.g. "mAP50 0.9000  mAP50-95 0.7000" after P
    and R."""
    info = _core._task_info(task) if task is not None else None
    keys = info.metrics if info is not None else ()
    if keys and all(k in metrics for k in keys):
        out.write("final validation %s\n"
                  % "  ".join("%s %.4f" % (_words(k), metrics[k]) for k in keys))
    if run_dir:
        out.write("run folder: %s (best weights: %s, last: %s)\n"
                  % (run_dir, best_weights or "none yet",
                     os.path.join(run_dir, "weights", "last.vtm")))
    out.flush()


def val_report(trainer, task, split, num_images, seconds, out=None):
    """The lines `vt val` prints after a validation: the loss and the task's metrics (the
    library's), then per class the AP of a task that has them (detection)."""
    out = out or sys.stdout
    m = trainer.metrics()
    nan = math.nan
    info = _core._task_info(task) if task is not None else None
    text = "%s (%d images): loss %.4f" % (split, num_images, m.get("val_loss", nan))
    for key in info.metrics if info is not None else ():
        text += "  %s %.4f" % (_words(key), m.get(key, nan))
    out.write("%s  (%.1fs)\n" % (text, seconds))
    names = trainer.model.class_names
    try:
        per_class = [trainer.class_ap(c) for c in range(len(names))]
    except _core.VisionTrainError:   # NotFoundError: no per-class AP for this task
        per_class = None
    if per_class is not None and names:
        out.write("  %-20s %8s %8s %9s\n" % ("class", "boxes", "AP50", "AP50-95"))
        for name, (ap50, ap, n) in zip(names, per_class):
            if n == 0:
                out.write("  %-20s %8d %8s %9s\n" % (name or "?", 0, "-", "-"))
            else:
                out.write("  %-20s %8d %8.4f %9.4f\n" % (name or "?", n, ap50, ap))
    out.flush()
