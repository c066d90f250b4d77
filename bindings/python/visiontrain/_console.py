"""What Model.train() and Model.val() print: the `vt train` / `vt val` display of the command-line
tool (a live bar on a terminal, plain lines otherwise, one table row per epoch), made from the
same progress data (vt_progress) the tool's callback reads."""

import math
import os
import sys
import time

from ._core import Event, Split, Task

# Epoch table columns per task: (header, metric, width); "epoch", lr, img/s and time are common.
_COLUMNS = {
    Task.CLASSIFY: [("top1", "top1", 7), ("top5", "top5", 7)],
    Task.DETECT: [("P", "precision", 7), ("R", "recall", 7), ("mAP50", "map50", 7),
                  ("mAP50-95", "map50_95", 9)],
    Task.SEGMENT: [("mIoU", "miou", 7), ("pixel_acc", "pixel_acc", 9)],
}
# The metric a run's "best" line names (the trainer's fitness), and its label.
_BEST = {Task.CLASSIFY: ("top1", "top1"), Task.DETECT: ("map50_95", "mAP50-95"),
         Task.SEGMENT: ("miou", "mIoU")}


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


def data_summary(ds, data, out):
    """One line: images used per split and the label problems found (as `vt train` does)."""
    parts = []
    for s in Split:
        n = ds.count("images", s)
        if not n and s == Split.TEST:
            continue
        text = "%s %d of %d images used" % (s.name.lower(), ds.count("usable", s), n)
        bad, skipped = ds.count("corrupt", s), ds.count("skipped", s)
        if bad:
            text += ", %d unreadable or too small" % bad
        if skipped:
            text += ", %d skipped (label problems)" % skipped
        parts.append(text)
    problems = ds.problems()
    line = "data: %s: %s" % (data, "; ".join(parts))
    if not problems:
        out.write(line + "; no problems found\n")
        return
    out.write("%s.  %d problem%s; first:\n" % (line, len(problems), "" if len(problems) == 1
                                                else "s"))
    for p in problems[:3]:
        out.write("  %.300s\n" % p.message)


class TrainPrinter(object):
    """A Trainer.run() progress callback printing what `vt train` prints."""

    def __init__(self, trainer, task, out=None, mode=None):
        self.trainer = trainer
        self.task = task if task in _COLUMNS else Task.CLASSIFY
        self.out = out or sys.stdout
        if mode is None:
            isatty = getattr(self.out, "isatty", None)
            mode = "bar" if isatty is not None and isatty() else "plain"
        self.mode = mode
        self.t0 = self.epoch_t0 = self.last_draw = time.time()
        self.bar_shown = False
        self.header_done = False
        self.dir_shown = False
        self.best = None          # (value, epoch) of the task's fitness metric

    def start(self, model, data, ds):
        """The lines before the first batch: model, data, epochs, batch, image size."""
        t = self.trainer
        imgsz = int(t.get("imgsz")) or model.imgsz
        self._print("training %s (%d parameters, %.1f MFLOPs/image) on %s: %d classes, %d train "
                    "/ %d val images; %.0f epochs, batch %.0f, imgsz %d\n"
                    % (model.arch, model.num_params, model.flops(imgsz) / 1e6, data,
                       ds.num_classes, ds.num_images("train"), ds.num_images("val"),
                       t.get("epochs"), t.get("batch"), imgsz))
        data_summary(ds, data, self.out)
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
        cols = _COLUMNS[self.task]
        if not self.header_done:
            self.header_done = True
            head = "%9s %10s %10s" % ("epoch", "loss", "val_loss")
            head += "".join(" %*s" % (w, h) for h, _, w in cols)
            self._print(head + " %10s %8s %9s\n" % ("lr", "img/s", "time"))
        m = p.metrics
        key = _BEST[self.task][0]
        if m.get(key) is not None and (self.best is None or m[key] > self.best[0]):
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
            text += "; best %s %.4f at epoch %d" % (_BEST[self.task][1], self.best[0],
                                                    self.best[1])
        self._print(text + "\n")
        if self.task == Task.DETECT and "map50" in metrics and "map50_95" in metrics:
            self._print("final validation mAP50 %.4f  mAP50-95 %.4f\n"
                        % (metrics["map50"], metrics["map50_95"]))
        elif self.task == Task.SEGMENT and "miou" in metrics and "pixel_acc" in metrics:
            self._print("final validation mIoU %.4f  pixel accuracy %.4f\n"
                        % (metrics["miou"], metrics["pixel_acc"]))
        elif self.task == Task.CLASSIFY and "top1" in metrics:
            self._print("final validation top-1 accuracy: %.4f\n" % metrics["top1"])
        if run_dir:
            self._print("run folder: %s (best weights: %s, last: %s)\n"
                        % (run_dir, best_weights or "none yet",
                           os.path.join(run_dir, "weights", "last.vtm")))


def val_report(trainer, task, split, num_images, seconds, out=None):
    """The lines `vt val` prints after a validation."""
    out = out or sys.stdout
    m = trainer.metrics()
    nan = math.nan
    head = "%s (%d images): loss %.4f" % (split, num_images, m.get("val_loss", nan))
    if task == Task.SEGMENT:
        out.write("%s  mIoU %.4f  pixel accuracy %.4f  (%.1fs)\n"
                  % (head, m.get("miou", nan), m.get("pixel_acc", nan), seconds))
    elif task == Task.DETECT:
        out.write("%s  P %.4f  R %.4f  mAP50 %.4f  mAP50-95 %.4f  (%.1fs)\n"
                  % (head, m.get("precision", nan), m.get("recall", nan), m.get("map50", nan),
                     m.get("map50_95", nan), seconds))
        out.write("  %-20s %8s %8s %9s\n" % ("class", "boxes", "AP50", "AP50-95"))
        names = trainer.model.class_names
        for c, name in enumerate(names):
            ap50, ap, n = trainer.class_ap(c)
            if n == 0:
                out.write("  %-20s %8d %8s %9s\n" % (name or "?", 0, "-", "-"))
            else:
                out.write("  %-20s %8d %8.4f %9.4f\n" % (name or "?", n, ap50, ap))
    else:
        out.write("%s  top1 %.4f  top5 %.4f  (%.1fs)\n"
                  % (head, m.get("top1", nan), m.get("top5", nan), seconds))
    out.flush()
