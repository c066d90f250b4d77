"""Python bindings of dataset validation and the dataset tools (vt.validate, vt.Report,
Dataset(policy=...), Dataset.split/subset/class_histogram/box_histogram/plot_labels,
vt.clone_dataset).  Run as test_bindings.py is."""

import hashlib
import os
import shutil
import sys
import tempfile
import unittest

from vt_test_env import ROOT  # noqa: E402,F401  (sets up the import paths first)

import visiontrain as vt  # noqa: E402


def tree_hash(root):
    h = hashlib.sha256()
    for d, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(d, f)
            h.update(os.path.relpath(p, root).encode())
            with open(p, "rb") as fh:
                h.update(fh.read())
    return h.hexdigest()


class ValidateTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="vt-validate-")
        self.data = os.path.join(self.tmp, "det")
        vt.synth_generate(self.data, task="detect", classes=3, train=10, val=4, imgsz=32, seed=2,
                          max_objects=3)
        # one bad label line and one file that is not an image
        with open(os.path.join(self.data, "labels", "train", "00000.txt"), "a") as f:
            f.write("7 0.5 0.5 0.1 0.1\n")
        with open(os.path.join(self.data, "labels", "train", "00000.txt")) as f:
            self.bad_line = len(f.readlines())
        with open(os.path.join(self.data, "images", "train", "zz.png"), "w") as f:
            f.write("not a png")
        self.hash = tree_hash(self.data)

    def tearDown(self):
        self.assertEqual(tree_hash(self.data), self.hash, "the dataset was modified")
        shutil.rmtree(self.tmp)

    def test_report(self):
        r = vt.validate(self.data, task="detect")
        self.assertEqual(r.task, vt.Task.DETECT)
        self.assertEqual(len(r.class_names), 3)
        codes = [(os.path.basename(p.file), p.line, p.code) for p in r.problems]
        self.assertEqual(codes, [("00000.txt", self.bad_line, vt.ProblemCode.CLASS_RANGE),
                                 ("zz.png", 0, vt.ProblemCode.UNSUPPORTED_FORMAT)])
        self.assertTrue(r.problems[0].message.startswith(r.problems[0].file + ":%d: "
                                                         % self.bad_line))
        self.assertEqual(r.count("images", "train"), 11)
        self.assertEqual(r.count(vt.Count.CORRUPT, "train"), 1)
        self.assertEqual(r.count("usable", "train"), 10)
        self.assertEqual(r.count("images", "val"), 4)
        self.assertEqual(sum(r.class_instances("train")), r.count("instances", "train"))
        self.assertEqual(r.summary()["val"]["corrupt"], 0)
        self.assertEqual(vt.problem_code_name(vt.ProblemCode.TRUNCATED_JPEG), "truncated_jpeg")
        skip = vt.validate(self.data, task="detect", policy="skip", workers=0)
        self.assertEqual(skip.count("skipped", "train"), 1)
        self.assertEqual(skip.count("usable", "train"), 9)
        with self.assertRaises(vt.DatasetError) as cm:
            vt.validate(self.data, task="detect", policy="fail")
        self.assertIn("00000.txt:%d:" % self.bad_line, str(cm.exception))
        with self.assertRaises(vt.OptionValueError):
            vt.validate(self.data, task="detect", policy="sometimes")

    def test_open_with_policy(self):
        with vt.Dataset(self.data, task="detect") as ds:
            self.assertEqual(ds.num_images("train"), 11)
        with vt.Dataset(self.data, task="detect", policy="skip", decode=True) as ds:
            self.assertEqual(ds.num_images("train"), 9)
            # the counts of an opened dataset are the report's
            r = vt.validate(self.data, task="detect", policy="skip")
            for what in vt.Count:
                for split in ("train", "val"):
                    self.assertEqual(ds.count(what, split), r.count(what, split), (what, split))
            self.assertEqual(ds.count(vt.Count.CORRUPT, "train"), 1)
            self.assertEqual(ds.count(vt.Count.SKIPPED, "train"), 1)
        with self.assertRaises(vt.DatasetError):
            vt.Dataset(self.data, task="detect", policy="fail")

    def test_tools(self):
        with vt.Dataset(self.data, task="detect", decode=True) as ds:
            a = ds.split(os.path.join(self.tmp, "a"), val=0.3, seed=4)
            b = ds.split(os.path.join(self.tmp, "b"), val=0.3, seed=4)
            for name in ("train.txt", "val.txt", "data.yaml"):
                with open(os.path.join(self.tmp, "a", name)) as fa, \
                        open(os.path.join(self.tmp, "b", name)) as fb:
                    self.assertEqual(fa.read(), fb.read())
            with vt.Dataset(a, task="detect") as s:
                self.assertEqual((s.num_images("train"), s.num_images("val")), (7, 3))
            with self.assertRaises(vt.InvalidArgumentError):
                ds.split(os.path.join(self.tmp, "a"))
            sub = ds.subset(os.path.join(self.tmp, "sub"), count=2, seed=1)
            with vt.Dataset(sub, task="detect") as s:
                self.assertEqual((s.num_images("train"), s.num_images("val")), (2, 2))
            hist = ds.class_histogram("train")
            self.assertEqual(len(hist), 3)
            boxes = sum(ds.num_boxes("train", i) for i in range(ds.num_images("train")))
            self.assertEqual(sum(hist), boxes)
            self.assertEqual(sum(ds.box_histogram("train", "width", bins=5)), boxes)
            png = ds.plot_labels(os.path.join(self.tmp, "labels.png"))
            with open(png, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        copy = vt.clone_dataset(self.data, os.path.join(self.tmp, "copy"))
        self.assertEqual(tree_hash(copy), self.hash)
        with self.assertRaises(vt.InvalidArgumentError):
            vt.clone_dataset(self.data, copy)


if __name__ == "__main__":
    unittest.main()
