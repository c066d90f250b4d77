"""ONNX export of ops that no model family uses yet (today: flatcat) against onnxruntime.

usage: onnx_ops.py HELPER   (HELPER: the built tests/onnx_op_helper)

HELPER builds the graph, runs it through vt_model_forward and exports it (batch=dynamic); here
the file passes onnx.checker.check_model(full_check=True) and onnxruntime (CPU) must give the
library's output on the same two images to 1e-4 of its range, with the declared output shape.
Exit 77 (meson: skipped) when numpy, onnx or onnxruntime is missing, or the build has no ONNX
export.
"""

import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx
    import onnx.checker
    import onnxruntime as ort
except ImportError as e:
    print(f"SKIP: {e}; scripts/install-deps.sh installs numpy, onnx and onnxruntime")
    sys.exit(77)


def main():
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([sys.argv[1], d], capture_output=True, text=True)
        sys.stderr.write(r.stderr)
        if r.returncode == 77:
            print(r.stdout.strip())
            return 77
        if r.returncode:
            print(f"FAIL: {sys.argv[1]} exited {r.returncode}")
            return 1
        shapes = {w[0]: tuple(int(v) for v in w[1:]) for w in
                  (line.split() for line in r.stdout.splitlines())}
        x = np.fromfile(f"{d}/input.f32", dtype=np.float32).reshape(shapes["input"])
        want = np.fromfile(f"{d}/output.f32", dtype=np.float32).reshape(shapes["output"])
        model = onnx.load(f"{d}/model.onnx")
        onnx.checker.check_model(model, full_check=True)
        sess = ort.InferenceSession(f"{d}/model.onnx", providers=["CPUExecutionProvider"])
        got = sess.run(None, {"images": x})[0]
    if got.shape != want.shape:
        print(f"FAIL flatcat: onnxruntime shape {got.shape}, library {want.shape}")
        return 1
    err = float(np.max(np.abs(got - want)) / max(float(np.ptp(want)), 1e-6))
    ok = err < 1e-4
    print(f"{'ok  ' if ok else 'FAIL'} flatcat: shape {got.shape}, max error / range {err:.2g}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
