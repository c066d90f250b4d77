"""Python bindings of segmentation models: Model.segment() on a file and on pixels, training
metrics.  Run as test_bindings.py is."""

import os
import shutil
import sys
import tempfile
import unittest

from vt_test_env import ROOT  # noqa: E402,F401  (sets up the import paths first)

import visiontrain as vt  # noqa: E402


def as_wh_bytes(mask):
    """(w, h, bytes) from either return form of Model.segment()."""
    if isinstance(mask, tuple):
        return mask
    h, w = mask.shape
    return w, h, mask.tobytes()


class SegmentModelTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="vt-pyseg-")
        self.data = os.path.join(self.tmp, "shapes")
        vt.synth_generate(self.data, task="segment", classes=3, train=16, val=4, imgsz=64, seed=5)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_train_and_segment(self):
        with vt.Dataset(self.data, task="segment") as ds, \
                vt.Model("seg-n", ds.num_classes, imgsz=32) as m:
            self.assertEqual(ds.num_classes, 4)
            self.assertEqual(m.task, vt.Task.SEGMENT)
            with vt.Trainer(m, ds, epochs=1, batch=8, save=0, workers=1) as t:
                t.run()
                self.assertTrue(0.0 <= t.metric("miou") <= 1.0)
                self.assertTrue(0.0 <= t.metric("pixel_acc") <= 1.0)
            img = ds.image_path("val", 0)
            w, h, mask = as_wh_bytes(m.segment(img))
            self.assertEqual((w, h), (64, 64))
            self.assertEqual(len(mask), 64 * 64)
            self.assertTrue(all(v < 4 for v in mask))
            gray = bytes(range(40)) * 30
            w2, h2, m2 = as_wh_bytes(m.segment(gray, width=40, height=30, channels=1))
            self.assertEqual((w2, h2, len(m2)), (40, 30, 1200))
        with vt.Model("cls-n", 3, imgsz=32) as c:
            with self.assertRaises(vt.UnsupportedError):
                c.segment(os.path.join(self.data, "images", "val", "00000.png"))


if __name__ == "__main__":
    unittest.main()
