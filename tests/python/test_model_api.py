"""vt.Model's workflow: train / val / predict / save for classification, detection and
segmentation on tiny synthetic data; the Results objects (numpy and, in a subprocess where numpy
cannot be imported, plain lists); the sources predict() takes; the progress display.  Run as
test_bindings.py is."""

import contextlib
import io
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

from vt_test_env import ROOT  # noqa: E402,F401  (sets up the import paths first)

import visiontrain as vt  # noqa: E402
from visiontrain import _console  # noqa: E402

try:
    import numpy
except ImportError:
    numpy = None

# task: (arch, dataset path under TMP, synth options, imgsz)
TASKS = {
    "classify": ("cls-n", "cls", dict(classes=3, train=6, val=3, imgsz=32, seed=3), 32),
    "detect": ("det-n", "det", dict(classes=3, train=8, val=4, imgsz=64, seed=3), 64),
    "segment": ("seg-n", "seg", dict(classes=3, train=8, val=4, imgsz=64, seed=3), 64),
}
TRAIN = dict(epochs=1, batch=8, workers=1, seed=1)
TRAINED = {}   # task: (model, metrics, printed text, dataset path)


def setUpModule():
    global TMP
    TMP = tempfile.mkdtemp(prefix="vt-pymodel-")
    for task, (arch, name, synth, imgsz) in TASKS.items():
        data = vt.synth_generate(os.path.join(TMP, name), task=task, **synth)
        if task != "classify":
            data = os.path.join(data, "data.yaml")
        model = vt.Model(arch)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            metrics = model.train(data=data, imgsz=imgsz, project=os.path.join(TMP, "runs"),
                                  **TRAIN)
        TRAINED[task] = (model, metrics, out.getvalue(), data)


def tearDownModule():
    for model, _, _, _ in TRAINED.values():
        model.close()
    shutil.rmtree(TMP, ignore_errors=True)


def val_images(task, n=2):
    data = TRAINED[task][3]
    folder = os.path.join(TMP, "cls", "val", "circle") if task == "classify" else \
        os.path.join(os.path.dirname(data), "images", "val")
    return folder, sorted(os.path.join(folder, f) for f in os.listdir(folder))[:n]


class TrainTest(unittest.TestCase):
    def test_train_metrics_run_folder_and_display(self):
        keys = {"classify": ("top1", "top5"), "detect": ("precision", "recall", "map50",
                                                          "map50_95"),
                "segment": ("miou", "pixel_acc")}
        for task, (model, metrics, printed, data) in TRAINED.items():
            with self.subTest(task=task):
                self.assertEqual(model.task, vt.Task[task.upper()])
                self.assertEqual(model.num_classes, len(model.names))
                for k in ("loss", "val_loss") + keys[task]:
                    self.assertIsInstance(metrics[k], float, (task, k))
                # the run folder of the CLI: <project>/<task>/train, with its weights
                self.assertEqual(model.run_dir, os.path.join(TMP, "runs", task, "train"))
                for f in ("best.vtm", "last.vtm"):
                    self.assertTrue(os.path.isfile(os.path.join(model.run_dir, "weights", f)))
                self.assertTrue(os.path.isfile(os.path.join(model.run_dir, "results.csv")))
                # what `vt train` prints: the header line, the run folder, the epoch table
                self.assertIn("training %s (" % model.arch, printed)
                self.assertIn("run folder: %s" % model.run_dir, printed)
                self.assertRegex(printed, r"\n +epoch +loss +val_loss ")
                self.assertRegex(printed, r"\n +1/1 +\d+\.\d{4} ")
                self.assertIn("done in 0:00:", printed)
                self.assertIn("final validation", printed)

    def test_classes_come_from_the_data(self):
        model = TRAINED["detect"][0]
        self.assertEqual(model.names, {0: "circle", 1: "square", 2: "triangle"})
        seg = TRAINED["segment"][0]
        self.assertEqual(seg.names[0], "background")

    def test_new_model_before_training(self):
        m = vt.Model("det-n", imgsz=64)
        self.assertEqual(m.task, vt.Task.DETECT)
        self.assertEqual(m.arch, "det-n")
        self.assertEqual(m.names, {})
        self.assertFalse(m.closed)
        self.assertIn("train() builds it", repr(m))
        with self.assertRaises(vt.BadStateError) as cm:
            m.predict(numpy.zeros((8, 8, 3), "uint8") if numpy is not None
                      else [[0] * 8] * 8, verbose=False)
        self.assertIn("train()", str(cm.exception))
        with self.assertRaises(vt.BadStateError):
            m.save(os.path.join(TMP, "x.vtm"))
        with self.assertRaises(vt.InvalidArgumentError) as cm:
            vt.Model("resnet-ish")
        self.assertIn("resnet-ish", str(cm.exception))
        self.assertEqual(vt.Model("cnn-small").task, vt.Task.CLASSIFY)   # no cls-/det-/seg-
        with self.assertRaises(TypeError):
            vt.Model(TRAINED["detect"][0].run_dir + "/weights/best.vtm", 3)
        with self.assertRaises(vt.VisionTrainError):
            vt.Model(os.path.join(TMP, "missing.vtm"))
        # the number of classes given: built at once (the layer underneath)
        with vt.Model("cls-n", 4, imgsz=32) as c:
            self.assertEqual(c.num_classes, 4)

    def test_quiet_training(self):
        data = TRAINED["classify"][3]
        m = vt.Model("cls-n", imgsz=32)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            metrics = m.train(data=data, save=0, verbose=False, **TRAIN)
        self.assertEqual(out.getvalue(), "")
        self.assertIsNone(m.run_dir)
        self.assertIn("top1", metrics)
        with self.assertRaises(vt.OptionError):
            m.train(data=data, verbose=False, no_such_option=1)

    def test_data_problems_are_said(self):
        # as `vt train`: the data summary and its problems reach stderr (verbose=True) or the
        # "visiontrain" logger (verbose=False, warnings; the final metrics at level info)
        bad = os.path.join(TMP, "det-bad")
        shutil.copytree(os.path.dirname(TRAINED["detect"][3]), bad)
        for name, line in (("00002.txt", "0 0.5 inf 0.2 0.2\n"),
                           ("00003.txt", "0 nan 0.5 0.2 0.2\n")):
            with open(os.path.join(bad, "labels", "train", name), "a") as f:
                f.write(line)
        data = os.path.join(bad, "data.yaml")
        summary = (r"^data: .*det-bad/data\.yaml \(policy=drop, decode=0\): train 8 of 8 images "
                   r"used; val 4 of 4 images used\.  2 boxes dropped: coord_range 2\.  The "
                   r"problems:$")
        inf = r"^  .*00002\.txt:\d+: coordinate 2 \(inf\) is outside 0\.\.1.*\[coord_range\]$"
        nan = r"^  .*00003\.txt:\d+: coordinate 1 \(nan\) is outside 0\.\.1.*\[coord_range\]$"
        m = vt.Model("det-n", imgsz=64)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                self.assertLogs("visiontrain", "INFO") as logs:
            m.train(data=data, save=0, verbose=False, **TRAIN)
        self.assertEqual((out.getvalue(), err.getvalue()), ("", ""))
        warnings = [r.getMessage() for r in logs.records if r.levelno == logging.WARNING]
        infos = [r.getMessage() for r in logs.records if r.levelno == logging.INFO]
        for pattern in (summary, inf, nan):
            self.assertTrue(any(re.match(pattern, w) for w in warnings), (pattern, warnings))
        self.assertTrue(any(re.match(r"^final validation P \d\.\d{4}  R \d\.\d{4}  mAP50 \d\.\d{4}  mAP50-95 ", i)
                            for i in infos), infos)
        # verbose=True: the summary of the problems on stderr, the run on stdout
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            m.train(data=data, save=0, **TRAIN)
        for pattern in (summary, inf, nan):
            self.assertRegex(err.getvalue(), re.compile(pattern, re.M))
        self.assertNotIn("coord_range", out.getvalue())
        self.assertRegex(out.getvalue(), r"final validation P .*  mAP50 ")
        # val: the summary first, as `vt val`; verbose=False: to the logger, metrics as info
        with contextlib.redirect_stdout(out), self.assertLogs("visiontrain", "INFO") as logs:
            m.val(data=data, verbose=False)
        text = [(r.levelno, r.getMessage()) for r in logs.records]
        self.assertTrue(any(lv == logging.WARNING and re.match(nan, t) for lv, t in text), text)
        self.assertTrue(any(lv == logging.INFO and t.startswith("val (4 images): loss ")
                            for lv, t in text), text)
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            m.val(data=data)
        self.assertRegex(err.getvalue(), re.compile(summary, re.M))
        m.close()


class ValTest(unittest.TestCase):
    def test_val(self):
        for task, (model, _, _, _) in TRAINED.items():
            with self.subTest(task=task):
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    m = model.val()          # the data of the last train()
                self.assertIn("val_loss", m)
                self.assertNotIn("lr", m)
                self.assertRegex(out.getvalue(), r"^val \(\d+ images\): loss ")
                quiet = io.StringIO()
                with contextlib.redirect_stdout(quiet):
                    m2 = model.val(data=TRAINED[task][3], split="train", verbose=False)
                self.assertEqual(quiet.getvalue(), "")
                self.assertEqual(set(m2), set(m))
                # the weights the model holds after train() are the ones its metrics measured
                key = {"classify": "top1", "detect": "map50", "segment": "miou"}[task]
                self.assertAlmostEqual(m[key], TRAINED[task][1][key], places=5)
        with self.assertRaises(TypeError):
            vt.Model(os.path.join(TRAINED["classify"][0].run_dir, "weights", "best.vtm")).val()


class PredictTest(unittest.TestCase):
    def check_results(self, results, task, n):
        self.assertEqual(len(results), n)
        model = TRAINED[task][0]
        for r in results:
            self.assertIsInstance(r, vt.Results)
            self.assertEqual(r.names, model.names)
            self.assertEqual(r.orig_shape, (TASKS[task][2]["imgsz"],) * 2)
            others = {"classify": ("boxes", "masks"), "detect": ("probs", "masks"),
                      "segment": ("boxes", "probs")}[task]
            for attr in others:
                self.assertIsNone(getattr(r, attr))
            if task == "classify":
                p = r.probs
                self.assertIsInstance(p, vt.Probs)
                self.assertEqual(p.data.shape, (model.num_classes,))
                self.assertEqual(p.data.dtype, numpy.float32)
                self.assertAlmostEqual(float(p.data.sum()), 1.0, places=4)
                self.assertEqual(p.top1, int(numpy.argmax(p.data)))
                self.assertEqual(len(p.top5), min(5, model.num_classes))
                self.assertAlmostEqual(p.top1conf, float(p.data.max()), places=6)
            elif task == "detect":
                b = r.boxes
                self.assertIsInstance(b, vt.Boxes)
                self.assertTrue(1 <= len(b) <= 5)
                self.assertEqual(b.xyxy.shape, (len(b), 4))
                self.assertEqual(b.xyxy.dtype, numpy.float32)
                self.assertEqual(b.conf.shape, (len(b),))
                self.assertEqual(b.cls.dtype, numpy.int64)
                self.assertTrue(((b.cls >= 0) & (b.cls < model.num_classes)).all())
                self.assertTrue((b.xyxy[:, 2] > b.xyxy[:, 0]).all())
                self.assertTrue(numpy.allclose(b.xyxyn * 64, b.xyxy, atol=1e-3))
                self.assertTrue(numpy.allclose(b.xywh[:, 2], b.xyxy[:, 2] - b.xyxy[:, 0]))
                self.assertEqual(b.data.shape, (len(b), 6))
                self.assertEqual(list(b.conf), sorted(b.conf, reverse=True))
                first = b[0]
                self.assertEqual(len(first), 1)
                self.assertTrue(numpy.array_equal(first.xyxy[0], b.xyxy[0]))
                self.assertEqual(len(list(b)), len(b))
                self.assertEqual(len(r), len(b))
                self.assertEqual(r.summary()[0]["name"], model.names[int(b.cls[0])])
            else:
                mk = r.masks
                self.assertIsInstance(mk, vt.Masks)
                self.assertEqual(mk.data.shape, (64, 64))
                self.assertEqual(mk.data.dtype, numpy.uint8)
                self.assertTrue(set(mk.classes) <= set(model.names))
                self.assertEqual(sorted(numpy.unique(mk.data).tolist()), mk.classes)
                self.assertAlmostEqual(sum(mk.area(c) for c in mk.classes), 1.0)

    @unittest.skipIf(numpy is None, "numpy is not installed")
    def test_sources_and_results(self):
        kw = dict(conf=0.0, max_det=5, verbose=False)
        for task in TASKS:
            model = TRAINED[task][0]
            folder, files = val_images(task)
            with self.subTest(task=task):
                one = model.predict(files[0], **kw)
                self.check_results(one, task, 1)
                self.assertEqual(one[0].path, files[0])
                listed = model.predict(files, **kw)
                self.check_results(listed, task, 2)
                whole = model.predict(folder, **kw)
                self.check_results(whole, task, len(os.listdir(folder)))
                self.assertEqual([r.path for r in whole[:2]], files)
                globbed = model.predict(os.path.join(folder, "*.png"), **kw)
                self.assertEqual([r.path for r in globbed], [r.path for r in whole])
                # numpy arrays: one (H, W, C), a list of arrays, a batch (N, H, W, C)
                size = TASKS[task][2]["imgsz"]
                arr = numpy.zeros((size, size, 3), numpy.uint8)
                arr[size // 4:size // 2, size // 4:size // 2] = 200
                self.check_results(model.predict(arr, **kw), task, 1)
                self.check_results(model.predict([arr, arr[:, :, 0]], **kw), task, 2)
                batch = model.predict(numpy.stack([arr, arr, arr]), **kw)
                self.check_results(batch, task, 3)
                self.assertEqual([r.path for r in batch], ["image0", "image1", "image2"])
        with self.assertRaises(FileNotFoundError):
            TRAINED["classify"][0].predict(os.path.join(TMP, "cls"), verbose=False)  # no images

    def test_verbose_predict(self):
        model = TRAINED["detect"][0]
        _, files = val_images("detect")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            model.predict(files, conf=0.0, max_det=2)
        lines = out.getvalue().splitlines()
        self.assertEqual(len(lines), 2)
        self.assertRegex(lines[0], r"^image 1/2 .*00000\.png: 64x64 \d+ \w+.* \(\d+\.\d ms\)$")


    def test_pil_image(self):
        try:
            from PIL import Image
        except ImportError:
            self.skipTest("Pillow is not installed")
        model = TRAINED["classify"][0]
        _, files = val_images("classify", 1)
        with Image.open(files[0]) as im:
            r = model.predict(im.convert("RGB"), verbose=False)[0]
        self.assertEqual(r.orig_shape, (32, 32))
        self.assertEqual(r.probs.top1,
                         model.predict(files[0], verbose=False)[0].probs.top1)

    def test_image_size_from_headers(self):
        from visiontrain._results import image_size
        _, files = val_images("detect", 1)
        self.assertEqual(image_size(files[0]), (64, 64))
        # a baseline JPEG's header: SOI, an APP0 segment, SOF0 with height 480 and width 640
        jpeg = (b"\xff\xd8" + b"\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
                + b"\xff\xc0\x00\x11\x08\x01\xe0\x02\x80\x03" + b"\x00" * 9)
        path = os.path.join(TMP, "header.jpg")
        with open(path, "wb") as f:
            f.write(jpeg)
        self.assertEqual(image_size(path), (480, 640))
        with open(path, "wb") as f:
            f.write(jpeg[:20])       # cut before the SOF segment
        self.assertIsNone(image_size(path))
        self.assertIsNone(image_size(os.path.join(TMP, "missing.png")))


class SaveTest(unittest.TestCase):
    def test_save_and_load(self):
        for task, (model, _, _, _) in TRAINED.items():
            with self.subTest(task=task):
                path = model.save(os.path.join(TMP, task + ".vtm"))
                loaded = vt.Model(path)
                self.assertEqual((loaded.arch, loaded.task, loaded.names),
                                 (model.arch, model.task, model.names))
                _, files = val_images(task, 1)
                a = model.predict(files, conf=0.0, max_det=3, verbose=False)[0]
                b = loaded.predict(files, conf=0.0, max_det=3, verbose=False)[0]
                self.assertEqual(a.summary(), b.summary())
                loaded.close()
        # the weights of the run: its best epoch's checkpoint loads the same way
        best = vt.Model(os.path.join(TRAINED["classify"][0].run_dir, "weights", "best.vtm"))
        self.assertEqual(best.task, vt.Task.CLASSIFY)
        best.close()
        # without a path: <arch>.vtm in the working folder
        cwd = os.getcwd()
        os.chdir(TMP)
        try:
            self.assertEqual(TRAINED["classify"][0].save(), "cls-n.vtm")
            self.assertTrue(os.path.isfile(os.path.join(TMP, "cls-n.vtm")))
        finally:
            os.chdir(cwd)


class TransferTest(unittest.TestCase):
    def test_fine_tune_to_other_classes_and_freeze(self):
        # the 3-class classifier, fine-tuned on 4 classes: the head is re-created, the rest
        # transferred; then freeze="backbone" keeps those layers bit for bit
        path = TRAINED["classify"][0].save(os.path.join(TMP, "cls3.vtm"))
        data4 = vt.synth_generate(os.path.join(TMP, "cls4"), classes=4, train=4, val=2,
                                  imgsz=32, seed=4)
        model = vt.Model(path)
        start = vt.Model(path)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            metrics = model.train(data=data4, epochs=1, batch=8, workers=0, save=0,
                                  freeze="backbone")
        self.assertEqual(model.num_classes, 4)
        self.assertEqual(metrics["tensors_total"], 62)
        self.assertEqual(metrics["tensors_transferred"], 60)
        self.assertIn("transferred 60/62 tensors", out.getvalue())
        layers = model.layers()
        self.assertEqual(len(layers), 43)
        self.assertEqual((layers[0]["kind"], layers[-1]["kind"]), ("input", "linear"))
        self.assertEqual(sum(l["params"] for l in layers), model.num_params)
        self.assertEqual(layers[model.backbone_layers]["kind"], "gap")
        # a model of another class count takes everything but the head (transfer_from)
        self.assertEqual(start.transfer_from(model), (60, 62))
        with self.assertRaises(vt.VisionTrainError):
            start.transfer_from(TRAINED["detect"][0])   # another architecture
        for m in (model, start):
            m.close()


NO_NUMPY_SCRIPT = r"""
import sys
sys.modules["numpy"] = None          # `import numpy` raises ImportError from here on
sys.path.insert(0, sys.argv[1])
import vt_test_env                    # the package and library the suite uses
import visiontrain as vt
out = {}
for task, model_path, image in zip(("classify", "detect", "segment"), sys.argv[2::2],
                                   sys.argv[3::2]):
    m = vt.Model(model_path)
    r = m.predict(image, conf=0.0, max_det=3, verbose=False)[0]
    if task == "classify":
        p = r.probs
        out[task] = [type(p.data).__name__, type(p.data[0]).__name__, type(p.top1).__name__,
                     type(p.top5).__name__, type(p.top5conf).__name__]
    elif task == "detect":
        b = r.boxes
        out[task] = [type(b.xyxy).__name__, type(b.xyxy[0]).__name__, len(b.xyxy[0]),
                     type(b.xyxy[0][0]).__name__, type(b.conf).__name__,
                     type(b.cls[0]).__name__, type(b.xyxyn).__name__, len(b)]
    else:
        d = r.masks.data
        out[task] = [type(d).__name__, len(d), type(d[0]).__name__, len(d[0]),
                     type(d[0][0]).__name__]
print(repr(out))
"""


class NoNumpyTest(unittest.TestCase):
    def test_plain_lists_without_numpy(self):
        args = []
        for task in ("classify", "detect", "segment"):
            path = TRAINED[task][0].save(os.path.join(TMP, "nonp-%s.vtm" % task))
            args += [path, val_images(task, 1)[1][0]]
        env = dict(os.environ)
        run = subprocess.run([sys.executable, "-c", NO_NUMPY_SCRIPT,
                              os.path.dirname(os.path.abspath(__file__))] + args, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             universal_newlines=True, timeout=120)
        self.assertEqual(run.returncode, 0, run.stderr)
        out = eval(run.stdout.strip().splitlines()[-1])
        self.assertEqual(out["classify"], ["list", "float", "int", "list", "list"])
        self.assertEqual(out["detect"][:7], ["list", "list", 4, "float", "list", "int", "list"])
        self.assertEqual(out["detect"][7], 3)
        self.assertEqual(out["segment"], ["list", 64, "list", 64, "int"])


def _progress(event, epoch, batch, batches, **metrics):
    return vt.Progress(event, epoch, 2, batch, batches, (epoch - 1) * batches + batch, metrics)


class _FakeTrainer(object):
    run_dir = "runs/detect/train"


class DisplayTest(unittest.TestCase):
    """The display itself, fed progress as the library gives it (no training)."""

    def test_bar_and_table(self):
        out = io.StringIO()
        p = _console.TrainPrinter(_FakeTrainer(), vt.Task.DETECT, out=out, mode="bar")
        p.last_draw = 0
        p(vt.Event.BATCH_END, _progress(vt.Event.BATCH_END, 1, 1, 4, loss=2.5,
                                        images_per_sec=100.0))
        p(vt.Event.EPOCH_END, _progress(vt.Event.EPOCH_END, 1, 4, 4, loss=2.0, val_loss=2.2,
                                        precision=0.5, recall=0.25, map50=0.3, map50_95=0.1,
                                        lr=0.01, images_per_sec=120.0, fitness=0.1))
        p(vt.Event.EPOCH_END, _progress(vt.Event.EPOCH_END, 2, 4, 4, loss=1.5, lr=0.001,
                                        images_per_sec=120.0))
        p.finish({"precision": 0.5, "recall": 0.25, "map50": 0.3, "map50_95": 0.1},
                 "runs/detect/train",
                 "runs/detect/train/weights/best.vtm")
        text = out.getvalue()
        self.assertTrue(text.startswith("run folder: runs/detect/train (weights/last.vtm"))
        self.assertIn("\repoch 1/2 [#####...............] 1/4  loss 2.5000  100 img/s  ETA ",
                      text)
        self.assertIn("\r\033[K", text)     # the bar is cleared before the table row
        self.assertRegex(text, r"\r\033\[K +epoch +loss +val_loss +P +R +mAP50 +mAP50-95 +lr "
                               r"+img/s +time\n")
        self.assertRegex(text, r"\n +1/2 +2\.0000 +2\.2000 +0\.5000 +0\.2500 +0\.3000 +0\.1000 "
                               r"+0\.010000 +120 +\d+\.\ds\n")
        self.assertRegex(text, r"\n +2/2 +1\.5000 +- +- +- +- +- +0\.001000 ")  # no validation
        self.assertIn("best mAP50-95 0.1000 at epoch 1", text)
        self.assertIn("final validation P 0.5000  R 0.2500  mAP50 0.3000  mAP50-95 0.1000",
                      text)

    def test_plain_lines_are_throttled(self):
        out = io.StringIO()
        p = _console.TrainPrinter(_FakeTrainer(), vt.Task.CLASSIFY, out=out)
        self.assertEqual(p.mode, "plain")     # not a terminal
        for b in range(1, 5):
            p(vt.Event.BATCH_END, _progress(vt.Event.BATCH_END, 1, b, 4, loss=1.0))
        self.assertNotIn("batch", out.getvalue())   # a plain line only every 10 s
        p.last_draw -= 11
        p(vt.Event.BATCH_END, _progress(vt.Event.BATCH_END, 2, 1, 4, loss=1.0))
        self.assertIn("epoch 2/2 batch 1/4  loss 1.0000", out.getvalue())

    def test_durations(self):
        self.assertEqual(_console.fmt_duration(3725), "1:02:05")
        self.assertEqual(_console.fmt_duration(90061), "1d 01:01")
        self.assertEqual(_console.fmt_duration(None), "?")


if __name__ == "__main__":
    unittest.main()
