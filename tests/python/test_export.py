"""Python bindings of Model.export() and Model.forward(): argument handling and the results'
forms.  What the exported files compute is checked by onnx_parity.py (the `onnx` test).  Run as
test_bindings.py is."""

import array
import os
import shutil
import tempfile
import unittest

from vt_test_env import ROOT  # noqa: E402,F401  (sets up the import paths first)

import visiontrain as vt  # noqa: E402


class ExportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="vt-pyexport-")
        self.m = vt.Model("cnn-small", 3, imgsz=8, seed=3)

    def tearDown(self):
        self.m.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_forward_is_predict(self):
        self.assertEqual(self.m.output_shape, (3, 1, 1))
        px = bytes((i * 37) % 256 for i in range(8 * 8 * 3))
        want = self.m.classify(px, width=8, height=8, channels=3)
        # the predictor's conversion: pixel * (1 / 255) in float32, channel-major
        x = array.array("f", [0.0] * (2 * 3 * 64))
        inv = array.array("f", [1.0 / 255.0])[0]
        for i in range(64):
            for c in range(3):
                v = array.array("f", [px[3 * i + c] * inv])[0]
                x[c * 64 + i] = x[192 + c * 64 + i] = v
        out = self.m.forward(x)
        flat = [float(v) for v in (out.ravel() if hasattr(out, "ravel") else out)]
        self.assertEqual(len(flat), 6)
        for k in range(3):
            self.assertAlmostEqual(flat[k], want[k], places=6)
            self.assertAlmostEqual(flat[3 + k], want[k], places=6)
        with self.assertRaises(vt.InvalidArgumentError):
            self.m.forward(array.array("f", [0.0] * 10))

    def test_export_arguments(self):
        with self.assertRaises(vt.InvalidArgumentError):
            self.m.export(os.path.join(self.tmp, "m.tflite"), format="tflite")
        with self.assertRaises(vt.UnknownOptionError):
            self.m.export(os.path.join(self.tmp, "m.onnx"), bogus=1)
        with self.assertRaises(vt.OptionValueError):
            self.m.export(os.path.join(self.tmp, "m.onnx"), opset=99)
        with self.assertRaises(vt.UnsupportedError):
            self.m.export(os.path.join(self.tmp, "m.onnx"), nms=1)
        self.assertEqual(os.listdir(self.tmp), [])

    def test_export_writes(self):
        path = os.path.join(self.tmp, "m.onnx")
        try:
            self.assertEqual(self.m.export(path, batch="dynamic"), path)
        except vt.UnsupportedError as e:
            self.assertIn("protobuf-c", str(e))
            return
        self.assertGreater(os.path.getsize(path), 4 * self.m.num_params)
        with self.assertRaises(vt.NotFoundError):
            self.m.export(os.path.join(self.tmp, "no", "m.onnx"))


if __name__ == "__main__":
    unittest.main()
