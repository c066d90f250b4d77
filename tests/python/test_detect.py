"""Python bindings of detection: training a det-n model, its mAP metrics, Model.detect() on a
file and on in-memory pixels.  Run as test_bindings.py is."""

import os
import shutil
import sys
import tempfile
import unittest

from vt_test_env import ROOT  # noqa: E402,F401  (sets up the import paths first)

import visiontrain as vt  # noqa: E402


class DetectTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="vt-pydet-")
        self.data = os.path.join(self.tmp, "shapes")
        vt.synth_generate(self.data, task="detect", classes=3, train=24, val=8, imgsz=64, seed=5)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_train_and_detect(self):
        with vt.Dataset(self.data, task="detect") as ds, \
                vt.Model("det-n", ds.num_classes, imgsz=64) as m:
            self.assertEqual(m.task, vt.Task.DETECT)
            with vt.Trainer(m, ds, epochs=2, batch=8, save=0, workers=1) as t:
                t.run()
                for name in ("map50", "map50_95", "precision", "recall"):
                    v = t.metric(name)
                    self.assertTrue(0.0 <= v <= 1.0, (name, v))
                self.assertLessEqual(t.metric("map50_95"), t.metric("map50"))
                total = 0
                for c in range(ds.num_classes):
                    ap50, ap, n = t.class_ap(c)
                    total += n
                    self.assertTrue(n == 0 or (0.0 <= ap <= ap50 <= 1.0), (c, ap50, ap, n))
                self.assertGreater(total, 0)
                with self.assertRaises(vt.InvalidArgumentError):
                    t.class_ap(ds.num_classes)
            img = ds.image_path("val", 0)
            dets = m.detect(img, conf=0.0, max_det=5)
            self.assertTrue(1 <= len(dets) <= 5, dets)
            names = m.class_names
            for d in dets:
                self.assertIsInstance(d, vt.Detection)
                self.assertEqual(d.name, names[d.index])
                self.assertTrue(0.0 <= d.score <= 1.0)
                self.assertLess(d.x0, d.x1)
                self.assertLess(d.y0, d.y1)
            self.assertEqual([d.score for d in dets], sorted((d.score for d in dets), reverse=True))
            # More than the binding's first guess of 32 boxes: it grows its arrays (64 px at
            # stride 8: at most 64 cells, one box each).
            many = m.detect(img, conf=0.0, max_det=200)
            self.assertGreater(len(many), 32)
            self.assertLessEqual(len(many), 64)
            # The same image from memory gives the same boxes.
            gray = bytes(range(64)) * 64
            a = m.detect(gray, width=64, height=64, channels=1, conf=0.0, max_det=3)
            b = m.detect(bytearray(gray), width=64, height=64, channels=1, conf=0.0, max_det=3)
            self.assertEqual(a, b)
            with self.assertRaises(vt.InvalidArgumentError):
                m.detect(img, conf=1.5)
        with vt.Model("cls-n", 3, imgsz=32) as c:
            with self.assertRaises(vt.UnsupportedError):
                c.detect(os.path.join(self.data, "images", "val", "00000.png"))


if __name__ == "__main__":
    unittest.main()
