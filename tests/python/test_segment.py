"""Python bindings of segmentation datasets: polygons, the class mask (numpy or bytes), and a
synthetic dataset whose polygon labels and mask PNGs agree.  Run as test_bindings.py is."""

import os
import shutil
import sys
import tempfile
import unittest

from vt_test_env import ROOT  # noqa: E402,F401  (sets up the import paths first)

import visiontrain as vt  # noqa: E402


class SegmentTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="vt-pyseg-")
        self.data = os.path.join(self.tmp, "shapes")
        vt.synth_generate(self.data, task="segment", classes=3, train=6, val=2, imgsz=48, seed=2)
        with open(os.path.join(self.data, "masks.yaml"), "w") as f:
            f.write("train: images/train\nval: images/val\nmasks: masks\n"
                    "names: [background, circle, square, triangle]\n")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_polygons_and_masks(self):
        with vt.Dataset(self.data, task="segment") as ds, \
                vt.Dataset(os.path.join(self.data, "masks.yaml"), task="segment") as dm:
            self.assertEqual(ds.task, vt.Task.SEGMENT)
            self.assertEqual(ds.class_names, ["background", "circle", "square", "triangle"])
            self.assertEqual(ds.ignore_value, 255)
            self.assertEqual(ds.problems(), [])
            npoly = 0
            for split in ("train", "val"):
                for i in range(ds.num_images(split)):
                    self.assertEqual(ds.image_size(split, i), (48, 48))
                    polys = ds.polygons(split, i)
                    npoly += len(polys)
                    self.assertEqual(len(polys), ds.num_boxes(split, i))
                    for p in polys:
                        self.assertIn(p.cls, (1, 2, 3))
                        self.assertGreaterEqual(len(p.points), 3)
                        for x, y in p.points:
                            self.assertTrue(0.0 <= x <= 1.0 and 0.0 <= y <= 1.0)
                    a, b = ds.mask(split, i), dm.mask(split, i)
                    if isinstance(a, bytes):
                        self.assertEqual(len(a), 48 * 48)
                    else:
                        self.assertEqual(a.shape, (48, 48))
                        a, b = a.tobytes(), b.tobytes()
                    self.assertEqual(a, b)
                    self.assertEqual(set(a) - {0, 1, 2, 3}, set())
            self.assertGreater(npoly, 0)
            # any size for polygons; a wrong size for a mask file is an error
            small = ds.mask("train", 0, size=(24, 12))
            self.assertEqual(len(small if isinstance(small, bytes) else small.tobytes()), 288)
            with self.assertRaises(vt.DatasetError):
                dm.mask("train", 0, size=(24, 12))
            with self.assertRaises(vt.InvalidArgumentError):
                ds.mask("train", 99)

    def test_detection_dataset_has_no_masks(self):
        with vt.Dataset(self.data, task="detect") as ds:
            self.assertEqual(ds.polygons("train", 0), [])
            self.assertEqual(ds.ignore_value, -1)
            with self.assertRaises(vt.UnsupportedError):
                ds.mask("train", 0)


if __name__ == "__main__":
    unittest.main()
