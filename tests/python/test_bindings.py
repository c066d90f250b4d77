"""Tests of the Python bindings (bindings/python/visiontrain).

Run from the repository root:
    VT_LIBRARY=build/libvisiontrain.so.0 python3 -m unittest discover -s tests/python -v
Without VT_LIBRARY the first build*/libvisiontrain.so.0 of the repository is used.  The package
is imported from bindings/python unless VT_PYTHON_INSTALLED=1 (test an installed copy).
"""

import array
import gc
import math
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import weakref

from vt_test_env import ROOT  # noqa: E402,F401  (sets up the import paths first)

import visiontrain as vt  # noqa: E402  (loads and ABI-checks VT_LIBRARY at import)
from visiontrain import _native  # noqa: E402

try:
    import numpy
except ImportError:
    numpy = None

IMGSZ = 32
CLASSES = 2
TRAIN_PER_CLASS = 12
VAL_PER_CLASS = 6


class Boom(Exception):
    pass


def _canceller(trainer):
    return lambda event, progress: trainer.cancel()


def setUpModule():
    global TMP, DATA
    TMP = tempfile.mkdtemp(prefix="vt-pytest-")
    DATA = os.path.join(TMP, "synth")
    vt.synth_generate(DATA, classes=CLASSES, train=TRAIN_PER_CLASS, val=VAL_PER_CLASS,
                      imgsz=IMGSZ, seed=1)


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


def new_model(**kw):
    opts = dict(imgsz=IMGSZ, seed=0)
    opts.update(kw)
    return vt.Model("cls-n", CLASSES, **opts)


def quick_trainer(model, dataset, **kw):
    # save=0: no run folder (runs/...) in the working directory
    opts = dict(epochs=1, batch=8, seed=0, workers=0, save=0)
    opts.update(kw)
    return vt.Trainer(model, dataset, **opts)


class TestLibrary(unittest.TestCase):
    def test_version(self):
        v = vt.version()
        self.assertRegex(v, r"^\d+\.\d+\.\d+")
        self.assertEqual(".".join(map(str, vt.version_info())), v.split("-")[0].split("+")[0])

    def test_abi(self):
        self.assertEqual(vt.ABI_VERSION, 0)
        self.assertEqual(vt.abi_version(), vt.ABI_VERSION)
        self.assertIsNotNone(vt.library_path())

    def test_abi_mismatch_refused(self):
        saved = _native.ABI_VERSION
        _native.ABI_VERSION = saved + 1
        try:
            with self.assertRaises(vt.AbiMismatchError) as cm:
                _native._open(vt.library_path())
        finally:
            _native.ABI_VERSION = saved
        self.assertIsInstance(cm.exception, ImportError)
        self.assertIn("ABI", str(cm.exception))

    def test_not_a_visiontrain_library(self):
        import ctypes.util
        libc = ctypes.util.find_library("c")
        if libc is None:
            self.skipTest("no libc name")
        with self.assertRaises(ImportError):
            _native._open(libc)

    def test_missing_library(self):
        with self.assertRaises(vt.LibraryNotFoundError) as cm:
            _native._open(os.path.join(TMP, "no-such-lib.so"))
        self.assertIsInstance(cm.exception, ImportError)

    def test_bad_vt_library_fails_import(self):
        env = dict(os.environ, VT_LIBRARY=os.path.join(TMP, "nope.so"),
                   PYTHONPATH=os.path.join(ROOT, "bindings", "python"))
        r = subprocess.run([sys.executable, "-c", "import visiontrain"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(b"LibraryNotFoundError", r.stderr)

    def test_reload_same_path_ok_other_path_refused(self):
        self.assertIs(vt.load_library(vt.library_path()), _native.lib())
        with self.assertRaises(RuntimeError):
            vt.load_library(os.path.join(TMP, "other.so"))


class TestOptions(unittest.TestCase):
    def test_options_listing(self):
        opts = vt.options()
        keys = [o.key for o in opts]
        for k in ("epochs", "batch", "lr0", "optimizer", "seed", "channels"):
            self.assertIn(k, keys)
        for o in opts:
            self.assertIsInstance(o.key, str)
            self.assertTrue(o.key)
            self.assertIn(o.type, (vt.OptionType.INT, vt.OptionType.FLOAT,
                                   vt.OptionType.STRING))
            self.assertIsInstance(o.help, str)
            if o.type != vt.OptionType.STRING:
                self.assertLessEqual(o.min, o.max)
        self.assertEqual(len(set(o.id for o in opts)), len(opts))
        self.assertEqual({o.target for o in opts}, {"trainer", "model"})
        self.assertIn("dropout", [o.key for o in opts if o.target == "model"])

    def test_option_scopes_and_defaults(self):
        every = vt.options("all")
        self.assertGreater(len(every), len(vt.options()))
        est = vt.options(vt.OptionScope.ESTIMATOR)
        self.assertIn("memory_fraction", [o.key for o in est])
        self.assertIn("link_gbs", [o.key for o in est])
        self.assertEqual({o.target for o in est}, {"estimator"})
        self.assertEqual(vt.option_info("epochs").default, 10)
        self.assertEqual(vt.option_info("epochs", vt.OptionScope.ESTIMATOR).default, 100)
        self.assertEqual(vt.option_info("policy", vt.OptionScope.DATASET_VALIDATE).default, "drop")
        split_seed = vt.option_info("seed", vt.OptionScope.DATASET_SPLIT)
        self.assertEqual(split_seed.scopes,
                         vt.OptionScope.DATASET_SPLIT | vt.OptionScope.DATASET_SUBSET)
        for o in every:
            self.assertTrue(o.scopes, o.key)
            if o.type != vt.OptionType.STRING and o.default != 0:
                self.assertTrue(o.min <= o.default <= o.max, o.key)

    def test_option_info(self):
        info = vt.option_info("epochs")
        self.assertEqual(info.id, 100)
        self.assertEqual(info.type, vt.OptionType.INT)
        self.assertEqual(vt.option_info(100).key, "epochs")
        with self.assertRaises(vt.OptionError):
            vt.option_info("no_such_option")


class TestErrors(unittest.TestCase):
    def test_missing_dataset_folder(self):
        missing = os.path.join(TMP, "does-not-exist")
        with self.assertRaises(vt.NotFoundError) as cm:
            vt.Dataset(missing)
        e = cm.exception
        self.assertIsInstance(e, vt.VisionTrainError)
        self.assertEqual(e.status, vt.Status.NOT_FOUND)
        self.assertEqual(e.status, 4)
        self.assertIn(missing, str(e))

    def test_unknown_option(self):
        with new_model() as m, vt.Trainer(m) as t:
            with self.assertRaises(vt.OptionError) as cm:
                t.set(no_such_key=1)
            self.assertIsInstance(cm.exception, vt.UnknownOptionError)
            self.assertEqual(cm.exception.status, vt.Status.UNKNOWN_OPTION)
            self.assertIn("no_such_key", str(cm.exception))
            with self.assertRaises(vt.UnknownOptionError):
                vt.Trainer(m, no_such_key=3)

    def test_bad_option_value(self):
        with new_model() as m, vt.Trainer(m) as t:
            with self.assertRaises(vt.OptionValueError) as cm:
                t.set(epochs=0)
            self.assertIsInstance(cm.exception, vt.OptionError)
            self.assertIn("epochs", str(cm.exception))
            t.set(epochs=3)
            self.assertEqual(t.get("epochs"), 3.0)
            t.set("batch=4")
            self.assertEqual(t.get("batch"), 4.0)

    def test_bad_model(self):
        with self.assertRaises(vt.VisionTrainError) as cm:
            vt.Model("no-such-arch", CLASSES)
        self.assertTrue(str(cm.exception))
        with self.assertRaises(vt.VisionTrainError):
            vt.Model("cls-n", 1)

    def test_checkpoint_errors(self):
        with self.assertRaises(vt.VisionTrainError) as cm:
            vt.Model.load(os.path.join(TMP, "missing.vtm"))
        self.assertIn("missing.vtm", str(cm.exception))
        garbage = os.path.join(TMP, "garbage.vtm")
        with open(garbage, "wb") as f:
            f.write(b"this is not a checkpoint" * 10)
        with self.assertRaises(vt.CheckpointError) as cm:
            vt.Model.load(garbage)
        self.assertEqual(cm.exception.status, vt.Status.CHECKPOINT)

    def test_predict_missing_file(self):
        with new_model() as m:
            with self.assertRaises(vt.VisionTrainError) as cm:
                m.classify(os.path.join(TMP, "nope.png"))
            self.assertIn("nope.png", str(cm.exception))


class TestDataset(unittest.TestCase):
    def test_counts(self):
        with vt.Dataset(DATA) as ds:
            self.assertEqual(ds.task, vt.Task.CLASSIFY)
            self.assertEqual(ds.num_classes, CLASSES)
            self.assertEqual(len(ds.class_names), CLASSES)
            self.assertEqual(ds.class_names, sorted(ds.class_names))
            self.assertEqual(ds.num_images("train"), CLASSES * TRAIN_PER_CLASS)
            self.assertEqual(ds.num_images(vt.Split.VAL), CLASSES * VAL_PER_CLASS)
            self.assertEqual(ds.num_images("test"), 0)
            self.assertEqual(len(ds), CLASSES * TRAIN_PER_CLASS)
            samples = ds.samples("val")
            self.assertEqual(len(samples), CLASSES * VAL_PER_CLASS)
            for path, cls in samples:
                self.assertTrue(os.path.isfile(path), path)
                self.assertIn(cls, range(CLASSES))
            self.assertIsNone(ds.class_name(CLASSES))
        self.assertTrue(ds.closed)
        with self.assertRaises(vt.BadStateError):
            ds.num_classes

    def test_synth_into_existing_dataset_fails(self):
        with self.assertRaises(vt.VisionTrainError):
            vt.synth_generate(DATA, classes=CLASSES, train=2, val=1, imgsz=IMGSZ)


class TestModel(unittest.TestCase):
    def test_properties(self):
        with new_model() as m:
            self.assertEqual(m.arch, "cls-n")
            self.assertEqual(m.num_classes, CLASSES)
            self.assertEqual(m.imgsz, IMGSZ)
            self.assertEqual(m.channels, 3)
            self.assertEqual(m.task, vt.Task.CLASSIFY)
            self.assertGreater(m.num_params, 0)
            self.assertGreater(m.flops(), 0)
            self.assertEqual(len(m.class_names), CLASSES)

    def test_predict_inputs(self):
        with new_model() as m, vt.Dataset(DATA) as ds:
            path = ds.image_path("val", 0)
            for probs in (m.classify(path),
                          m.classify(bytes(range(256)) * 12, width=IMGSZ, height=IMGSZ,
                                    channels=3),
                          m.classify([[[10, 20, 30]] * 20] * 16),
                          m.classify([[128] * 8] * 8)):
                self.assertEqual(len(probs), CLASSES)
                self.assertAlmostEqual(sum(probs), 1.0, places=4)
                for p in probs:
                    self.assertGreaterEqual(p, 0.0)
                    self.assertLessEqual(p, 1.0)
            with self.assertRaises(vt.InvalidArgumentError):
                m.classify(b"\0" * 10, width=IMGSZ, height=IMGSZ, channels=3)
            with self.assertRaises(TypeError):
                m.classify(b"\0" * 10)

    def test_predict_threads(self):
        with new_model() as m, vt.Dataset(DATA) as ds:
            path = ds.image_path("val", 0)
            self.assertEqual(m.threads, 0)
            ref = m.classify(path)
            for n in (1, 2):
                m.threads = n
                self.assertEqual(m.threads, n)
                for a, b in zip(m.classify(path), ref):
                    self.assertAlmostEqual(a, b, places=5)
            with self.assertRaises(vt.InvalidArgumentError):
                m.threads = -1
            self.assertEqual(m.threads, 2)

    @unittest.skipIf(numpy is None, "numpy not installed")
    def test_predict_numpy(self):
        with new_model() as m:
            img = (numpy.arange(40 * 30 * 3) % 251).astype(numpy.uint8).reshape(40, 30, 3)
            p1 = m.classify(img)
            p2 = m.classify(img.tobytes(), width=30, height=40, channels=3)
            self.assertAlmostEqual(sum(p1), 1.0, places=4)
            for a, b in zip(p1, p2):
                self.assertAlmostEqual(a, b, places=6)
            p3 = m.classify(img[:, ::-1, :])   # non-contiguous view
            self.assertEqual(len(p3), CLASSES)


class TestTraining(unittest.TestCase):
    def test_run_with_callback(self):
        events = []
        with vt.Dataset(DATA) as ds, new_model() as m:
            with quick_trainer(m, ds) as t:
                def cb(event, progress):
                    events.append((event, progress))
                result = t.run(callback=cb)
                self.assertIsInstance(result, dict)
                self.assertIn("loss", result)
                self.assertTrue(math.isfinite(t.metric("loss")))
                self.assertTrue(math.isfinite(t.metric(vt.Metric.LOSS)))
            self.assertEqual(m.class_names, ds.class_names)
        self.assertTrue(events)
        batch_ends = [p for e, p in events if e == vt.Event.BATCH_END]
        epoch_ends = [p for e, p in events if e == vt.Event.EPOCH_END]
        self.assertEqual(len(epoch_ends), 1)
        self.assertTrue(batch_ends)
        last = epoch_ends[-1]
        self.assertEqual(last.epoch, 1)
        self.assertEqual(last.epochs, 1)
        self.assertEqual(last.batches, math.ceil(CLASSES * TRAIN_PER_CLASS / 8))
        self.assertGreaterEqual(last.iteration, 1)
        self.assertIn("loss", last.metrics)
        self.assertTrue(math.isfinite(last.loss))
        self.assertEqual(last["epoch"], 1)
        self.assertEqual(last.as_dict()["epochs"], 1)
        b = batch_ends[0]
        self.assertEqual(b.batch, 1)
        self.assertEqual(b.epoch, 1)

    def test_callback_exception_reraised_and_stops(self):
        calls = []
        with vt.Dataset(DATA) as ds, new_model() as m, \
                quick_trainer(m, ds, epochs=2) as t:
            def cb(event, progress):
                calls.append(event)
                raise Boom("stop here")
            with self.assertRaises(Boom) as cm:
                t.run(callback=cb)
            self.assertEqual(str(cm.exception), "stop here")
            self.assertEqual(len(calls), 1)
            # The trainer stays usable after a cancelled run.
            t.on_progress(None)
            t.set(epochs=1)
            t.run()

    def test_on_progress_and_cancel(self):
        seen = []
        with vt.Dataset(DATA) as ds, new_model() as m, quick_trainer(m, ds, epochs=2) as t:
            @t.on_progress
            def cb(event, progress):
                seen.append(progress.iteration)
                t.cancel()
            with self.assertRaises(vt.Cancelled) as cm:
                t.run()
            self.assertEqual(cm.exception.status, vt.Status.CANCELLED)
            self.assertEqual(len(seen), 1)

    def test_cancel_from_another_thread(self):
        import threading
        started = threading.Event()
        with vt.Dataset(DATA) as ds, new_model() as m, quick_trainer(m, ds, epochs=1000) as t:
            def cb(event, progress):
                started.set()
                if progress.iteration > 100:   # bound the runtime if cancel() is not honoured
                    raise Boom("cancel() from another thread was not honoured")
            t.on_progress(cb)

            def canceller():
                if started.wait(60):
                    t.cancel()
            th = threading.Thread(target=canceller)
            th.start()
            try:
                with self.assertRaises(vt.Cancelled):
                    t.run()
            finally:
                t.cancel()
                th.join()

    def test_run_without_dataset_fails(self):
        with new_model() as m, vt.Trainer(m) as t:
            with self.assertRaises(vt.VisionTrainError):
                t.run()

    def test_validate(self):
        with vt.Dataset(DATA) as ds, new_model() as m, quick_trainer(m, ds) as t:
            r = t.validate("val")
            self.assertIn("top1", r)
            self.assertGreaterEqual(r["top1"], 0.0)
            self.assertLessEqual(r["top1"], 1.0)
            self.assertEqual(t.metric("top1"), r["top1"])

    def _batch_lists(self, batch):
        per = 3 * IMGSZ * IMGSZ
        flat = [((i * 7) % 255) / 255.0 for i in range(batch * per)]
        nested = [[[flat[((b * 3 + c) * IMGSZ + y) * IMGSZ:((b * 3 + c) * IMGSZ + y + 1) * IMGSZ]
                    for y in range(IMGSZ)] for c in range(3)] for b in range(batch)]
        return flat, nested

    def test_step_without_numpy(self):
        flat, nested = self._batch_lists(2)
        labels = [0, 1]
        with new_model() as m, vt.Trainer(m, lr0=0.01) as t:
            with self.assertRaises(vt.NotFoundError):
                t.metric("loss")
            self.assertIsNone(t.metric("loss", None))
            l1 = t.step(nested, labels)
            self.assertTrue(math.isfinite(l1))
            l2 = t.step(array.array("f", flat), array.array("i", labels))
            self.assertTrue(math.isfinite(l2))
            l3 = t.step(array.array("f", flat).tobytes(), labels)
            self.assertTrue(math.isfinite(l3))
            self.assertAlmostEqual(t.metric("loss"), l3, places=5)
            with self.assertRaises(vt.InvalidArgumentError):
                t.step(flat[:-1], labels)          # wrong size: refused before the C call
            with self.assertRaises(vt.InvalidArgumentError):
                t.step(flat, [0, CLASSES])         # label out of range

    @unittest.skipIf(numpy is None, "numpy not installed")
    def test_step_numpy(self):
        rng = numpy.random.default_rng(0)
        images = rng.random((4, 3, IMGSZ, IMGSZ), dtype=numpy.float32)
        labels = numpy.array([0, 1, 0, 1])
        with new_model() as m, vt.Trainer(m) as t:
            losses = [t.step(images, labels) for _ in range(3)]
            for l in losses:
                self.assertTrue(math.isfinite(l))
            t.step(images.astype(numpy.float64), labels.astype(numpy.int64))
            t.step(numpy.asfortranarray(images), labels)
            with self.assertRaises(vt.InvalidArgumentError):
                t.step(images[:, :, :16, :16], labels)


class TestRunFolder(unittest.TestCase):
    def test_run_dir_checkpoints_and_new_metrics(self):
        project = os.path.join(TMP, "runs-project")
        events = []
        with vt.Dataset(DATA) as ds, new_model() as m, \
                quick_trainer(m, ds, epochs=2, save=1, project=project, name="exp",
                              price=2.5, plots=0) as t:
            self.assertIsNone(t.run_dir)
            self.assertEqual(t.stop_reason, vt.StopReason.NONE)
            t.run(callback=lambda event, p: events.append(p))
            run_dir = t.run_dir
            self.assertEqual(t.stop_reason, vt.StopReason.COMPLETED)
            self.assertEqual(t.rank, (0, 1))  # one process: rank 0 of 1
            metrics = t.metrics()
        self.assertEqual(os.path.realpath(run_dir),
                         os.path.realpath(os.path.join(project, "classify", "exp")))
        self.assertTrue(os.path.isfile(os.path.join(run_dir, "weights", "last.vtm")))
        saved = [p for p in events if p.event == vt.Event.CHECKPOINT_SAVED]
        self.assertTrue(saved)
        for p in saved:
            self.assertTrue(p.checkpoint_path.endswith(".vtm"), p.checkpoint_path)
            self.assertTrue(os.path.isfile(p.checkpoint_path), p.checkpoint_path)
            self.assertEqual(p.as_dict()["checkpoint_path"], p.checkpoint_path)
        self.assertIn(os.path.join(run_dir, "weights", "last.vtm"),
                      [os.path.join(run_dir, "weights", os.path.basename(p.checkpoint_path))
                       for p in saved])
        for p in events:
            if p.event != vt.Event.CHECKPOINT_SAVED:
                self.assertIsNone(p.checkpoint_path)
        last = [p for p in events if p.event == vt.Event.EPOCH_END][-1]
        for key in ("eta_seconds", "cost_usd", "data_wait_seconds", "best_fitness", "fitness"):
            self.assertIn(key, last.metrics)
            self.assertTrue(math.isfinite(last.metrics[key]))
        self.assertGreater(last.cost_usd, 0.0)
        self.assertIsNone(last.device_memory_bytes)     # CPU run: no device memory
        self.assertIn("best_fitness", metrics)
        # the checkpoint's run arguments: enough to rebuild the model and reopen the data
        args = vt.checkpoint_args(os.path.join(run_dir, "weights", "last.vtm"))
        self.assertEqual(args["data"], os.path.realpath(DATA))
        self.assertEqual((args["task"], args["model"], args["imgsz"], args["epochs"]),
                         ("classify", "cls-n", str(IMGSZ), "2"))
        self.assertNotIn("resume", args)
        with self.assertRaises(vt.VisionTrainError):
            vt.checkpoint_args(os.path.join(run_dir, "no-such.vtm"))

    def test_save0_has_no_run_dir(self):
        with vt.Dataset(DATA) as ds, new_model() as m, quick_trainer(m, ds) as t:
            t.run()
            self.assertIsNone(t.run_dir)
            self.assertEqual(t.stop_reason, vt.StopReason.COMPLETED)

    def test_cancel_stop_reason(self):
        with vt.Dataset(DATA) as ds, new_model() as m, quick_trainer(m, ds, epochs=2) as t:
            with self.assertRaises(vt.Cancelled):
                t.run(callback=_canceller(t))
            self.assertEqual(t.stop_reason, vt.StopReason.CANCELLED)

    def test_unknown_event_ignored(self):
        calls = []
        with new_model() as m, vt.Trainer(m) as t:
            t.on_progress(lambda event, p: calls.append(event))
            # An event value a newer library might add: not passed on, the run goes on (0).
            self.assertEqual(t._on_progress_c(None, 99, None), 0)
        self.assertEqual(calls, [])


class TestDetectionDataset(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = os.path.join(TMP, "det")
        vt.synth_generate(cls.dir, task="detect", classes=3, train=12, val=4, imgsz=64,
                          max_objects=4, seed=2)

    def test_boxes(self):
        with vt.Dataset(self.dir, task="detect") as ds:
            self.assertEqual(ds.task, vt.Task.DETECT)
            self.assertEqual(ds.num_classes, 3)
            self.assertEqual(ds.num_images("train"), 12)
            self.assertEqual(ds.num_images("val"), 4)
            self.assertEqual(ds.problems(), [])
            total = 0
            for i in range(ds.num_images("train")):
                boxes = ds.boxes("train", i)
                self.assertEqual(len(boxes), ds.num_boxes("train", i))
                total += len(boxes)
                for b in boxes:
                    cls, cx, cy, w, h = b
                    self.assertIn(cls, range(3))
                    self.assertEqual(b.cls, cls)
                    for v in (cx, cy, w, h):
                        self.assertGreaterEqual(v, 0.0)
                        self.assertLessEqual(v, 1.0)
                    self.assertGreater(w, 0.0)
                    self.assertGreater(h, 0.0)
            self.assertGreater(total, 0)
            self.assertEqual(ds.boxes("train", 10 ** 6), [])
        with vt.Dataset(DATA) as cls_ds:
            self.assertEqual(cls_ds.boxes("train", 0), [])
            self.assertEqual(cls_ds.problems(), [])

    def test_problems(self):
        bad = os.path.join(TMP, "det-bad")
        shutil.copytree(self.dir, bad)
        labels = os.path.join(bad, "labels", "train")
        name = sorted(os.listdir(labels))[0]
        with open(os.path.join(labels, name), "a") as f:
            f.write("\n7 0.5 0.5 0.1 0.1\nnot a box\n0 1.5 0.5 0.1 0.1\n")
        with vt.Dataset(os.path.join(bad, "data.yaml"), task="detect") as ds:
            problems = ds.problems()
        codes = [p.code for p in problems]
        self.assertIn(vt.ProblemCode.CLASS_RANGE, codes)
        self.assertIn(vt.ProblemCode.BAD_LINE, codes)
        self.assertIn(vt.ProblemCode.COORD_RANGE, codes)
        for p in problems:
            file, line, code, message = p
            self.assertTrue(file.endswith(name), file)
            self.assertGreater(line, 0)
            self.assertIn("%s:%d" % (name, line), message)

    def test_detect_errors(self):
        with self.assertRaises(vt.NotFoundError):
            vt.Dataset(os.path.join(TMP, "no-such-det"), task="detect")
        broken = os.path.join(TMP, "broken.yaml")
        with open(broken, "w") as f:
            f.write("names: [a, b\n  nc: [\n")
        with self.assertRaises(vt.VisionTrainError) as cm:
            vt.Dataset(broken, task="detect")
        self.assertIn("broken.yaml", str(cm.exception))


class TestSaveLoad(unittest.TestCase):
    def test_round_trip(self):
        path = os.path.join(TMP, "roundtrip.vtm")
        with vt.Dataset(DATA) as ds:
            images = [ds.image_path("val", i) for i in range(ds.num_images("val"))][:4]
            with new_model() as m:
                with quick_trainer(m, ds) as t:
                    t.run()
                before = [m.classify(p) for p in images]
                names = m.class_names
                m.save(path)
        self.assertTrue(os.path.isfile(path))
        with vt.Model.load(path) as m2:
            self.assertEqual(m2.arch, "cls-n")
            self.assertEqual(m2.num_classes, CLASSES)
            self.assertEqual(m2.imgsz, IMGSZ)
            self.assertEqual(m2.class_names, names)
            after = [m2.classify(p) for p in images]
            top = m2.predict_topk(images[0], k=1)
        for a, b in zip(before, after):
            for x, y in zip(a, b):
                self.assertAlmostEqual(x, y, places=5)
        self.assertEqual(len(top), 1)
        self.assertIn(top[0].name, names)
        self.assertAlmostEqual(top[0].probability, max(after[0]), places=6)


class TestLifetime(unittest.TestCase):
    def test_context_managers_close(self):
        with new_model() as m:
            self.assertFalse(m.closed)
        self.assertTrue(m.closed)
        with self.assertRaises(vt.BadStateError):
            m.num_classes
        m.close()   # idempotent
        self.assertIn("closed", repr(m))

    def test_trainer_keeps_model_and_dataset_alive(self):
        ds = vt.Dataset(DATA)
        m = new_model()
        t = quick_trainer(m, ds)
        rm, rd = weakref.ref(m), weakref.ref(ds)
        del m, ds
        gc.collect()
        self.assertIsNotNone(rm())
        self.assertIsNotNone(rd())
        t.run()
        rt = weakref.ref(t)
        del t          # no reference cycle: freed at once, then model and dataset
        self.assertIsNone(rt())
        self.assertIsNone(rm())
        self.assertIsNone(rd())

    def test_closing_model_closes_its_trainer(self):
        m = new_model()
        t = vt.Trainer(m)
        m.close()
        self.assertTrue(t.closed)
        with self.assertRaises(vt.BadStateError):
            t.set(epochs=1)
        t.cancel()     # harmless on a closed trainer
        t.close()

    def test_cycle_collected_in_any_order(self):
        for _ in range(3):
            m = new_model()
            t = vt.Trainer(m)
            t.on_progress(_canceller(t))             # cycle through the closure
            t.self_ref = t
            m.owner = t                              # and through the model
            del m, t
            gc.collect()

    def test_close_during_run_refused(self):
        with vt.Dataset(DATA) as ds, new_model() as m, quick_trainer(m, ds) as t:
            errors = []

            def cb(event, progress):
                for obj in (t, m, ds):
                    try:
                        obj.close()
                    except vt.BadStateError as e:
                        errors.append(e)
                raise Boom()
            with self.assertRaises(Boom):
                t.run(callback=cb)
            self.assertEqual(len(errors), 3)
            self.assertFalse(t.closed)


if __name__ == "__main__":
    unittest.main()
