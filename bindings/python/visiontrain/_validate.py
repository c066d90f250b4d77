"""Dataset validation (vt_dataset_validate and its report) and clone_dataset (vt_dataset_clone).

    report = vt.validate("coco8/data.yaml", task="detect", policy="drop")
    for p in report.problems:
        print(p.message, p.code)
    print(report.count("images", "train"), report.class_instances("train"))
"""

import ctypes
import enum
import os

from . import _native
from ._core import (Problem, ProblemCode, Task, _as_enum, _Closable, _check, _cpath, _cstr,
                    _dataset_call, _enum_arg, _Handle, _kv_string, _path_text, _split, _text)


class Count(enum.IntEnum):
    """Per-split counts of a validation report (vt_count)."""
    IMAGES = 1        # image files the split lists
    USABLE = 2        # images training would use under the policy
    CORRUPT = 3       # images with an image problem (never usable)
    SKIPPED = 4       # images left out by policy="skip" for a label problem
    BACKGROUNDS = 5   # usable detection images without boxes
    INSTANCES = 6     # boxes of the usable images (classification: usable images)
    SIZE = 7          # readable images left out for their size (too small, too large)


def problem_code_name(code):
    """The short name of a problem code ("truncated_jpeg"); "unknown" for others."""
    return _text(_native.lib().vt_problem_code_name(int(code)))


class Report(_Closable):
    """The result of validate(): problems in a fixed order and counts per split and class.
    Everything is read when the report is made, so the object stays usable after close()."""

    def __init__(self, ptr):
        lib = _native.lib()
        self._lib = lib
        self._h = _Handle(ptr, lib.vt_report_destroy, "Report")
        self.task = _as_enum(Task, lib.vt_report_task(ptr))
        self.class_names = [_text(lib.vt_report_class_name(ptr, i))
                            for i in range(lib.vt_report_num_classes(ptr))]
        f = ctypes.c_char_p()
        line = ctypes.c_int()
        code = ctypes.c_int()
        msg = ctypes.c_char_p()
        self.problems = []
        for k in range(lib.vt_report_num_problems(ptr)):
            _check(lib.vt_report_problem(ptr, k, ctypes.byref(f), ctypes.byref(line),
                                         ctypes.byref(code), ctypes.byref(msg)))
            try:
                c = ProblemCode(code.value)
            except ValueError:
                c = code.value
            self.problems.append(Problem(_path_text(f.value), line.value, c, _text(msg.value)))
        self._counts = {}
        self._instances = {}
        for s in range(3):
            for what in Count:
                self._counts[(what, s)] = lib.vt_report_count(ptr, int(what), s)
            self._instances[s] = [lib.vt_report_class_instances(ptr, s, c)
                                  for c in range(len(self.class_names))]
        self.close()  # the copy above is all there is

    def count(self, what, split="train"):
        """A count of a split: what is a Count or its name ("images", "backgrounds", ...)."""
        what = _enum_arg(what, Count, {m.name.lower(): m for m in Count}, "count")
        return self._counts[(what, int(_split(split)))]

    def class_instances(self, split="train"):
        """Instances per class of the usable images of a split (list indexed by class)."""
        return list(self._instances[int(_split(split))])

    def summary(self):
        """{split name: {count name: value}} for the three splits."""
        return {name: {w.name.lower(): self._counts[(w, s)] for w in Count}
                for s, name in enumerate(("train", "val", "test"))}

    def __repr__(self):
        return "<visiontrain.Report %s classes=%d problems=%d>" % (
            self.task.name.lower(), len(self.class_names), len(self.problems))


def validate(path, task=None, **options):
    """Validate a dataset (vt_dataset_validate): decode every image and collect every problem.
    Without task it is guessed as Dataset() does (detect for a .yaml/.yml/.json or a folder
    holding a data.yaml, else classify).  Options: policy="drop"|"skip"|"fail" (fail raises
    DatasetError at the first problem, naming file:line), min_size=10, workers=4.  Returns a
    Report."""
    lib = _native.lib()
    out = ctypes.c_void_p()
    _dataset_call(path, task, lambda t: _check(lib.vt_dataset_validate(
        ctypes.byref(out), t, _cpath(os.fspath(path)), _cstr(_kv_string(options)))))
    return Report(out.value)


def clone_dataset(src_dir, dst_dir):
    """Copy a dataset folder to a new (or empty) folder; the source is only read."""
    _check(_native.lib().vt_dataset_clone(_cpath(os.fspath(src_dir)), _cpath(os.fspath(dst_dir))))
    return os.fspath(dst_dir)
