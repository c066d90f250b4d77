"""The TensorBoard events file of a run, read back with the PyPI tensorboard package.

Run by meson as the `tensorboard` test (not by the unittest discovery of the binding tests):
    VT_LIBRARY=build/libvisiontrain.so.0 python3 tests/python/tensorboard_events.py
Exits 77 (meson: skipped) when the tensorboard package is missing; scripts/install-deps.sh
installs it.

- every scalar of a run equals its results.csv column (EventAccumulator), the step scalars
  and the plot images are there, tensorboard=0 writes no file;
- a training killed with SIGKILL leaves a file that reads to its last whole record, and the
  resumed run's scalars again equal results.csv (earlier sessions' orphaned steps dropped);
- a file cut at any byte reads up to the last whole record and stops (a truncated-record
  error or the end, never a bad record);
- a flipped byte is a CRC mismatch for tensorboard's record reader.
"""

import csv
import glob
import math
import os
import random
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import unittest

from vt_test_env import ROOT  # noqa: F401  (sets up the import paths first)

try:
    from tensorboard.backend.event_processing import event_file_loader
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.compat.proto import event_pb2
    from tensorboard.compat.tensorflow_stub import errors as tf_errors
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import PyRecordReader_New
except ImportError as e:
    if __name__ == "__main__":
        print("SKIP: the tensorboard package is missing (%s); scripts/install-deps.sh installs "
              "it with pip" % e)
        sys.exit(77)
    raise

import visiontrain as vt  # noqa: E402

IMGSZ = 16
TRAIN_PER_CLASS = 12  # 24 images, batch 4: 6 steps per epoch
BATCH = 4
STEPS_PER_EPOCH = 2 * TRAIN_PER_CLASS // BATCH
STEP_TAGS = ["step/loss", "step/img_per_s", "step/data_wait_share", "step/host_rss_mib"]


def setUpModule():
    global TMP, DATA, RUN_DIR, EVENTS
    TMP = tempfile.mkdtemp(prefix="vt-tb-")
    DATA = os.path.join(TMP, "synth")
    vt.synth_generate(DATA, classes=2, train=TRAIN_PER_CLASS, val=6, imgsz=IMGSZ, seed=1)
    RUN_DIR = train("tb")  # 3 epochs, 18 steps, with plots
    EVENTS = events_files(RUN_DIR)


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


def train(name, log=None, **kw):
    """A short run under TMP/runs; returns its run folder."""
    opts = dict(epochs=3, batch=BATCH, seed=0, workers=0, project=os.path.join(TMP, "runs"),
                name=name, exist_ok=1)
    opts.update(kw)
    with vt.Dataset(DATA) as ds, vt.Model("cls-n", 2, imgsz=IMGSZ, seed=0) as m:
        with vt.Trainer(m, ds, **opts) as t:
            if log is not None:
                t.set_log(lambda level, msg: log.append(msg), "warning")
            t.run()
            return t.run_dir


def events_files(run_dir):
    return sorted(glob.glob(os.path.join(run_dir, "events.out.tfevents.*")))


def read_csv(run_dir):
    with open(os.path.join(run_dir, "results.csv"), newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def record_bounds(data):
    """Offsets where the records of a whole file end (our own framing parse)."""
    ends, off = [], 0
    while off < len(data):
        (n,) = struct.unpack_from("<Q", data, off)
        off += 16 + n
        ends.append(off)
    assert off == len(data), "the file ends inside a record"
    return ends


def read_records(path):
    """tensorboard's record reader over a file: (records, the exception that stopped it)."""
    reader = PyRecordReader_New(path)
    out = []
    while True:
        try:
            reader.GetNext()
        except (tf_errors.OutOfRangeError, tf_errors.DataLossError) as e:
            return out, e
        out.append(reader.record())


def accumulator(run_dir):
    ea = EventAccumulator(run_dir, size_guidance={"scalars": 0, "images": 0})
    ea.Reload()
    return ea


class TestEvents(unittest.TestCase):
    def assert_scalars_match_csv(self, run_dir):
        ea = accumulator(run_dir)
        header, rows = read_csv(run_dir)
        scalars = ea.Tags()["scalars"]
        steps = None
        for c, tag in enumerate(header):
            self.assertIn(tag, scalars)
            want = [float(r[c]) for r in rows if r[c] != ""]
            got = ea.Scalars(tag)
            self.assertEqual(len(got), len(want), tag)
            for g, w in zip(got, want):
                # float32 in the file, 6 significant digits in the CSV
                self.assertTrue(math.isclose(g.value, w, rel_tol=1e-5, abs_tol=1e-9),
                                "%s at step %d: %r, results.csv %r" % (tag, g.step, g.value, w))
            if len(want) == len(rows):
                s = [g.step for g in got]
                if steps is None:
                    steps = s
                self.assertEqual(s, steps, "%s: steps differ from the other epoch tags" % tag)
        # one step axis: optimiser iterations at each epoch end
        epochs = [int(r[0]) for r in rows]
        self.assertEqual(steps, [e * STEPS_PER_EPOCH for e in epochs])
        for tag in scalars:
            s = [e.step for e in ea.Scalars(tag)]
            self.assertEqual(s, sorted(set(s)), "%s: steps repeat or go back" % tag)
        return ea

    def test_scalars_images_match_run(self):
        run_dir, files = RUN_DIR, EVENTS
        self.assertEqual(len(files), 1, files)
        self.assertRegex(os.path.basename(files[0]), r"^events\.out\.tfevents\.\d{10}\.\S+$")
        ea = self.assert_scalars_match_csv(run_dir)
        scalars = ea.Tags()["scalars"]
        for tag in STEP_TAGS:
            self.assertIn(tag, scalars)
            self.assertEqual([e.step for e in ea.Scalars(tag)], [10])  # every 10 steps of 18
        self.assertNotIn("step/device_memory_mib", scalars)  # CPU run
        self.assertTrue(0 <= ea.Scalars("step/data_wait_share")[0].value <= 1)
        self.assertGreater(ea.Scalars("step/host_rss_mib")[0].value, 1)
        self.assertGreater(ea.Scalars("step/img_per_s")[0].value, 0)
        self.assertTrue(math.isfinite(ea.Scalars("step/loss")[0].value))
        # the plots, byte for byte, at the last step
        for tag, name in (("plots/results", "results.png"),
                          ("plots/confusion_matrix", "confusion_matrix.png")):
            images = ea.Images(tag)
            self.assertEqual(len(images), 1, tag)
            with open(os.path.join(run_dir, name), "rb") as f:
                png = f.read()
            self.assertEqual(images[0].encoded_image_string, png)
            w, h = struct.unpack(">II", png[16:24])
            self.assertEqual((images[0].width, images[0].height), (w, h))
            self.assertEqual(images[0].step, 3 * STEPS_PER_EPOCH)
        # the first record says what the file is
        records, end = read_records(files[0])
        self.assertIsInstance(end, tf_errors.OutOfRangeError)
        first = event_pb2.Event.FromString(records[0])
        self.assertEqual(first.file_version, "brain.Event:2")

    def test_off(self):
        run_dir = train("tb_off", epochs=1, tensorboard=0)
        self.assertEqual(events_files(run_dir), [])
        self.assertTrue(os.path.exists(os.path.join(run_dir, "results.csv")))

    def test_cannot_create_warns(self):
        # Every name the run could take is already a folder: the run warns and trains on.
        import socket
        run_dir = os.path.join(TMP, "runs", "classify", "tb_blocked")
        os.makedirs(run_dir)
        host = re.sub(r"[/\s]", "_", socket.gethostname()) or "localhost"
        now = int(time.time())
        for s in range(now, now + 30):
            base = os.path.join(run_dir, "events.out.tfevents.%010d.%s" % (s, host))
            for name in [base] + ["%s.%d" % (base, k) for k in range(1, 100)]:
                os.mkdir(name)
        log = []
        train("tb_blocked", log=log, epochs=1)
        self.assertTrue(any("tensorboard" in m and "cannot create" in m for m in log), log)
        _, rows = read_csv(run_dir)
        self.assertEqual(len(rows), 1)

    def test_kill_then_resume(self):
        project = os.path.join(TMP, "runs")
        run_dir = os.path.join(project, "classify", "tb_kill")
        proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", DATA,
                                 project], env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
        try:
            deadline = time.time() + 120
            while time.time() < deadline and proc.poll() is None:
                files = events_files(run_dir)
                if files and os.path.exists(os.path.join(run_dir, "results.csv")):
                    records, _ = read_records(files[0])
                    epochs = sum(1 for r in records
                                 if any(v.tag == "epoch"
                                        for v in event_pb2.Event.FromString(r).summary.value))
                    if epochs >= 3:
                        break
                time.sleep(0.02)
            self.assertIsNone(proc.poll(), "the training ended before it was killed")
            time.sleep(random.Random(5).uniform(0, 0.3))  # somewhere inside an epoch
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.kill()
            proc.wait()
        (path,) = events_files(run_dir)
        with open(path, "rb") as f:
            data = f.read()
        ends = record_bounds_prefix(data)
        records, end = read_records(path)
        self.assertEqual(len(records), len(ends))
        if ends[-1] == len(data):
            self.assertIsInstance(end, tf_errors.OutOfRangeError)
        else:  # a partial last record, never a damaged one
            self.assertIn("truncated", str(end))
        loaded = list(event_file_loader.RawEventFileLoader(path).Load())
        self.assertEqual(loaded, records)
        # resume: the scalars are again results.csv's, the killed session's later steps void
        _, rows = read_csv(run_dir)
        with vt.Dataset(DATA) as ds, vt.Model("cls-n", 2, imgsz=IMGSZ, seed=0) as m:
            with vt.Trainer(m, ds, resume=os.path.join(run_dir, "weights", "last.vtm"),
                            epochs=len(rows) + 2) as t:
                t.run()
                self.assertEqual(t.run_dir, run_dir)
        self.assertEqual(len(events_files(run_dir)), 2)
        self.assert_scalars_match_csv(run_dir)

    def test_cut_anywhere(self):
        (events,) = EVENTS
        with open(events, "rb") as f:
            data = f.read()
        ends = record_bounds(data)
        full, _ = read_records(events)
        cuts = set(random.Random(1).sample(range(len(data)), 150))
        for e in [0] + ends[:-1]:
            cuts.update(c for c in range(e - 2, e + 14) if 0 <= c < len(data))
        cut_path = os.path.join(TMP, "cut", os.path.basename(events))
        os.makedirs(os.path.dirname(cut_path), exist_ok=True)
        for cut in sorted(cuts):
            with open(cut_path, "wb") as f:
                f.write(data[:cut])
            whole = sum(1 for e in ends if e <= cut)
            records, end = read_records(cut_path)
            self.assertEqual(records, full[:whole], "cut at %d" % cut)
            if cut in [0] + ends:
                self.assertIsInstance(end, tf_errors.OutOfRangeError, "cut at %d" % cut)
            else:
                self.assertIsInstance(end, tf_errors.DataLossError, "cut at %d" % cut)
                self.assertIn("truncated", str(end), "cut at %d" % cut)
            # what TensorBoard itself does with it: the whole records, no error
            self.assertEqual(list(event_file_loader.RawEventFileLoader(cut_path).Load()),
                             full[:whole], "cut at %d" % cut)

    def test_crc_mismatch(self):
        (events,) = EVENTS
        with open(events, "rb") as f:
            data = f.read()
        ends = record_bounds(data)
        path = os.path.join(TMP, "flipped", os.path.basename(events))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        rng = random.Random(2)
        for rec in range(len(ends)):
            start = ends[rec - 1] if rec else 0
            # length, length CRC, data, data CRC
            for at, what in ((start + rng.randrange(8), "header"),
                             (start + 8 + rng.randrange(4), "header"),
                             (rng.randrange(start + 12, ends[rec] - 4), "event"),
                             (ends[rec] - 1 - rng.randrange(4), "event")):
                bad = bytearray(data)
                bad[at] ^= 1 << rng.randrange(8)
                with open(path, "wb") as f:
                    f.write(bad)
                records, end = read_records(path)
                self.assertEqual(len(records), rec, "byte %d" % at)
                self.assertIsInstance(end, tf_errors.DataLossError, "byte %d" % at)
                self.assertIn("failed %s crc32 check" % what, str(end), "byte %d" % at)


def record_bounds_prefix(data):
    """Ends of the whole records at the start of data (a killed writer's file)."""
    ends, off = [], 0
    while len(data) - off >= 16:
        (n,) = struct.unpack_from("<Q", data, off)
        if off + 16 + n > len(data):
            break
        off += 16 + n
        ends.append(off)
    return ends


def worker(data, project):
    """The process test_kill_then_resume kills: a long run of the same training."""
    with vt.Dataset(data) as ds, vt.Model("cls-n", 2, imgsz=IMGSZ, seed=0) as m:
        with vt.Trainer(m, ds, epochs=1000, batch=BATCH, seed=0, workers=0, plots=0,
                        project=project, name="tb_kill", exist_ok=1) as t:
            t.run()


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3])
        sys.exit(0)
    unittest.main(verbosity=2)
