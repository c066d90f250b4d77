"""Python bindings of instance segmentation models: Model.instances() on a file and on pixels,
and Model.predict() results (boxes plus one mask per box at the image's size).  Run as
test_bindings.py is."""

import os
import shutil
import tempfile
import unittest

from vt_test_env import ROOT  # noqa: E402,F401  (sets up the import paths first)

import visiontrain as vt  # noqa: E402
from visiontrain import _results  # noqa: E402


def setUpModule():
    global TMP, DATA, MODEL
    TMP = tempfile.mkdtemp(prefix="vt-pyinst-")
    DATA = os.path.join(TMP, "insd")
    MODEL = os.path.join(TMP, "ins.vtm")
    vt.synth_generate(DATA, task="instance", classes=3, train=8, val=2, imgsz=64, seed=1)
    with vt.Dataset(DATA, task="instance") as ds, \
            vt.Model("iseg-n", ds.num_classes, imgsz=64) as m:
        with vt.Trainer(m, ds, epochs=1, batch=4, save=0, workers=1, plots=0) as t:
            t.run()
        m.save(MODEL)


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


def val_image(i=0):
    images = os.path.join(DATA, "images", "val")
    return os.path.join(images, sorted(os.listdir(images))[i])


def wh_bytes(mask):
    """(w, h, bytes) from either form of Instance.mask."""
    if isinstance(mask, tuple):
        return mask
    h, w = mask.shape
    return w, h, mask.tobytes()


# an untrained model's scores are low: keep every candidate, a few per image
LOW = dict(conf=0.0001, max_det=5)


class InstanceModelTest(unittest.TestCase):
    def test_instances_file_and_pixels(self):
        with vt.Model(MODEL) as m:
            self.assertEqual(m.task, vt.Task.INSTANCE)
            objs = m.instances(val_image(), **LOW)
            self.assertEqual(len(objs), 5)
            for o in objs:
                self.assertIsInstance(o, vt.Instance)
                w, h, data = wh_bytes(o.mask)
                self.assertEqual((w, h, len(data)), (64, 64, 64 * 64))
                self.assertTrue(set(data) <= {0, 1})
                self.assertTrue(0 <= o.index < 3 and 0 <= o.score <= 1)
                self.assertTrue(o.x0 <= o.x1 and o.y0 <= o.y1)
            scores = [o.score for o in objs]
            self.assertEqual(scores, sorted(scores, reverse=True))
            gray = bytes(range(40)) * 30
            objs2 = m.instances(gray, width=40, height=30, channels=1, **LOW)
            self.assertEqual(len(objs2), 5)
            for o in objs2:
                w, h, data = wh_bytes(o.mask)
                self.assertEqual((w, h, len(data)), (40, 30, 1200))
            # a buffer smaller than the count at first: max_det above the pixels' first capacity
            many = m.instances(gray, width=40, height=30, channels=1, conf=0.0, max_det=100)
            self.assertGreater(len(many), 5)
        with vt.Model("det-n", 3, imgsz=32) as d:
            with self.assertRaises(vt.UnsupportedError) as e:
                d.instances(val_image())
            self.assertIn("detect()", str(e.exception))
        with vt.Model("iseg-n", 3, imgsz=32) as i:
            with self.assertRaises(vt.UnsupportedError) as e:
                i.detect(val_image())
            self.assertIn("instances()", str(e.exception))

    def test_predict_results(self):
        m = vt.Model(MODEL)
        res = m.predict(os.path.join(DATA, "images", "val"), verbose=False, **LOW)
        self.assertEqual(len(res), 2)
        for r in res:
            self.assertEqual(r.orig_shape, (64, 64))
            self.assertEqual(len(r), 5)
            self.assertEqual(len(r.boxes), 5)
            self.assertIsInstance(r.masks, vt.InstanceMasks)
            self.assertEqual(len(r.masks), len(r.boxes))
            self.assertEqual(r.masks.shape, (64, 64))
            data = r.masks.data
            if _results.numpy_or_none() is not None:
                self.assertEqual(data.shape, (5, 64, 64))
                self.assertEqual(str(data.dtype), "uint8")
                self.assertEqual(r.masks[0].shape, (64, 64))
            else:
                self.assertEqual((len(data), len(data[0]), len(data[0][0])), (5, 64, 64))
            self.assertEqual(len(r.summary()), 5)
            self.assertIn("area", r.summary()[0])
        # the same objects as the low-level call
        objs = m.instances(res[0].path, **LOW)
        self.assertEqual([o.index for o in objs], [int(c) for c in list(res[0].boxes.cls)])


if __name__ == "__main__":
    unittest.main()
