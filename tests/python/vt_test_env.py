"""Imported first by every test module here: where the package and the library come from.

The package is imported from bindings/python unless VT_PYTHON_INSTALLED=1 (test an installed
copy); without VT_LIBRARY the first build*/libvisiontrain.so.0 of the repository is used."""

import glob
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if os.environ.get("VT_PYTHON_INSTALLED") != "1":
    sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
if not os.environ.get("VT_LIBRARY"):
    _built = sorted(glob.glob(os.path.join(ROOT, "build*", "libvisiontrain.so.0")))
    if _built:
        os.environ["VT_LIBRARY"] = _built[0]
