"""`pip install ./bindings/python` into a fresh virtual environment, then the quick start there
with VT_LIBRARY unset: the wheel must carry the library.  Also checks the wheel itself (the
dist-info files, RECORD's hashes, the platform tag, the library under its SONAME) and the sdist.

    VT_BUILD_DIR=build python3 tests/python/wheel_install.py

VT_BUILD_DIR names the meson build folder whose library goes into the wheel (meson test passes
its own; without it the first build*/ of the repository with a library).  With
VT_TEST_WHEEL_MESON=1 pip also builds the library itself, from the sources, into a scratch meson
folder (the route without VT_BUILD_DIR; minutes).  No network is used: pip runs with --no-index
and the build backend needs nothing from PyPI.  Not a test*.py file: the unittest discovery of
the `python` test leaves it to its own meson test.
"""

import base64
import csv
import glob
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PKG_DIR = os.path.join(ROOT, "bindings", "python")
sys.path.insert(0, os.path.join(PKG_DIR, "_backend"))

import visiontrain_build as backend  # noqa: E402

QUICK_START = r"""
import os, sys
import visiontrain as vt
site = sys.argv[1]
print("version", vt.version())             # loads the library
print("library", vt.library_path())
assert os.path.realpath(vt.library_path()).startswith(os.path.realpath(site)), vt.library_path()
assert os.path.dirname(vt.__file__).startswith(site), vt.__file__
try:
    import numpy
    have_numpy = True
except ImportError:
    have_numpy = False
vt.synth_generate("shapes", classes=2, train=4, val=2, imgsz=32, seed=1)
model = vt.Model("cls-n")
metrics = model.train(data="shapes", epochs=1, imgsz=32, batch=8, workers=1)
assert "top1" in metrics and model.run_dir == os.path.join("runs", "classify", "train"), metrics
results = model.predict("shapes/val/circle", verbose=False)
assert len(results) == 2 and results[0].probs.top1 in (0, 1)
assert isinstance(results[0].probs.data, list) != have_numpy
model.save("shapes.vtm")
print("reloaded", vt.Model("shapes.vtm").names)
print("gpu", vt.no_gpu_reason())
"""


def build_dir():
    given = os.environ.get("VT_BUILD_DIR")
    if given:
        return given
    found = sorted(glob.glob(os.path.join(ROOT, "build*", "libvisiontrain.so.[0-9]")))
    return os.path.dirname(found[0]) if found else None


def clean_env(**extra):
    """The environment of a user who has not set anything up: no VT_LIBRARY, no
    LD_LIBRARY_PATH, no PYTHONPATH pointing into the repository."""
    env = dict(os.environ)
    for k in ("VT_LIBRARY", "LD_LIBRARY_PATH", "PYTHONPATH", "VT_PYTHON_INSTALLED",
              "PYTHONHOME", "VT_CUDA_PLUGIN"):
        env.pop(k, None)
    env.update(extra)
    return env


def run(cmd, cwd=None, env=None, timeout=600):
    r = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=timeout)
    if r.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s" % (" ".join(cmd), r.returncode, r.stdout))
    return r.stdout


def make_venv(path):
    """A bare virtual environment and the pip command that installs into it: this Python's pip
    with --python (no pip copied into the environment: faster), else the environment's own."""
    host_pip = subprocess.run([sys.executable, "-m", "pip", "install", "--help"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              universal_newlines=True)
    py = os.path.join(path, "bin", "python")
    if host_pip.returncode == 0 and "--python" in host_pip.stdout:
        run([sys.executable, "-m", "venv", "--without-pip", path])
        return py, [sys.executable, "-m", "pip", "--python", py]
    run([sys.executable, "-m", "venv", path])
    return py, [py, "-m", "pip"]


class WheelTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.build = build_dir()
        if not cls.build:
            raise unittest.SkipTest("no built library: set VT_BUILD_DIR to a meson build folder")
        cls.tmp = tempfile.mkdtemp(prefix="vt-wheel-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_wheel_contents(self):
        out = os.path.join(self.tmp, "dist")
        name = backend.build_wheel(out, {"build-dir": self.build})
        self.assertRegex(name, r"^visiontrain-0\.1\.0-py3-none-linux_[a-z0-9_]+\.whl$")
        with zipfile.ZipFile(os.path.join(out, name)) as z:
            names = z.namelist()
            for f in ("visiontrain/__init__.py", "visiontrain/_model.py", "visiontrain/py.typed",
                      "visiontrain/libvisiontrain.so.0"):
                self.assertIn(f, names)
            self.assertFalse([n for n in names if "__pycache__" in n or n.endswith(".pyc")])
            self.assertFalse([n for n in names if n.startswith("_backend")])
            cuda = os.path.isfile(os.path.join(self.build, "libvisiontrain-cuda.so"))
            self.assertEqual("visiontrain/libvisiontrain-cuda.so" in names, cuda)
            # the library is the build's, byte for byte, and executable once unpacked
            with open(os.path.join(self.build, "libvisiontrain.so.0"), "rb") as f:
                self.assertEqual(z.read("visiontrain/libvisiontrain.so.0"), f.read())
            mode = z.getinfo("visiontrain/libvisiontrain.so.0").external_attr >> 16
            self.assertTrue(mode & 0o111)
            info = "visiontrain-0.1.0.dist-info/"
            wheel = z.read(info + "WHEEL").decode()
            self.assertIn("Root-Is-Purelib: false", wheel)
            self.assertIn("Tag: " + name[len("visiontrain-0.1.0-"):-4], wheel)
            meta = z.read(info + "METADATA").decode()
            for line in ("Metadata-Version: 2.1", "Name: visiontrain", "Version: 0.1.0",
                         'Requires-Dist: numpy ; extra == "numpy"'):
                self.assertIn(line + "\n", meta)
            # RECORD lists every other file with its sha256 and size
            rows = list(csv.reader(io.StringIO(z.read(info + "RECORD").decode())))
            listed = {r[0]: r for r in rows}
            self.assertEqual(set(listed), set(names))
            for n in names:
                if n == info + "RECORD":
                    self.assertEqual(listed[n][1:], ["", ""])
                    continue
                data = z.read(n)
                digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
                self.assertEqual(listed[n][1:], ["sha256=" + digest.decode(), str(len(data))], n)
        # pip's metadata hook gives the same METADATA without building anything
        meta_dir = os.path.join(self.tmp, "meta")
        os.makedirs(meta_dir)
        d = backend.prepare_metadata_for_build_wheel(meta_dir)
        with open(os.path.join(meta_dir, d, "METADATA")) as f:
            self.assertEqual(f.read(), meta)

    def test_sdist_holds_the_library_sources(self):
        name = backend.build_sdist(os.path.join(self.tmp, "sdist"))
        self.assertEqual(name, "visiontrain-0.1.0.tar.gz")
        with tarfile.open(os.path.join(self.tmp, "sdist", name)) as t:
            names = set(t.getnames())
        base = "visiontrain-0.1.0/"
        for f in ("pyproject.toml", "PKG-INFO", "_backend/visiontrain_build.py",
                  "visiontrain/_core.py", "libvisiontrain/meson.build",
                  "libvisiontrain/include/visiontrain/visiontrain.h",
                  "libvisiontrain/lib/visiontrain.map"):
            self.assertIn(base + f, names)
        self.assertFalse([n for n in names if ".so" in n.rsplit("/", 1)[-1] or
                          "__pycache__" in n])

    def test_a_bad_build_dir_is_named(self):
        with self.assertRaises(backend.BuildError) as cm:
            backend._library_files(os.path.join(self.tmp))
        self.assertIn("holds no libvisiontrain.so.N", str(cm.exception))

    def test_pip_install_then_quick_start(self):
        venv = os.path.join(self.tmp, "venv")
        py, pip = make_venv(venv)
        t0 = time.time()
        log = run(pip + ["install", "--no-index", "--no-deps", PKG_DIR],
                  env=clean_env(VT_BUILD_DIR=os.path.abspath(self.build)))
        self.assertIn("Successfully installed visiontrain-0.1.0", log)
        sys.stderr.write("pip install: %.1f s\n" % (time.time() - t0))
        site = run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                   env=clean_env()).strip()
        self.assertTrue(os.path.isfile(os.path.join(site, "visiontrain", "libvisiontrain.so.0")))
        work = os.path.join(self.tmp, "work")
        os.makedirs(work)
        out = run([py, "-c", QUICK_START, site], cwd=work, env=clean_env())
        self.assertIn("version 0.1.0", out)
        self.assertIn("reloaded {0: 'circle', 1: 'square'}", out)
        self.assertTrue(os.path.isfile(os.path.join(work, "runs", "classify", "train", "weights",
                                                    "best.vtm")))

    def test_editable_install(self):
        # pip install -e on a copy of bindings/python (the library is copied into its package
        # folder, which must not happen to the source tree under test)
        copy = os.path.join(self.tmp, "editable", "python")
        shutil.copytree(PKG_DIR, copy, ignore=shutil.ignore_patterns(
            "build", "__pycache__", "libvisiontrain*"))
        py, pip = make_venv(os.path.join(self.tmp, "venv-editable"))
        log = run(pip + ["install", "--no-index", "--no-deps", "-e", copy],
                  env=clean_env(VT_BUILD_DIR=os.path.abspath(self.build)))
        self.assertIn("Successfully installed visiontrain-0.1.0", log)
        self.assertTrue(os.path.isfile(os.path.join(copy, "visiontrain", "libvisiontrain.so.0")))
        out = run([py, "-c", "import visiontrain as vt; print(vt.version()); "
                   "print(vt.__file__); print(vt.library_path())"], cwd=self.tmp,
                  env=clean_env()).split()
        self.assertEqual(out[0], "0.1.0")
        self.assertEqual(out[1], os.path.join(copy, "visiontrain", "__init__.py"))
        self.assertEqual(out[2], os.path.join(copy, "visiontrain", "libvisiontrain.so.0"))

    @unittest.skipUnless(os.environ.get("VT_TEST_WHEEL_MESON") == "1",
                         "VT_TEST_WHEEL_MESON=1 also builds the library through pip (minutes)")
    def test_pip_builds_the_library_itself(self):
        venv = os.path.join(self.tmp, "venv-meson")
        py, pip = make_venv(venv)
        scratch = os.path.join(self.tmp, "meson")
        t0 = time.time()
        log = run(pip + ["install", "-v", "--no-index", "--no-deps", "--config-settings",
                         "build-dir=" + scratch,
                         PKG_DIR], env=clean_env(), timeout=3600)
        sys.stderr.write("pip install with a meson build: %.0f s\n" % (time.time() - t0))
        self.assertRegex(log, r"visiontrain_build: \S*meson setup ")
        self.assertTrue(re.search(r"Successfully installed visiontrain-0\.1\.0", log))
        site = run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                   env=clean_env()).strip()
        work = os.path.join(self.tmp, "work-meson")
        os.makedirs(work)
        out = run([py, "-c", QUICK_START, site], cwd=work, env=clean_env())
        self.assertIn("version 0.1.0", out)


if __name__ == "__main__":
    unittest.main()
