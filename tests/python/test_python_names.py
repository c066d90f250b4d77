"""The Python layer speaks Python: a dataset's task is guessed from its path as the vt tool does
(a wrong guess says how to choose), and error messages name the Python methods to call, not
the library's C functions.  Run as test_bindings.py is."""

import ctypes
import os
import shutil
import struct
import tempfile
import unittest

from vt_test_env import ROOT  # noqa: E402,F401  (sets up the import paths first)

import visiontrain as vt  # noqa: E402
from visiontrain import _console, _core, _model  # noqa: E402


def setUpModule():
    global TMP, DET, CLS, SEG
    TMP = tempfile.mkdtemp(prefix="vt-pynames-")
    DET = os.path.join(TMP, "det")
    CLS = os.path.join(TMP, "cls")
    SEG = os.path.join(TMP, "seg")
    vt.synth_generate(DET, task="detect", classes=3, train=4, val=2, imgsz=32, seed=1)
    vt.synth_generate(CLS, classes=2, train=4, val=2, imgsz=32, seed=1)
    vt.synth_generate(SEG, task="segment", classes=3, train=4, val=2, imgsz=32, seed=1)


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


def an_image():
    images = os.path.join(DET, "images", "val")
    return os.path.join(images, sorted(os.listdir(images))[0])


class TaskGuessTest(unittest.TestCase):
    def test_guess_follows_the_vt_tool(self):
        # examples/vt task_value: detect for .yaml/.yml/.json or a folder holding a data.yaml
        self.assertEqual(_core._guess_task(os.path.join(DET, "data.yaml")), vt.Task.DETECT)
        self.assertEqual(_core._guess_task(DET), vt.Task.DETECT)
        for name in ("a.yml", "a.YAML", "instances.json"):
            self.assertEqual(_core._guess_task(os.path.join(TMP, name)), vt.Task.DETECT, name)
        self.assertEqual(_core._guess_task(CLS), vt.Task.CLASSIFY)
        self.assertEqual(_core._guess_task(os.path.join(TMP, "nothing-here")), vt.Task.CLASSIFY)

    def test_dataset_without_task(self):
        with vt.Dataset(os.path.join(DET, "data.yaml")) as ds:
            self.assertEqual(ds.task, vt.Task.DETECT)
            self.assertEqual(ds.num_classes, 3)
        with vt.Dataset(DET) as ds:
            self.assertEqual(ds.task, vt.Task.DETECT)
        with vt.Dataset(CLS) as ds:
            self.assertEqual(ds.task, vt.Task.CLASSIFY)
        with vt.Dataset(os.path.join(DET, "data.yaml"), policy="drop") as ds:  # vt_dataset_open_ex
            self.assertEqual(ds.task, vt.Task.DETECT)
        # an explicit task is used as given
        with vt.Dataset(SEG, task="segment") as ds:
            self.assertEqual(ds.task, vt.Task.SEGMENT)

    def test_validate_without_task(self):
        with vt.validate(os.path.join(DET, "data.yaml")) as report:
            self.assertEqual(report.task, vt.Task.DETECT)
        with vt.validate(CLS) as report:
            self.assertEqual(report.task, vt.Task.CLASSIFY)

    def test_wrong_guess_says_how_to_choose(self):
        notes = os.path.join(TMP, "notes.txt")
        with open(notes, "w") as f:
            f.write("not a dataset\n")
        with self.assertRaises(vt.DatasetError) as cm:
            vt.Dataset(notes)
        msg = str(cm.exception)
        self.assertIn("expected an ImageFolder layout", msg)
        self.assertIn('task="classify" was guessed', msg)
        self.assertIn('task="detect"', msg)
        self.assertIn('task="segment"', msg)
        self.assertEqual(cm.exception.message, msg)
        with self.assertRaises(vt.VisionTrainError) as cm:
            vt.validate(os.path.join(TMP, "missing.json"))
        self.assertIn('task="detect" was guessed', str(cm.exception))
        self.assertIn('task="classify"', str(cm.exception))
        # a task the caller chose is not second-guessed
        with self.assertRaises(vt.DatasetError) as cm:
            vt.Dataset(os.path.join(DET, "data.yaml"), task="classify")
        self.assertNotIn("guessed", str(cm.exception))


class PythonNamesTest(unittest.TestCase):
    def assertPythonMessage(self, exc, *names):
        msg = str(exc)
        self.assertNotIn("vt_", msg)
        for name in names:
            self.assertIn(name, msg)

    def test_prediction_with_a_model_of_another_task(self):
        img = an_image()
        pixels = dict(width=2, height=2, channels=1)
        with vt.Model("det-n", 3, imgsz=32) as det, vt.Model("cls-n", 3, imgsz=32) as cls, \
                vt.Model("seg-n", 3, imgsz=32) as seg:
            for call, model_method in [
                    (lambda: det.classify(img), "Model.detect()"),
                    (lambda: det.classify(b"\0" * 4, **pixels), "Model.detect()"),
                    (lambda: det.predict_topk(img), "Model.detect()"),
                    (lambda: det.segment(img), "Model.detect()"),
                    (lambda: cls.detect(img), "Model.classify()"),
                    (lambda: cls.segment(b"\0" * 4, **pixels), "Model.classify()"),
                    (lambda: seg.classify(img), "Model.segment()"),
                    (lambda: seg.detect(img), "Model.segment()")]:
                with self.assertRaises(vt.UnsupportedError) as cm:
                    call()
                self.assertPythonMessage(cm.exception, model_method)
                self.assertEqual(cm.exception.status, vt.Status.UNSUPPORTED)
            self.assertIn("det-n is a detection model, not a classification one",
                          str(self.raised(lambda: det.classify(img))))

    def raised(self, call):
        try:
            call()
        except vt.VisionTrainError as e:
            return e
        self.fail("no error raised")

    def test_library_advice_is_translated(self):
        # vt_trainer_step on a detection model: "... train a det-n model with vt_trainer_run"
        with vt.Dataset(DET) as ds, vt.Model("det-n", ds.num_classes, imgsz=32) as m, \
                vt.Trainer(m, ds, save=0, workers=0) as t:
            images = struct.pack("%df" % (2 * 3 * 32 * 32), *([0.0] * (2 * 3 * 32 * 32)))
            e = self.raised(lambda: t.step(images, [0, 1]))
            self.assertPythonMessage(e, "Trainer.step()", "Trainer.run()")
        # vt_trainer_run without a dataset
        with vt.Model("cls-n", 2, imgsz=32) as m, vt.Trainer(m) as t:
            self.assertPythonMessage(self.raised(t.run), "Trainer.run()")
        # vt_synth_generate into a dataset
        e = self.raised(lambda: vt.synth_generate(CLS, classes=2, train=4, val=2, imgsz=32))
        self.assertPythonMessage(e, "synth_generate()")
        # the estimator's advice (its errors go through the same translation)
        with vt.Estimator() as est:
            self.assertPythonMessage(self.raised(lambda: est.result("total_seconds")),
                                     "Estimator.run()")

    def test_translation_table(self):
        self.assertEqual(_core._python_names("x.vtm (not a training checkpoint: saved by "
                                             "vt_model_save?)"),
                         "x.vtm (not a training checkpoint: saved by Model.save()?)")
        # whole names only
        self.assertEqual(_core._python_names("vt_trainer_run_dir"), "vt_trainer_run_dir")


class LibraryDescriptionTest(unittest.TestCase):
    """The Python side's task names, titles, default models and metric keys are the library's
    (vt_task_next, vt_task_name, ...: read here through ctypes directly), for every task it
    lists, so a task the library adds needs no list here."""

    @classmethod
    def setUpClass(cls):
        cls.lib = vt.load_library()

    def text(self, b):
        return None if b is None else b.decode()

    def library_tasks(self):
        out, t = [], self.lib.vt_task_next(0)
        while t:
            out.append(t)
            t = self.lib.vt_task_next(t)
        return out

    def test_every_listed_task(self):
        lib = self.lib
        listed = self.library_tasks()
        self.assertGreaterEqual(len(listed), 3)
        self.assertEqual([int(i.task) for i in vt.tasks()], listed)
        for t, info in zip(listed, vt.tasks()):
            name, title = self.text(lib.vt_task_name(t)), self.text(lib.vt_task_title(t))
            with self.subTest(task=name):
                # the enum has the task, by the library's name
                self.assertIsInstance(info.task, vt.Task)
                self.assertEqual(info.task.name.lower(), name)
                self.assertEqual((info.name, info.title), (name, title))
                # a task argument takes its name, title and model prefix
                prefix = self.text(lib.vt_task_model_prefix(t))
                self.assertEqual(info.model_prefix, prefix)
                for spelling in (name, title, prefix.rstrip("-"), t):
                    self.assertEqual(_core._task(spelling), t, spelling)
                # its default model is one of its models, and Model() says so before building it
                default = self.text(lib.vt_task_default_model(t))
                self.assertEqual(info.default_model, default)
                self.assertTrue(default.startswith(prefix))
                self.assertEqual(vt.Model(default).task, t)
                # its metrics: the keys of the metrics dictionaries, the table's labels
                n = lib.vt_task_metrics(t, None, 0)
                ids = (ctypes.c_int * n)()
                lib.vt_task_metrics(t, ids, n)
                keys = [self.text(lib.vt_metric_name(m)) for m in ids]
                self.assertEqual(list(info.metrics), keys)
                fitness = lib.vt_task_fitness(t)
                self.assertEqual(info.fitness, self.text(lib.vt_metric_name(fitness)))
                self.assertIn(info.fitness, keys)
                for m, key in zip(ids, keys):
                    self.assertEqual(vt.Metric(m).name.lower(), key)
                labels = [self.text(lib.vt_metric_label(m)) for m in ids]
                self.assertEqual([(c[0], c[1]) for c in _console._columns(info.task)],
                                 list(zip(labels, keys)))
                self.assertEqual(_console._best(info.task)[0], info.fitness)
                # what a validation returns includes them
                self.assertTrue(set(keys) <= _model._val_metrics())

    def test_metric_keys_and_enum(self):
        # every Metric is a metric of the library, under the key its dictionaries use
        for m in vt.Metric:
            self.assertEqual(_core._metric_key(m), self.text(self.lib.vt_metric_name(m)), m)
            self.assertEqual(_core._metric_key(m), m.name.lower(), m)
        self.assertEqual(_core._metric_label(vt.Metric.MAP50_95), "mAP50-95")

    def test_every_model_name(self):
        i, seen = 0, set()
        while self.lib.vt_arch_name(i) is not None:
            arch = self.text(self.lib.vt_arch_name(i))
            t = self.lib.vt_arch_task(arch.encode())
            self.assertEqual(_core._arch_task(arch), t, arch)
            seen.add(t)
            i += 1
        self.assertEqual(seen, set(self.library_tasks()))
        self.assertIsNone(_core._arch_task("no-such-model"))

    def test_unlisted_task_values(self):
        # a task value the library does not list yet (instance segmentation before its models)
        # converts without error; one it does not know at all stays an int
        self.assertEqual(vt.Task.INSTANCE, 4)
        self.assertEqual(_core._as_enum(vt.Task, 4), vt.Task.INSTANCE)
        self.assertEqual(_core._as_enum(vt.Task, 99), 99)
        self.assertIsNone(_core._task_info(99))
        with self.assertRaises(ValueError) as cm:
            _core._task("nothing")
        for info in vt.tasks():
            self.assertIn(info.name, str(cm.exception))


if __name__ == "__main__":
    unittest.main()
