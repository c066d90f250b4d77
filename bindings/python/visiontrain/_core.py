"""Pythonic classes over libvisiontrain's opaque handles."""

import array
import collections
import ctypes
import enum
import functools
import logging
import os
import re
import sys
import weakref

from . import _native
from .errors import (BadStateError, InvalidArgumentError, Status, UnsupportedError,
                     VisionTrainError, exception_for)

_log = logging.getLogger("visiontrain")


# ---- enums -------------------------------------------------------------------------------------

class Task(enum.IntEnum):
    """vt_task.  What the library says of each (name, title, models, metrics) is its own:
    tasks() lists the tasks it trains, with that description."""
    CLASSIFY = 1
    DETECT = 2
    SEGMENT = 3    # semantic: a class per pixel
    INSTANCE = 4   # instance segmentation: per object a box, class and mask


class ExportFormat(enum.IntEnum):
    ONNX = 1


class Split(enum.IntEnum):
    TRAIN = 0
    VAL = 1
    TEST = 2


class Metric(enum.IntEnum):
    LOSS = 1
    VAL_LOSS = 2
    TOP1 = 3
    TOP5 = 4
    LR = 5
    IMAGES_PER_SEC = 6
    EPOCH_SECONDS = 7
    ETA_SECONDS = 8
    COST_USD = 9
    DATA_WAIT_SECONDS = 10
    BEST_FITNESS = 11
    FITNESS = 12
    DEVICE_MEMORY_BYTES = 13
    PRECISION = 14
    RECALL = 15
    MAP50 = 16
    MAP50_95 = 17
    MIOU = 18
    PIXEL_ACC = 19
    F1 = 20
    # the training GPU through NVML (absent on the CPU and without NVML)
    GPU_UTIL = 21
    GPU_MEMORY_USED_BYTES = 22
    GPU_MEMORY_TOTAL_BYTES = 23
    GPU_POWER_W = 24
    GPU_TEMP_C = 25
    # the run started from another model's weights (other classes, pretrained=)
    TENSORS_TRANSFERRED = 26
    TENSORS_TOTAL = 27
    # instance segmentation: the masks' scores (the boxes' are PRECISION ... MAP50_95)
    MASK_PRECISION = 28
    MASK_RECALL = 29
    MASK_MAP50 = 30
    MASK_MAP50_95 = 31


class Event(enum.IntEnum):
    """vt_event.  Progress callbacks only see these; events a newer library adds are not
    passed on."""
    BATCH_END = 1
    EPOCH_END = 2
    CHECKPOINT_SAVED = 3


class StopReason(enum.IntEnum):
    """Why the last Trainer.run() stopped (vt_stop_reason)."""
    NONE = 0
    COMPLETED = 1
    EARLY = 2
    TIME = 3
    CANCELLED = 4


class ProblemCode(enum.IntEnum):
    """Kinds of problems recorded while opening a dataset (vt_problem_code)."""
    BAD_LINE = 1
    CLASS_RANGE = 2
    COORD_RANGE = 3
    ZERO_SIZE = 4
    DUPLICATE = 5
    MISSING_SPLIT = 6
    MISSING_IMAGE = 7
    LABEL_UNREADABLE = 8
    BAD_ANNOTATION = 9
    TRUNCATED = 10
    IMAGE_UNREADABLE = 11
    CORRUPT_IMAGE = 12
    TRUNCATED_JPEG = 13
    IMAGE_TOO_SMALL = 14
    UNSUPPORTED_FORMAT = 15
    POLYGON_POINTS = 16
    EMPTY_SPLIT = 17
    CLASS_COUNT = 18
    MISSING_MASK = 19
    BAD_MASK = 20
    OUTSIDE_ROOT = 21
    SYMLINK_LOOP = 22
    BROKEN_LINK = 23
    IMAGE_TOO_LARGE = 24


class LogLevel(enum.IntEnum):
    ERROR = 1
    WARNING = 2
    INFO = 3
    DEBUG = 4


class OptionType(enum.IntEnum):
    INT = 1
    FLOAT = 2
    STRING = 3


class OptionScope(enum.IntFlag):
    """Which handle or call takes an option (OptionInfo.scopes; an option may serve two)."""
    TRAINER = 1            # Trainer.set(), Trainer(...)
    MODEL = 2              # Model(arch, n, **options)
    ESTIMATOR = 4          # Estimator.set()
    DATASET_OPEN = 8       # Dataset(path, **options)
    DATASET_VALIDATE = 16  # validate(path, **options)
    DATASET_SPLIT = 32     # Dataset.split(out_dir, val, seed)
    DATASET_SUBSET = 64    # Dataset.subset(out_dir, fraction, count, seed)
    SYNTH_CLASSIFY = 128   # synth_generate(dir, "classify", **options)
    SYNTH_DETECT = 256     # synth_generate(dir, "detect" or "segment", **options)
    CALIBRATE = 512        # Estimator.calibrate(device, **options)
    EXPORT = 1024          # Model.export(path, format, **options)


# The method giving each task's per-image result (the library's message names C functions).
_TASK_METHODS = {Task.CLASSIFY: "classify()", Task.DETECT: "detect()", Task.SEGMENT: "segment()",
                 Task.INSTANCE: "instances()"}

# vt_box_measure, by the names Dataset.box_histogram takes
_BOX_MEASURES = {"width": 1, "height": 2, "sqrt_area": 3}

_SPLIT_NAMES = {"train": Split.TRAIN, "val": Split.VAL, "valid": Split.VAL,
                "validation": Split.VAL, "test": Split.TEST}
_LOG_TO_LOGGING = {LogLevel.ERROR: logging.ERROR, LogLevel.WARNING: logging.WARNING,
                   LogLevel.INFO: logging.INFO, LogLevel.DEBUG: logging.DEBUG}


def _enum_arg(value, enum_cls, names, what):
    if isinstance(value, str):
        try:
            return names[value.strip().lower()]
        except KeyError:
            raise ValueError("unknown %s %r; expected one of %s"
                             % (what, value, ", ".join(sorted(names)))) from None
    try:
        return enum_cls(value)
    except ValueError:
        raise ValueError("unknown %s %r" % (what, value)) from None


def _task(value):
    return _enum_arg(value, Task, _task_names(), "task")


def _guess_task(path):
    """The task of a dataset path when none is given, as the library guesses it from the
    layout (vt_dataset_guess_task: detect for a .yaml/.yml/.json file or a folder holding a
    data.yaml, else classify)."""
    return Task(_native.lib().vt_dataset_guess_task(os.fsencode(os.fspath(path))))


_LABELS_IMAGE_CLASS = 1  # VT_LABELS_IMAGE_CLASS of vt_task_label_kinds


def _labels_per_image(task):
    """Whether a task's datasets give one class per image (an ImageFolder) rather than
    objects or pixels (the library's vt_task_label_kinds)."""
    return bool(_native.lib().vt_task_label_kinds(int(task)) & _LABELS_IMAGE_CLASS)


def _dataset_call(path, task, call):
    """call(vt_task) for a dataset path: with task=None the task is guessed from the path, and
    a failure says so and how to choose."""
    if task is not None:
        return call(_task(task))
    guess = _guess_task(path)
    try:
        return call(guess)
    except VisionTrainError as e:
        others = " or ".join('task="%s"' % t.name for t in tasks() if t.task != guess)
        e.message = '%s (task="%s" was guessed from the path; pass %s to choose)' % (
            e.message, _task_info(guess).name, others)
        e.args = (e.message,)
        raise


def _split(value):
    return _enum_arg(value, Split, _SPLIT_NAMES, "split")


def _metric(value):
    names = {m.name.lower(): m for m in Metric}
    names.update((key, _as_enum(Metric, i)) for i, (key, _) in _metric_table().items())
    return _enum_arg(value, Metric, names, "metric")


def _log_level(value):
    return _enum_arg(value, LogLevel, {m.name.lower(): m for m in LogLevel}, "log level")


# ---- tasks and metrics, as the library describes them ----------------------------------------
# Names, titles, model prefixes and default models, each task's metrics and fitness, each
# metric's key and label: read from the library once (its strings are static), so a task or
# metric a newer library adds shows up here without a change.

class TaskInfo(collections.namedtuple(
        "TaskInfo", "task name title model_prefix default_model metrics fitness")):
    """A task as the library describes it (tasks()): task (a Task, or the int of a task these
    bindings have no member for), name ("detect": the run folder under a project), title
    ("detection"), model_prefix ("det-"), default_model ("det-n"), metrics (the keys of the
    metrics its validation reports, in the order of its results.csv columns: ("precision",
    "recall", "map50", "map50_95")) and fitness (the key of the metric its best checkpoint is
    chosen by: "map50_95")."""
    __slots__ = ()


def _as_enum(enum_cls, value):
    """enum_cls(value), or the int where the enum has no member for it (a newer library's)."""
    try:
        return enum_cls(value)
    except ValueError:
        return int(value)


@functools.lru_cache(maxsize=None)
def _metric_table():
    """{metric id: (key, label)} for every metric the library names (vt_metric_name,
    vt_metric_label): "map50_95" / "mAP50-95", ..."""
    lib = _native.lib()
    table = {}
    for i in range(1, 256):   # the metric ids (vt_metric) start at 1 and stay small
        key = lib.vt_metric_name(i)
        if key is not None:
            table[i] = (_text(key), _text(lib.vt_metric_label(i)))
    return table


def _metric_key(metric):
    """The metrics dictionaries' key of a metric ("map50_95"), None for one the library does
    not know."""
    return _metric_table().get(int(metric), (None, None))[0]


def _metric_label(metric):
    """A metric's label in tables ("mAP50-95"), None as above."""
    return _metric_table().get(int(metric), (None, None))[1]


def _describe_task(lib, task):
    n = lib.vt_task_metrics(task, None, 0)
    ids = (ctypes.c_int * max(n, 1))()
    n = min(n, lib.vt_task_metrics(task, ids, n))
    return TaskInfo(_as_enum(Task, task), _text(lib.vt_task_name(task)),
                    _text(lib.vt_task_title(task)), _text(lib.vt_task_model_prefix(task)),
                    _text(lib.vt_task_default_model(task)),
                    tuple(_metric_key(m) for m in ids[:n]),
                    _metric_key(lib.vt_task_fitness(task)))


@functools.lru_cache(maxsize=None)
def _task_table():
    lib = _native.lib()
    out, t = [], lib.vt_task_next(0)
    while t and len(out) < 64:
        out.append(_describe_task(lib, t))
        t = lib.vt_task_next(t)
    return tuple(out)


def tasks():
    """The tasks the library trains, in its order: a list of TaskInfo (name, title, model
    prefix and default model, metric keys, fitness)."""
    return list(_task_table())


@functools.lru_cache(maxsize=None)
def _task_info(task):
    """The library's TaskInfo of a task value (listed by tasks() or not), None for a value that
    is not a task."""
    for info in _task_table():
        if info.task == task:
            return info
    lib = _native.lib()
    if lib.vt_task_name(int(task)) is None:
        return None
    return _describe_task(lib, int(task))


def _task_title(task):
    info = _task_info(task)
    return info.title if info is not None else "task %d" % int(task)


@functools.lru_cache(maxsize=None)
def _task_names():
    """The names a task argument takes: each task's name ("detect"), title ("detection") and
    model prefix without its dash ("det")."""
    names = {}
    for info in _task_table():
        for name in (info.name, info.title, (info.model_prefix or "").rstrip("-")):
            if name:
                names[name.lower()] = info.task
    return names


def _arch_task(arch):
    """The task of an architecture name ("det-s": detection; vt_arch_task), None for a name
    the library does not know."""
    t = _native.lib().vt_arch_task(_cstr(str(arch)))
    return _as_enum(Task, t) if t else None


# ---- strings and errors -------------------------------------------------------------------------

def _text(b):
    """A C string from the library -> str (None stays None)."""
    if b is None:
        return None
    return b.decode("utf-8", "replace")


def _path_text(b):
    if b is None:
        return None
    return os.fsdecode(b)


def _cpath(path):
    """A path argument -> bytes for a const char *."""
    p = os.fsencode(path)
    if b"\0" in p:
        raise ValueError("embedded NUL in path %r" % (path,))
    return p


def _cstr(s):
    if s is None:
        return None
    b = s.encode("utf-8") if isinstance(s, str) else bytes(s)
    if b"\0" in b:
        raise ValueError("embedded NUL in string %r" % (s,))
    return b


def _format_value(v):
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return ",".join(_format_value(x) for x in v)
    return str(v)


def _kv_string(options):
    """{"imgsz": 32, "seed": 1} -> "imgsz=32 seed=1" (None when empty)."""
    parts = []
    for key, value in options.items():
        if value is None:
            continue
        text = _format_value(value)
        if any(c.isspace() for c in text) or not text:
            raise ValueError("option %s=%r: values of this options string cannot be empty or "
                             "contain spaces" % (key, value))
        parts.append("%s=%s" % (key, text))
    return " ".join(parts) if parts else None


# The library's messages advise C calls; a Python user makes these instead.  (Model's
# prediction methods check the model's task themselves: _require_task.)
_PYTHON_NAMES = [
    ("vt_model_save", "Model.save()"),
    ("vt_synth_generate", "synth_generate()"),
    ("vt_estimator_run()", "Estimator.run()"),
    ("vt_estimator_rank()", "Estimator.rank()"),
    ("vt_trainer_run", "Trainer.run()"),
    ("vt_trainer_step", "Trainer.step()"),
    ("(created with NULL)", "(created without one)"),
]
_PYTHON_NAMES_RE = re.compile("|".join(re.escape(c) + r"(?!\w)" for c, _ in _PYTHON_NAMES))


def _python_names(message):
    names = dict(_PYTHON_NAMES)
    return _PYTHON_NAMES_RE.sub(lambda m: names[m.group(0)], message)


def _raise(status, handle_message=None):
    """Raise the exception for a non-OK vt_status.  Call right after the failing call."""
    lib = _native.lib()
    message = handle_message or _text(lib.vt_last_error())
    status_string = _text(lib.vt_status_string(status))
    if message:
        message = _python_names(message)
    else:
        message = status_string or ("vt_status %d" % status)
    raise exception_for(status)(message, status, status_string)


def _check(status, last_error_fn=None, handle=None):
    """Raise if status is not VT_OK, with the handle's message when there is a handle."""
    if status == 0:
        return
    msg = None
    if last_error_fn is not None and handle:
        msg = _text(last_error_fn(handle))
    _raise(status, msg)


# ---- handle lifetime ----------------------------------------------------------------------------

class _Handle(object):
    """One native handle and its destroy function.

    A trainer borrows its model and dataset, which must outlive it.  The borrowed handles list
    the borrowing ones in ``borrowers``; closing a handle first destroys its borrowers.  This
    keeps the C rule even when the garbage collector finalises a reference cycle in any order.
    """
    __slots__ = ("ptr", "destroy", "kind", "borrowers", "parents", "busy")

    def __init__(self, ptr, destroy, kind):
        self.ptr = ptr
        self.destroy = destroy
        self.kind = kind
        self.borrowers = []
        self.parents = []
        self.busy = False

    def borrow(self, *parents):
        for p in parents:
            if p is not None:
                p.borrowers.append(self)
                self.parents.append(p)

    def close(self):
        if self.ptr is None:
            return
        if self.busy:
            raise BadStateError("cannot close a %s while it is in use (during Trainer.run())"
                                % self.kind, Status.BAD_STATE)
        for b in list(self.borrowers):
            b.close()
        ptr, self.ptr = self.ptr, None
        for p in self.parents:
            try:
                p.borrowers.remove(self)
            except ValueError:
                pass
        self.parents = []
        self.destroy(ptr)

    def get(self):
        if self.ptr is None:
            raise BadStateError("the %s is closed" % self.kind, Status.BAD_STATE)
        return self.ptr


class _Closable(object):
    _h = None

    def close(self):
        """Free the native handle now (also done by ``with`` and when garbage collected).
        Closing a Model or Dataset also closes the Trainers that use it."""
        if self._h is not None:
            self._h.close()

    @property
    def closed(self):
        return self._h is None or self._h.ptr is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        h = self._h
        if h is None or h.ptr is None:
            return
        try:
            h.busy = False
            h.close()
        except Exception:  # interpreter shutdown: the library may already be gone
            pass


# ---- version and options ------------------------------------------------------------------------

def checkpoint_args(path):
    """The run arguments a training checkpoint holds (vt_checkpoint_args), as a dict of strings:
    data, task, model, num_classes, channels, imgsz, dropout, then the trainer options."""
    lib = _native.lib()
    n = ctypes.c_size_t(0)
    _check(lib.vt_checkpoint_args(_cpath(path), None, 0, ctypes.byref(n)))  # the size
    buf = ctypes.create_string_buffer(n.value)
    _check(lib.vt_checkpoint_args(_cpath(path), buf, n.value, ctypes.byref(n)))
    out = collections.OrderedDict()
    for line in _path_text(buf.value).splitlines():
        k, _, v = line.partition("=")
        out[k] = v
    return out


def version():
    """Version string of the loaded library, e.g. "0.1.0"."""
    return _text(_native.lib().vt_version_string())


def version_info():
    """(major, minor, patch) of the loaded library."""
    n = _native.lib().vt_version()
    return (n // 10000, n // 100 % 100, n % 100)


def cpu_kernels():
    """What runs the CPU's matrix products, e.g. "BLIS 0.9.0 skx ..." (see vt_cpu_kernels)."""
    return _text(_native.lib().vt_cpu_kernels())


def abi_version():
    """ABI version of the loaded library (the bindings refuse to load any other than 0)."""
    return _native.lib().vt_abi_version()


class OptionInfo(collections.namedtuple("OptionInfo", "key id type min max help")):
    """An option: key (as in key=value), id (vt_option value), type (OptionType), min and max
    (numeric bounds; 0 for strings), help (one line).  ``scopes`` (OptionScope) says which
    handles or calls take it, ``target`` names the first of them in lower case ("trainer" for
    Trainer.set() options, "model" for Model(...) options, "estimator", "dataset_open"...; a key
    such as imgsz or seed can exist for several), ``default`` is its default value."""
    __slots__ = ()

    @property
    def scopes(self):
        return OptionScope(_native.lib().vt_option_scopes(self.id))

    @property
    def target(self):
        bits = int(self.scopes)
        return OptionScope(bits & -bits).name.lower() if bits else ""

    @property
    def default(self):
        num = ctypes.c_double()
        text = ctypes.c_char_p()
        _check(_native.lib().vt_option_default(self.id, ctypes.byref(num), ctypes.byref(text)))
        if self.type == OptionType.STRING:
            return _text(text.value)
        return int(num.value) if self.type == OptionType.INT else num.value


def option_info(option, scope=None):
    """Describe one option, by vt_option number or key (a key is looked up among
    options(scope): the trainer's first, then the model's, by default)."""
    if isinstance(option, str):
        for info in options(scope):
            if info.key == option:
                return info
        raise exception_for(Status.UNKNOWN_OPTION)("unknown option %r" % option,
                                                   Status.UNKNOWN_OPTION)
    lib = _native.lib()
    key = ctypes.c_char_p()
    typ = ctypes.c_int()
    lo = ctypes.c_double()
    hi = ctypes.c_double()
    hlp = ctypes.c_char_p()
    _check(lib.vt_option_info(int(option), ctypes.byref(key), ctypes.byref(typ), ctypes.byref(lo),
                              ctypes.byref(hi), ctypes.byref(hlp)))
    try:
        t = OptionType(typ.value)
    except ValueError:
        t = typ.value
    return OptionInfo(_text(key.value), int(option), t, lo.value, hi.value, _text(hlp.value))


def options(scope=None):
    """The options the library knows, in vt_option order: by default those of the trainer and
    of vt_model_create(); with ``scope`` (an OptionScope, several or'ed together, or "all")
    those that any of its handles or calls take, e.g.
    options(OptionScope.ESTIMATOR) or options(OptionScope.SYNTH_DETECT)."""
    if scope is None:
        scope = OptionScope.TRAINER | OptionScope.MODEL
    elif scope == "all":
        scope = ~0
    lib = _native.lib()
    out = []
    seen = set()
    opt = lib.vt_option_next(0)
    while opt != 0 and opt not in seen:
        seen.add(opt)
        if lib.vt_option_scopes(opt) & int(scope):
            out.append(option_info(opt))
        opt = lib.vt_option_next(opt)
    return out


_OPT_IMGSZ = 102          # VT_OPT_IMGSZ (the trainer's); VT_OPT_MODEL_IMGSZ (301) shares its key
_MODEL_OPTIONS_FROM = 300  # vt_option values >= 300 are vt_model_create() options


def _trainer_option_id(key):
    """A trainer option key -> vt_option (keys shared with model options mean the trainer's)."""
    if not isinstance(key, str):
        return int(key)
    matches = [o for o in options() if o.key == key]
    for o in matches:
        if o.id < _MODEL_OPTIONS_FROM:
            return o.id
    if matches:
        return matches[0].id
    raise exception_for(Status.UNKNOWN_OPTION)("unknown option %r" % key, Status.UNKNOWN_OPTION)


def synth_generate(directory, task="classify", **options):
    """Write a synthetic dataset under ``directory``; returns the path as a str.

    Classification options (ints): classes=4 (2..8), train=100, val=40 (images per class),
    imgsz=32, seed=0.  Detection (task="detect"; YOLO layout with data.yaml): classes=3 (3..8),
    train=200, val=50 (images), imgsz=160, seed=0, max_objects=6 (0..64).  Segmentation
    (task="segment"): the detection options; YOLO-seg polygons in labels/ and the same labels
    as class-id PNGs in masks/ (0 background, shape class k -> k+1).
    """
    path = os.fspath(directory)
    _check(_native.lib().vt_synth_generate(_cpath(path), _task(task),
                                           _cstr(_kv_string(options))))
    return path


# ---- devices ------------------------------------------------------------------------------------

def device_count():
    """Number of CUDA GPUs usable by the loaded library (0 without CUDA, driver or GPU)."""
    return _native.lib().vt_device_count()


def devices():
    """The usable CUDA GPUs: a list of dicts with index, name, compute_capability ((major,
    minor)), total_bytes and free_bytes.  [] when the library has no CUDA, its CUDA module
    (libvisiontrain-cuda.so) cannot be loaded, or there is no GPU (`vt info` says which)."""
    lib = _native.lib()
    out = []
    for i in range(lib.vt_device_count()):
        name = ctypes.create_string_buffer(256)
        major, minor = ctypes.c_int(), ctypes.c_int()
        total, free = ctypes.c_uint64(), ctypes.c_uint64()
        _check(lib.vt_device_info(i, name, len(name), ctypes.byref(major), ctypes.byref(minor),
                                  ctypes.byref(total), ctypes.byref(free)))
        out.append({"index": i, "name": _text(name.value),
                    "compute_capability": (major.value, minor.value),
                    "total_bytes": total.value, "free_bytes": free.value})
    return out


def no_gpu_reason():
    """None when a GPU is usable; else why not, as the library words it: no CUDA in this build,
    the CUDA module (libvisiontrain-cuda.so) or a CUDA library it needs missing, no driver..."""
    lib = _native.lib()
    if lib.vt_device_count() > 0:
        return None
    lib.vt_device_info(0, None, 0, None, None, None, None)
    return _text(lib.vt_last_error())


# ---- datasets -----------------------------------------------------------------------------------

Box = collections.namedtuple("Box", "cls cx cy w h")
#: A segmentation polygon: dataset class id (>= 1; 0 is the background) and its points, a list
#: of (x, y) normalised to 0..1 of the image.
Polygon = collections.namedtuple("Polygon", "cls points")
Problem = collections.namedtuple("Problem", "file line code message")


class Dataset(_Closable):
    """An opened dataset.  Classification (task="classify"): an ImageFolder layout.  Detection
    (task="detect"): an Ultralytics data.yaml (or a folder holding one) or a COCO instances
    JSON; see boxes() and problems().  Segmentation (task="segment"): YOLO-seg polygons, COCO
    polygons, or class-id mask PNGs (data.yaml `masks:`); see polygons() and mask().  Without
    task, as the vt tool does: detect for a .yaml/.yml/.json or a folder holding a data.yaml,
    else classify.

    Keyword options go to vt_dataset_open_ex: policy="drop"|"skip"|"fail" (what a label
    problem does: drop the box, skip the image, or raise DatasetError naming file:line),
    decode=True (decode every image, leaving out bad ones), min_size=10, workers=4."""

    def __init__(self, path, task=None, **options):
        lib = _native.lib()
        self.path = os.fspath(path)
        out = ctypes.c_void_p()

        def open_as(t):
            if options:
                _check(lib.vt_dataset_open_ex(ctypes.byref(out), t, _cpath(self.path),
                                              _cstr(_kv_string(options))))
            else:
                _check(lib.vt_dataset_open(ctypes.byref(out), t, _cpath(self.path)))

        _dataset_call(self.path, task, open_as)
        self._lib = lib
        self._h = _Handle(out.value, lib.vt_dataset_destroy, "Dataset")

    def _ptr(self):
        return self._h.get()

    @property
    def task(self):
        return _as_enum(Task, self._lib.vt_dataset_task(self._ptr()))

    @property
    def num_classes(self):
        return self._lib.vt_dataset_num_classes(self._ptr())

    @property
    def class_names(self):
        p = self._ptr()
        return [_text(self._lib.vt_dataset_class_name(p, i)) for i in range(self.num_classes)]

    def class_name(self, i):
        return _text(self._lib.vt_dataset_class_name(self._ptr(), i))

    def num_images(self, split="train"):
        """Number of images of a split (0 when the split is absent)."""
        return self._lib.vt_dataset_num_images(self._ptr(), _split(split))

    @property
    def counts(self):
        """{"train": n, "val": n, "test": n}"""
        return {s.name.lower(): self.num_images(s) for s in Split}

    def count(self, what, split="train"):
        """A count of a split as Report.count gives it (visiontrain.Count: IMAGES, USABLE,
        CORRUPT and SIZE (left out by decode=1: unreadable, and for their size), SKIPPED
        (left out by policy=skip), BACKGROUNDS, INSTANCES, or their names), for the dataset as
        opened."""
        from ._validate import Count  # _validate imports this module
        what = _enum_arg(what, Count, {m.name.lower(): m for m in Count}, "count")
        return self._lib.vt_dataset_count(self._ptr(), int(what), _split(split))

    def __len__(self):
        return self.num_images(Split.TRAIN)

    def image_path(self, split, i):
        return _path_text(self._lib.vt_dataset_image_path(self._ptr(), _split(split), i))

    def image_class(self, split, i):
        return self._lib.vt_dataset_image_class(self._ptr(), _split(split), i)

    def samples(self, split="train"):
        """List of (path, class index) of a split."""
        s = _split(split)
        return [(self.image_path(s, i), self.image_class(s, i)) for i in range(self.num_images(s))]

    def num_boxes(self, split, i):
        """Number of boxes of image i of a split (0 for a background image, an index out of
        range or a classification dataset)."""
        return self._lib.vt_dataset_num_boxes(self._ptr(), _split(split), int(i))

    def boxes(self, split, i):
        """The boxes of image i of a split (detection datasets): a list of Box(cls, cx, cy, w,
        h), plain tuples with the class id and the centre, width and height normalised to 0..1
        of the image size.  [] for a background image or a classification dataset."""
        p = self._ptr()
        s = _split(split)
        i = int(i)
        cls = ctypes.c_int()
        xywh = (ctypes.c_float * 4)()
        out = []
        for j in range(self._lib.vt_dataset_num_boxes(p, s, i)):
            _check(self._lib.vt_dataset_box(p, s, i, j, ctypes.byref(cls), xywh))
            out.append(Box(cls.value, xywh[0], xywh[1], xywh[2], xywh[3]))
        return out

    # ---- segmentation ----

    @property
    def ignore_value(self):
        """Mask value of pixels excluded from loss and metrics (segmentation; -1 otherwise)."""
        return self._lib.vt_dataset_ignore_value(self._ptr())

    def polygons(self, split, i):
        """The polygons of image i of a split (YOLO-seg / COCO segmentation datasets): a list of
        Polygon(cls, points) with class ids counting the background as 0.  [] otherwise."""
        p = self._ptr()
        s = _split(split)
        i = int(i)
        cls = ctypes.c_int()
        n = ctypes.c_int()
        out = []
        for k in range(self._lib.vt_dataset_num_polygons(p, s, i)):
            _check(self._lib.vt_dataset_polygon(p, s, i, k, ctypes.byref(cls), None, 0,
                                                ctypes.byref(n)))
            xy = (ctypes.c_float * (2 * n.value))()
            _check(self._lib.vt_dataset_polygon(p, s, i, k, None, xy, n.value, ctypes.byref(n)))
            out.append(Polygon(cls.value, [(xy[2 * q], xy[2 * q + 1]) for q in range(n.value)]))
        return out

    def image_size(self, split, i):
        """(width, height) of image i, from the file's header."""
        w = ctypes.c_int()
        h = ctypes.c_int()
        _check(self._lib.vt_dataset_image_size(self._ptr(), _split(split), int(i),
                                               ctypes.byref(w), ctypes.byref(h)))
        return w.value, h.value

    def mask(self, split, i, size=None):
        """The class mask of image i (segmentation datasets): one class id per pixel, row-major,
        at the image's own size or at size=(width, height).  A numpy uint8 array of shape
        (height, width) when numpy is imported, else bytes (len width*height).  Pixels excluded
        from training hold ignore_value."""
        s = _split(split)
        w, h = self.image_size(s, i) if size is None else (int(size[0]), int(size[1]))
        buf = (ctypes.c_uint8 * (w * h))()
        _check(self._lib.vt_dataset_mask(self._ptr(), s, int(i), buf, w, h))
        np = _np()
        if np is not None:
            return np.frombuffer(buf, dtype=np.uint8).reshape(h, w).copy()
        return bytes(buf)

    def problems(self):
        """Problems found while opening the dataset (bad label lines, boxes out of range, a
        missing val split, ...), in the order found: a list of Problem(file, line, code,
        message); line is 0 where the format has none, code a ProblemCode (an int for codes
        added later), message complete on its own ("file:line: ...")."""
        p = self._ptr()
        f = ctypes.c_char_p()
        line = ctypes.c_int()
        code = ctypes.c_int()
        msg = ctypes.c_char_p()
        out = []
        for k in range(self._lib.vt_dataset_num_problems(p)):
            _check(self._lib.vt_dataset_problem(p, k, ctypes.byref(f), ctypes.byref(line),
                                                ctypes.byref(code), ctypes.byref(msg)))
            try:
                c = ProblemCode(code.value)
            except ValueError:
                c = code.value
            out.append(Problem(_path_text(f.value), line.value, c, _text(msg.value)))
        return out

    # ---- tools (vt_dataset_split, ...; nothing of the dataset is changed) ----

    def split(self, out_dir, val=0.2, seed=0):
        """Split the train images into a new train and val: writes train.txt, val.txt (and
        test.txt) and a data.yaml naming them into out_dir (new or empty).  YOLO data.yaml
        datasets only (UnsupportedError otherwise).  Returns the data.yaml path."""
        out = os.fspath(out_dir)
        _check(self._lib.vt_dataset_split(self._ptr(), _cpath(out),
                                          _cstr(_kv_string({"val": float(val), "seed": seed}))))
        return os.path.join(out, "data.yaml")

    def subset(self, out_dir, fraction=None, count=None, seed=0):
        """A deterministic subset of every split (fraction=F or count=N), written as split()
        writes.  Returns the data.yaml path."""
        out = os.fspath(out_dir)
        opts = {"fraction": None if fraction is None else float(fraction), "count": count,
                "seed": seed}
        _check(self._lib.vt_dataset_subset(self._ptr(), _cpath(out), _cstr(_kv_string(opts))))
        return os.path.join(out, "data.yaml")

    def class_histogram(self, split="train"):
        """Instances per class of a split (boxes; classification: images), a list of ints."""
        n = max(self.num_classes, 1)
        buf = (ctypes.c_int64 * n)()
        _check(self._lib.vt_dataset_class_histogram(self._ptr(), _split(split), buf, n))
        return list(buf)[:self.num_classes]

    def box_histogram(self, split="train", measure="sqrt_area", bins=10):
        """Histogram of box width, height or sqrt(w*h) ("width" | "height" | "sqrt_area"),
        relative to the image, in `bins` equal bins over 0..1 (detection only)."""
        names = _BOX_MEASURES
        if measure not in names:
            raise ValueError("unknown measure %r; expected one of %s"
                             % (measure, ", ".join(sorted(names))))
        buf = (ctypes.c_int64 * max(int(bins), 1))()
        _check(self._lib.vt_dataset_box_histogram(self._ptr(), _split(split), names[measure],
                                                  buf, int(bins)))
        return list(buf)

    def plot_labels(self, path):
        """Write a PNG of the label distribution (instances per class; box sizes)."""
        _check(self._lib.vt_dataset_plot_labels(self._ptr(), _cpath(os.fspath(path))))
        return os.fspath(path)

    def __repr__(self):
        if self.closed:
            return "<visiontrain.Dataset %r (closed)>" % self.path
        return "<visiontrain.Dataset %r classes=%d %s>" % (self.path, self.num_classes,
                                                            self.counts)


# ---- models -------------------------------------------------------------------------------------

Prediction = collections.namedtuple("Prediction", "index name probability")
#: One detection of Model.detect(): class index and name, score (0..1), corners in the image's
#: own pixels.
Detection = collections.namedtuple("Detection", "index name score x0 y0 x1 y1")
#: One object of Model.instances(): a Detection's fields and its mask at the image's size (1
#: where the object is): a numpy uint8 array (H, W) when numpy is loaded, else a
#: (width, height, bytes) tuple with the row-major mask, as Model.segment() returns.
Instance = collections.namedtuple("Instance", "index name score x0 y0 x1 y1 mask")


def _np():
    return sys.modules.get("numpy")


def _is_numpy(x):
    return type(x).__module__.split(".")[0] == "numpy"


class Model(_Closable):
    """A model's native handle and its per-image calls (visiontrain.Model adds train, val and
    predict).  Model("cls-n", 4, imgsz=32) builds a new one; Model.load(path) reads a saved one.

    Options of a new model: channels= (1|3), imgsz=, dropout=, seed= (weight init seed).
    """

    def __init__(self, arch, num_classes, **options):
        lib = _native.lib()
        out = ctypes.c_void_p()
        _check(lib.vt_model_create(ctypes.byref(out), _cstr(arch), int(num_classes),
                                   _cstr(_kv_string(options))))
        self._init(lib, out.value)

    def _init(self, lib, ptr):
        self._lib = lib
        self._h = _Handle(ptr, lib.vt_model_destroy, "Model")
        self._threads = 0

    @property
    def threads(self):
        """CPU threads of the per-image calls (classify, detect, instances, segment, forward):
        0, the default, is every online processor; 1 the calling thread alone."""
        return self._threads

    @threads.setter
    def threads(self, n):
        self._check(self._lib.vt_model_set_threads(self._ptr(), int(n)))
        self._threads = int(n)

    @classmethod
    def load(cls, path):
        """Load a model saved with Model.save()."""
        lib = _native.lib()
        out = ctypes.c_void_p()
        _check(lib.vt_model_load(ctypes.byref(out), _cpath(path)))
        self = cls.__new__(cls)
        self._init(lib, out.value)
        return self

    def _ptr(self):
        return self._h.get()

    def _check(self, status):
        _check(status, self._lib.vt_model_last_error, self._h.ptr)

    def _require_task(self, task):
        """Prediction with a model of another task fails here, naming the method this model
        takes (the library's message names its C functions)."""
        actual = self._lib.vt_model_task(self._ptr())
        if actual != task and actual in _TASK_METHODS:
            actual = Task(actual)
            raise UnsupportedError("%s is a %s model, not a %s one: use Model.%s" % (
                self.arch, _task_title(actual), _task_title(task), _TASK_METHODS[actual]),
                Status.UNSUPPORTED)

    def save(self, path):
        """Save weights and configuration (atomically)."""
        self._check(self._lib.vt_model_save(self._ptr(), _cpath(path)))

    @property
    def task(self):
        return _as_enum(Task, self._lib.vt_model_task(self._ptr()))

    @property
    def arch(self):
        return _text(self._lib.vt_model_arch(self._ptr()))

    @property
    def num_classes(self):
        return self._lib.vt_model_num_classes(self._ptr())

    @property
    def class_names(self):
        """Class names from the training dataset; entries are None when unknown."""
        p = self._ptr()
        return [_text(self._lib.vt_model_class_name(p, i)) for i in range(self.num_classes)]

    @property
    def channels(self):
        return self._lib.vt_model_channels(self._ptr())

    @property
    def imgsz(self):
        return self._lib.vt_model_imgsz(self._ptr())

    @property
    def num_params(self):
        return self._lib.vt_model_num_params(self._ptr())

    def layers(self):
        """The layer list freeze=N counts in: one dict per layer, with index, kind ("conv",
        "bn", ...), shape (c, h, w of its output at the model's imgsz) and params."""
        p, out = self._ptr(), []
        kind, c, h, w = ctypes.c_char_p(), ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        n = ctypes.c_uint64()
        for i in range(self._lib.vt_model_num_layers(p)):
            self._check(self._lib.vt_model_layer(p, i, ctypes.byref(kind), ctypes.byref(c),
                                                 ctypes.byref(h), ctypes.byref(w),
                                                 ctypes.byref(n)))
            out.append({"index": i, "kind": _text(kind.value), "shape": (c.value, h.value, w.value),
                        "params": n.value})
        return out

    @property
    def backbone_layers(self):
        """Layers 0..backbone_layers-1 are the backbone (what freeze="backbone" freezes)."""
        return self._lib.vt_model_backbone_layers(self._ptr())

    def transfer_from(self, other):
        """Copy every tensor of `other` (a Model) whose layer matches this model's (same
        architecture, or one sharing the backbone); returns (transferred, total)."""
        k, n = ctypes.c_int(), ctypes.c_int()
        self._check(self._lib.vt_model_transfer(self._ptr(), other._ptr(), ctypes.byref(k),
                                                ctypes.byref(n)))
        return k.value, n.value

    def flops(self, imgsz=None):
        """Forward-pass FLOPs for one image (default: at the model's image size)."""
        return self._lib.vt_model_flops(self._ptr(), int(imgsz or self.imgsz))

    def classify(self, image, width=None, height=None, channels=None, stride=None):
        """Class probabilities (a list of floats summing to ~1) for one image, for a
        classification model ("cls-...").

        ``image`` is a path (str / os.PathLike: PNG or JPEG), a numpy uint8 array of shape
        (H, W) or (H, W, C) with C in 1, 3, 4, nested lists of the same shape, a PIL image, or
        8-bit interleaved pixel bytes / bytearray / memoryview / array('B') together with
        ``width``, ``height`` and ``channels`` (``stride``: bytes between rows, default
        width*channels).
        """
        self._require_task(Task.CLASSIFY)
        p = self._ptr()
        n = self.num_classes
        scores = (ctypes.c_float * n)()
        if isinstance(image, (str, os.PathLike)):
            self._check(self._lib.vt_model_predict_file(p, _cpath(image), scores, n))
            return list(scores)
        buf, width, height, channels, stride = _pixels(image, width, height, channels, stride)
        self._check(self._lib.vt_model_predict_pixels(
            p, ctypes.cast(buf, ctypes.POINTER(ctypes.c_uint8)), width, height, channels, stride,
            scores, n))
        return list(scores)

    def detect(self, image, conf=0.25, iou=0.7, max_det=300, width=None, height=None,
               channels=None, stride=None):
        """Objects in one image, for a detection model ("det-..."): a list of Detection, best
        score first (score >= conf, class-aware NMS at IoU ``iou``, at most ``max_det``).
        ``image`` takes the same forms as classify().  Boxes are in the image's own pixels."""
        self._require_task(Task.DETECT)
        p = self._ptr()
        names = self.class_names
        cap = 32  # grown to the count the library reports when more are found
        while True:
            cls = (ctypes.c_int * cap)()
            sc = (ctypes.c_float * cap)()
            bx = (ctypes.c_float * (4 * cap))()
            n = ctypes.c_int(0)
            if isinstance(image, (str, os.PathLike)):
                st = self._lib.vt_model_detect_file(p, _cpath(image), float(conf), float(iou),
                                                    int(max_det), cls, sc, bx, cap,
                                                    ctypes.byref(n))
            else:
                buf, w, h, c, strd = _pixels(image, width, height, channels, stride)
                st = self._lib.vt_model_detect_pixels(
                    p, ctypes.cast(buf, ctypes.POINTER(ctypes.c_uint8)), w, h, c, strd,
                    float(conf), float(iou), int(max_det), cls, sc, bx, cap, ctypes.byref(n))
            if st == Status.BUFFER_TOO_SMALL:  # nothing was written; n is the count
                cap = n.value
                continue
            self._check(st)
            out = []
            for k in range(n.value):
                i = cls[k]
                name = names[i] if i < len(names) and names[i] is not None else str(i)
                out.append(Detection(i, name, sc[k], bx[4 * k], bx[4 * k + 1], bx[4 * k + 2],
                                     bx[4 * k + 3]))
            return out

    def instances(self, image, conf=0.25, iou=0.7, max_det=300, width=None, height=None,
                  channels=None, stride=None):
        """Objects and their masks in one image, for an instance segmentation model
        ("iseg-..."): a list of Instance, best score first, selected as detect() selects boxes;
        each one's mask has the image's own size.  ``image`` takes the same forms as
        classify()."""
        self._require_task(Task.INSTANCE)
        p = self._ptr()
        names = self.class_names
        is_path = isinstance(image, (str, os.PathLike))
        if is_path:
            w, h = ctypes.c_int(0), ctypes.c_int(0)
            n = ctypes.c_int(0)
            self._check(self._lib.vt_model_instances_file(  # the image's size
                p, _cpath(image), float(conf), float(iou), int(max_det), ctypes.byref(w),
                ctypes.byref(h), None, None, None, None, 0, ctypes.byref(n)))
            w, h, cap = w.value, h.value, max(n.value, 1)
        else:
            buf, w, h, c, strd = _pixels(image, width, height, channels, stride)
            # grown to the count the library reports when more are found
            cap = max(1, min(32, (64 << 20) // max(w * h, 1)))
        while True:
            cls = (ctypes.c_int * cap)()
            sc = (ctypes.c_float * cap)()
            bx = (ctypes.c_float * (4 * cap))()
            masks = (ctypes.c_uint8 * (cap * w * h))()
            n = ctypes.c_int(0)
            if is_path:
                st = self._lib.vt_model_instances_file(
                    p, _cpath(image), float(conf), float(iou), int(max_det),
                    ctypes.byref(ctypes.c_int()), ctypes.byref(ctypes.c_int()), cls, sc, bx,
                    masks, cap, ctypes.byref(n))
            else:
                st = self._lib.vt_model_instances_pixels(
                    p, ctypes.cast(buf, ctypes.POINTER(ctypes.c_uint8)), w, h, c, strd,
                    float(conf), float(iou), int(max_det), cls, sc, bx, masks, cap,
                    ctypes.byref(n))
            if st == Status.BUFFER_TOO_SMALL:  # nothing was written; n is the count
                cap = n.value
                continue
            self._check(st)
            np = _np()
            plane = w * h
            raw = bytes(masks)
            out = []
            for k in range(n.value):
                i = cls[k]
                name = names[i] if i < len(names) and names[i] is not None else str(i)
                m = raw[k * plane:(k + 1) * plane]
                m = np.frombuffer(m, dtype=np.uint8).reshape(h, w) if np is not None \
                    else (w, h, m)
                out.append(Instance(i, name, sc[k], bx[4 * k], bx[4 * k + 1], bx[4 * k + 2],
                                    bx[4 * k + 3], m))
            return out

    def segment(self, image, width=None, height=None, channels=None, stride=None):
        """The class id of every pixel of one image, for a segmentation model ("seg-..."), at
        the image's own size: a numpy uint8 array of shape (H, W) when numpy is loaded, else a
        (width, height, bytes) tuple with the row-major mask.  ``image`` takes the same forms as
        classify()."""
        self._require_task(Task.SEGMENT)
        p = self._ptr()
        if isinstance(image, (str, os.PathLike)):
            w, h = ctypes.c_int(0), ctypes.c_int(0)
            self._check(self._lib.vt_model_segment_file(p, _cpath(image), None, 0,  # the size
                                                        ctypes.byref(w), ctypes.byref(h)))
            w, h = w.value, h.value
            mask = (ctypes.c_uint8 * (w * h))()
            self._check(self._lib.vt_model_segment_file(p, _cpath(image), mask, w * h,
                                                        ctypes.byref(ctypes.c_int()),
                                                        ctypes.byref(ctypes.c_int())))
        else:
            buf, w, h, c, strd = _pixels(image, width, height, channels, stride)
            mask = (ctypes.c_uint8 * (w * h))()
            self._check(self._lib.vt_model_segment_pixels(
                p, ctypes.cast(buf, ctypes.POINTER(ctypes.c_uint8)), w, h, c, strd, mask))
        np = _np()
        if np is not None:
            return np.frombuffer(bytes(mask), dtype=np.uint8).reshape(h, w)
        return (w, h, bytes(mask))

    def export(self, path=None, format="onnx", **options):
        """Write the inference graph to ``path`` (default: the model's arch + ".onnx") and return
        the path.  Options as ``vt export``: opset=17, batch=1 or "dynamic", nms=0|1 (detectors and
        instance segmenters: decoded, NMS'd boxes), conf=, iou=, max_det= (with nms=1), half=0."""
        fmt = {f.name.lower(): f for f in ExportFormat}.get(str(format).lower())
        if fmt is None:
            raise InvalidArgumentError("unknown export format %r (known: onnx)" % (format,),
                                       Status.INVALID_ARGUMENT)
        if path is None:
            path = self.arch + ".onnx"
        self._check(self._lib.vt_model_export(self._ptr(), _cpath(path), fmt,
                                              _cstr(_kv_string(options))))
        return path

    @property
    def output_shape(self):
        """(c, h, w) of one image's forward() output."""
        c, h, w = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        self._check(self._lib.vt_model_output_shape(self._ptr(), ctypes.byref(c),
                                                    ctypes.byref(h), ctypes.byref(w)))
        return c.value, h.value, w.value

    def forward(self, images):
        """The network's outputs for prepared float32 NCHW images (batch, channels, imgsz,
        imgsz), values 0..1 -- what the exported ONNX graph (without NMS) computes: softmax
        probabilities, the raw detection head, or per-pixel logits.  Takes the same forms as
        Trainer.step's images; returns a numpy array (batch, c, h, w) when numpy is loaded,
        else a flat list."""
        c, h, w = self.output_shape
        per_in = self.channels * self.imgsz * self.imgsz
        np = _np()
        if np is not None and _is_numpy(images) and np.asarray(images).ndim == 4:
            batch = np.asarray(images).shape[0]
            img = _float_images(images, batch, self.channels, self.imgsz)
        else:
            img = _float_images(images, 0, self.channels, self.imgsz)
            batch = len(img) // per_in
        if batch < 1 or len(img) != batch * per_in:
            raise InvalidArgumentError("images hold %d floats, not a multiple of channels %d x "
                                       "%d x %d" % (len(img), self.channels, self.imgsz,
                                                    self.imgsz), Status.INVALID_ARGUMENT)
        n_out = batch * c * h * w
        if np is not None:  # the library writes into the array itself: no copy, no zero-fill
            arr = np.empty((batch, c, h, w), dtype=np.float32)
            out = arr.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
        else:
            out = (ctypes.c_float * n_out)()
        self._check(self._lib.vt_model_forward(self._ptr(), img, batch, out, n_out))
        return arr if np is not None else list(out)

    def predict_topk(self, image, k=5, **kw):
        """The k most probable classes: a list of Prediction(index, name, probability), best
        first; name is the class name, or str(index) when the model has no class names."""
        probs = self.classify(image, **kw)
        names = self.class_names
        order = sorted(range(len(probs)), key=lambda i: -probs[i])[:max(0, int(k))]
        return [Prediction(i, names[i] if names[i] is not None else str(i), probs[i])
                for i in order]

    def __repr__(self):
        if self.closed:
            return "<visiontrain.Model (closed)>"
        return "<visiontrain.Model %s classes=%d imgsz=%d channels=%d params=%d>" % (
            self.arch, self.num_classes, self.imgsz, self.channels, self.num_params)


def _pixels(image, width, height, channels, stride):
    """Normalise an in-memory image to (ctypes buffer, width, height, channels, stride)."""
    np = _np()
    if np is not None and _is_numpy(image):
        a = np.asarray(image)
        if a.dtype != np.uint8:
            raise TypeError("an image takes uint8 pixels (H, W[, C]), got dtype %s" % a.dtype)
        if a.ndim == 2:
            a = a[:, :, None]
        if a.ndim != 3:
            raise ValueError("an image is an (H, W) or (H, W, C) array, got shape %s"
                             % (a.shape,))
        a = np.ascontiguousarray(a)
        height, width, channels = a.shape
        buf = _readonly_buffer(a, ctypes.c_uint8, a.size)
        return buf, width, height, channels, width * channels
    if hasattr(image, "mode") and hasattr(image, "size") and hasattr(image, "tobytes"):
        # A PIL image.
        mode = {"L": 1, "RGB": 3, "RGBA": 4}.get(image.mode)
        if mode is None:
            image = image.convert("RGB")
            mode = 3
        width, height = image.size
        data = image.tobytes()
        return _readonly_buffer(data, ctypes.c_uint8, len(data)), width, height, mode, width * mode
    if isinstance(image, (list, tuple)):
        height = len(image)
        width = len(image[0]) if height else 0
        first = image[0][0] if width else 0
        channels = len(first) if isinstance(first, (list, tuple)) else 1
        flat = bytearray()
        for row in image:
            if len(row) != width:
                raise ValueError("ragged image rows")
            for px in row:
                if channels == 1 and not isinstance(px, (list, tuple)):
                    flat.append(px)
                else:
                    if len(px) != channels:
                        raise ValueError("pixels with different channel counts")
                    flat.extend(px)
        return _readonly_buffer(flat, ctypes.c_uint8, len(flat)), width, height, channels, \
            width * channels
    # Raw 8-bit pixels.
    try:
        mv = memoryview(image)
    except TypeError:
        raise TypeError("an image is a path, a numpy uint8 array, nested lists, a PIL image "
                        "or pixel bytes, not %s" % type(image).__name__) from None
    if width is None or height is None or channels is None:
        raise TypeError("an image of raw pixel bytes needs width=, height= and channels=")
    width, height, channels = int(width), int(height), int(channels)
    if stride is None:
        stride = width * channels
    stride = int(stride)
    if width <= 0 or height <= 0 or channels not in (1, 3, 4) or stride < width * channels:
        raise InvalidArgumentError("bad image geometry: width=%d height=%d channels=%d stride=%d"
                                   % (width, height, channels, stride), Status.INVALID_ARGUMENT)
    need = stride * (height - 1) + width * channels
    if mv.nbytes < need:
        raise InvalidArgumentError("pixel buffer holds %d bytes, %d needed for %dx%dx%d "
                                   "(stride %d)" % (mv.nbytes, need, width, height, channels,
                                                    stride), Status.INVALID_ARGUMENT)
    return _readonly_buffer(mv, ctypes.c_uint8, mv.nbytes), width, height, channels, stride


def _readonly_buffer(obj, ctype, count):
    """A ctypes array over obj's buffer (shared when writable and contiguous, else a copy)."""
    mv = memoryview(obj)
    if not mv.c_contiguous:
        mv = memoryview(mv.tobytes())
    mv = mv.cast("B")
    if mv.nbytes < count * ctypes.sizeof(ctype):
        raise InvalidArgumentError("buffer too small", Status.INVALID_ARGUMENT)
    arr_t = ctype * count
    if not mv.readonly:
        try:
            return arr_t.from_buffer(mv)
        except (TypeError, ValueError):
            pass
    return arr_t.from_buffer_copy(mv)


# ---- training -----------------------------------------------------------------------------------

class Progress(object):
    """Progress of a Trainer.run(), passed to progress callbacks.

    Attributes: event (Event), epoch (1-based), epochs, batch (1-based within the epoch),
    batches (per epoch), iteration (optimiser steps so far), checkpoint_path (the file just
    written, on Event.CHECKPOINT_SAVED; else None), metrics (dict name -> float with the
    metrics available at this point: loss, val_loss, top1, top5, lr, images_per_sec,
    epoch_seconds, eta_seconds, cost_usd, data_wait_seconds, best_fitness, fitness,
    device_memory_bytes; on a GPU where NVML answers: gpu_util (percent),
    gpu_memory_used_bytes, gpu_memory_total_bytes, gpu_power_w, gpu_temp_c, sampled at most
    once a second).  Metrics are also readable as attributes (progress.loss, None when
    absent), and progress["epoch"] / progress.as_dict() give dict access.
    """
    __slots__ = ("event", "epoch", "epochs", "batch", "batches", "iteration", "metrics",
                 "checkpoint_path")

    def __init__(self, event, epoch, epochs, batch, batches, iteration, metrics,
                 checkpoint_path=None):
        self.event = event
        self.epoch = epoch
        self.epochs = epochs
        self.batch = batch
        self.batches = batches
        self.iteration = iteration
        self.metrics = metrics
        self.checkpoint_path = checkpoint_path

    def __getattr__(self, name):
        if name in Metric.__members__ or name.upper() in Metric.__members__:
            return self.metrics.get(name.lower())
        if not name.startswith("_") and any(name == key for key, _ in _metric_table().values()):
            return self.metrics.get(name)   # a metric a newer library names
        raise AttributeError(name)

    def as_dict(self):
        d = {"event": self.event.name.lower() if isinstance(self.event, Event) else self.event,
             "epoch": self.epoch, "epochs": self.epochs, "batch": self.batch,
             "batches": self.batches, "iteration": self.iteration}
        if self.checkpoint_path is not None:
            d["checkpoint_path"] = self.checkpoint_path
        d.update(self.metrics)
        return d

    def __getitem__(self, key):
        return self.as_dict()[key]

    def __repr__(self):
        m = " ".join("%s=%.4g" % kv for kv in self.metrics.items())
        if self.checkpoint_path is not None:
            m = ("%s %s" % (self.checkpoint_path, m)).strip()
        return "<Progress %s epoch %d/%d batch %d/%d it %d %s>" % (
            self.event.name.lower() if isinstance(self.event, Event) else self.event,
            self.epoch, self.epochs, self.batch, self.batches, self.iteration, m)


_KNOWN_EVENTS = frozenset(int(e) for e in Event)


def _read_progress(lib, event, p):
    metrics = {}
    value = ctypes.c_double()
    for m, (key, _) in _metric_table().items():
        st = lib.vt_progress_metric(p, m, ctypes.byref(value))
        if st == 0:
            metrics[key] = value.value
        # VT_ERR_NOT_FOUND: not available at this point; any other status: ignore the metric
    try:
        event = Event(event)
    except ValueError:
        pass
    return Progress(event, lib.vt_progress_epoch(p), lib.vt_progress_epochs(p),
                    lib.vt_progress_batch(p), lib.vt_progress_batches(p),
                    lib.vt_progress_iteration(p), metrics,
                    _path_text(lib.vt_progress_checkpoint_path(p)))


class Trainer(_Closable):
    """Trains a Model, on a Dataset (run()) or on caller batches (step()).

    Trainer(model, dataset=None, **options): options as in set().  The trainer keeps references
    to its model and dataset, so they stay alive as long as it does.
    """

    def __init__(self, model, dataset=None, **options):
        if not isinstance(model, Model):
            raise TypeError("Trainer() needs a visiontrain.Model, not %s" % type(model).__name__)
        if dataset is not None and not isinstance(dataset, Dataset):
            raise TypeError("dataset must be a visiontrain.Dataset or None")
        lib = _native.lib()
        out = ctypes.c_void_p()
        _check(lib.vt_trainer_create(ctypes.byref(out), model._ptr(),
                                     dataset._ptr() if dataset is not None else None))
        self._lib = lib
        self._h = _Handle(out.value, lib.vt_trainer_destroy, "Trainer")
        self._h.borrow(model._h, dataset._h if dataset is not None else None)
        self.model = model
        self.dataset = dataset
        self._callback = None
        self._run_callback = None
        self._pending = None
        # The C callbacks stay referenced by the trainer while the C side may call them.
        self._progress_c = _native.PROGRESS_FN(_weak_callback(self, "_on_progress_c", 1))
        self._log_c = None
        self._log_fn = None
        self.set_log(None, "info")   # library diagnostics -> logging.getLogger("visiontrain")
        if options:
            self.set(**options)

    def _ptr(self):
        return self._h.get()

    def _check(self, status):
        _check(status, self._lib.vt_trainer_last_error, self._h.ptr)

    # -- options --

    def set(self, *key_values, **options):
        """Set options: trainer.set(epochs=2, lr0=0.01, optimizer="adamw") or
        trainer.set("epochs=2").  Keys and ranges: visiontrain.options().
        Raises UnknownOptionError / OptionValueError (both OptionError)."""
        p = self._ptr()
        items = list(key_values)
        items += ["%s=%s" % (k, _format_value(v)) for k, v in options.items()]
        for kv in items:
            self._check(self._lib.vt_trainer_set(p, _cstr(kv)))
        return self

    def get(self, key):
        """Current value of a numeric option (by key or vt_option number) as a float."""
        value = ctypes.c_double()
        self._check(self._lib.vt_trainer_get_float(self._ptr(), _trainer_option_id(key),
                                                   ctypes.byref(value)))
        return value.value

    def set_int(self, option, value):
        self._check(self._lib.vt_trainer_set_int(self._ptr(), _trainer_option_id(option),
                                                 int(value)))

    def set_float(self, option, value):
        self._check(self._lib.vt_trainer_set_float(self._ptr(), _trainer_option_id(option),
                                                   float(value)))

    def set_string(self, option, value):
        self._check(self._lib.vt_trainer_set_string(self._ptr(), _trainer_option_id(option),
                                                    _cstr(value)))

    # -- callbacks --

    def on_progress(self, fn):
        """Call fn(event, progress) after each batch and epoch of run(), and after each
        checkpoint it writes (Event.CHECKPOINT_SAVED, progress.checkpoint_path); None removes
        it.
        The return value is ignored; to stop, call trainer.cancel() (run() then raises
        Cancelled) or raise: the run is cancelled and run() re-raises that exception.
        Usable as a decorator."""
        if fn is not None and not callable(fn):
            raise TypeError("progress callback must be callable")
        self._callback = fn
        return fn

    def set_log(self, fn=None, level="info"):
        """Route library log messages to fn(level, message), where level is a LogLevel; with
        fn=None they go to logging.getLogger("visiontrain").  ``level``: the most verbose
        level delivered (error, warning, info, debug); level=None turns logging off.
        The callback must not raise: an exception in it cancels a running run(), which
        re-raises it."""
        _install_log(self, self._lib.vt_trainer_set_log, fn, level)

    def _on_log_c(self, user, level, message):
        try:
            _deliver_log(self._log_fn, level, message)
        except BaseException as e:  # a log callback cannot fail the call; keep the first error
            if self._pending is None and self._h.busy:
                self._pending = e
                self._lib.vt_trainer_cancel(self._h.ptr)

    def _on_progress_c(self, user, event, progress):
        if self._pending is not None:
            return 1
        if event not in _KNOWN_EVENTS:
            return 0   # an event a newer library added: the callbacks would not know it
        try:
            fns = [fn for fn in (self._run_callback, self._callback) if fn is not None]
            if fns:
                info = _read_progress(self._lib, event, progress)
                for fn in fns:
                    fn(info.event, info)
        except BaseException as e:  # includes KeyboardInterrupt: stop the run, re-raise later
            self._pending = e
            return 1
        return 0

    # -- training --

    def run(self, callback=None):
        """Train for the configured epochs.  ``callback``: fn(event, progress) for this run
        (in addition to one set with on_progress()).  Returns the final metrics as a dict.

        Raises Cancelled after cancel(), or the callback's own exception when it raised one
        (the run is cancelled cleanly first).  Ctrl-C (KeyboardInterrupt) also cancels cleanly.
        """
        if callback is not None and not callable(callback):
            raise TypeError("callback must be callable")
        p = self._ptr()
        if self._h.busy:
            raise BadStateError("Trainer.run() is already running", Status.BAD_STATE)
        self._run_callback = callback
        self._pending = None
        h = self._h
        # The callback is always installed, so Python signals (Ctrl-C) are seen between batches.
        self._lib.vt_trainer_set_progress(p, self._progress_c, None)
        for parent in [h] + h.parents:
            parent.busy = True
        try:
            status = self._lib.vt_trainer_run(p)
        finally:
            for parent in [h] + h.parents:
                parent.busy = False
            self._run_callback = None
        pending, self._pending = self._pending, None
        if pending is not None:
            if status not in (0, Status.CANCELLED):
                try:
                    self._check(status)
                except VisionTrainError as lib_error:
                    raise pending from lib_error
            raise pending
        self._check(status)
        return self.metrics()

    @property
    def run_dir(self):
        """The run folder of the current or last run() (e.g. "runs/classify/train2"); None
        before a run or with save=0."""
        return _path_text(self._lib.vt_trainer_run_dir(self._ptr())) or None

    @property
    def stop_reason(self):
        """Why the last run() stopped: a StopReason (NONE before a run or after a failure;
        COMPLETED, EARLY (patience), TIME (time budget), CANCELLED)."""
        r = self._lib.vt_trainer_stop_reason(self._ptr())
        try:
            return StopReason(r)
        except ValueError:
            return r

    @property
    def rank(self):
        """(rank, world): this process's rank among the processes runs train with (mpirun),
        and how many there are; (0, 1) for a process training alone.  Only rank 0 writes the
        run folder: print and save your own files there."""
        world = ctypes.c_int(1)
        r = self._lib.vt_trainer_rank(self._ptr(), ctypes.byref(world))
        return r, world.value

    def step(self, images, labels):
        """One optimisation step on a batch; returns the batch's mean loss.

        ``images``: float32 NCHW (batch, channels, imgsz, imgsz), already normalised -- a numpy
        array (any float dtype, converted), nested lists, array.array('f'), or raw float32
        bytes / memoryview.  ``labels``: class ids, a sequence of ints / numpy array /
        array.array.  The size is checked against channels and imgsz before calling the library.
        """
        p = self._ptr()
        lab, batch = _labels(labels)
        if batch <= 0:
            raise InvalidArgumentError("empty batch", Status.INVALID_ARGUMENT)
        nc = self.model.num_classes
        for i in range(batch):
            if not 0 <= lab[i] < nc:
                raise InvalidArgumentError("label %d at index %d is not a class id 0..%d"
                                           % (lab[i], i, nc - 1), Status.INVALID_ARGUMENT)
        channels = self.model.channels
        try:
            imgsz = int(self.get(_OPT_IMGSZ))
        except VisionTrainError:
            imgsz = 0
        if imgsz <= 0:   # not set: the model's image size
            imgsz = self.model.imgsz
        per_image = channels * imgsz * imgsz
        img = _float_images(images, batch, channels, imgsz)
        if len(img) != batch * per_image:
            raise InvalidArgumentError(
                "images hold %d floats; batch %d x channels %d x %d x %d needs %d"
                % (len(img), batch, channels, imgsz, imgsz, batch * per_image),
                Status.INVALID_ARGUMENT)
        loss = ctypes.c_float()
        self._check(self._lib.vt_trainer_step(p, img, lab, batch, ctypes.byref(loss)))
        return loss.value

    def validate(self, split="val"):
        """Evaluate the model on a split; returns the metrics as a dict."""
        self._check(self._lib.vt_trainer_validate(self._ptr(), _split(split)))
        return self.metrics()

    def class_ap(self, cls):
        """Per-class results of the last detection validation: (ap50, ap50_95, num_gt); AP is
        -1 for a class without ground truth.  Raises NotFoundError before any validation."""
        ap50, ap, n = ctypes.c_double(), ctypes.c_double(), ctypes.c_int64()
        self._check(self._lib.vt_trainer_class_ap(self._ptr(), int(cls), ctypes.byref(ap50),
                                                  ctypes.byref(ap), ctypes.byref(n)))
        return (ap50.value, ap.value, n.value)

    def metric(self, name, default=NotImplemented):
        """The latest value of a metric ("loss", "val_loss", "top1", "top5", "lr",
        "images_per_sec", "epoch_seconds", "eta_seconds", "cost_usd", "data_wait_seconds",
        "best_fitness", "fitness", "device_memory_bytes", the GPU's "gpu_util",
        "gpu_memory_used_bytes", "gpu_memory_total_bytes", "gpu_power_w", "gpu_temp_c", or a
        Metric).  Raises NotFoundError
        when there is none yet, unless ``default`` is given."""
        value = ctypes.c_double()
        st = self._lib.vt_trainer_metric(self._ptr(), _metric(name), ctypes.byref(value))
        if st == Status.NOT_FOUND and default is not NotImplemented:
            return default
        self._check(st)
        return value.value

    def metrics(self):
        """All metrics available now, as a dict name -> float."""
        p = self._ptr()
        out = {}
        value = ctypes.c_double()
        for m, (key, _) in _metric_table().items():
            # VT_ERR_NOT_FOUND: not available yet; any other status: left out as well
            if self._lib.vt_trainer_metric(p, m, ctypes.byref(value)) == 0:
                out[key] = value.value
        return out

    def cancel(self):
        """Ask a running run() to stop after the current batch (any thread; run() then raises
        Cancelled).  Does nothing on a closed trainer."""
        h = self._h
        ptr = h.ptr if h is not None else None
        if ptr is not None:
            self._lib.vt_trainer_cancel(ptr)

    def __repr__(self):
        return "<visiontrain.Trainer model=%r dataset=%r%s>" % (
            self.model, self.dataset, " (closed)" if self.closed else "")


def _weak_callback(obj, method, dead_result):
    """A function calling obj.method through a weak reference, so that the C callback object a
    trainer holds does not make a reference cycle (the trainer is freed by reference counting)."""
    ref = weakref.ref(obj)

    def callback(*args):
        o = ref()
        if o is None:
            return dead_result
        return getattr(o, method)(*args)
    return callback



def _install_log(obj, setter, fn, level):
    """Route a handle's log messages (shared by Trainer and Estimator): to fn(level, message),
    or to logging.getLogger("visiontrain") when fn is None; level=None turns them off."""
    p = obj._ptr()
    if level is None:
        setter(p, None, None, LogLevel.ERROR)
        obj._log_fn = obj._log_c = None
        return
    lvl = _log_level(level)
    if fn is not None and not callable(fn):
        raise TypeError("log callback must be callable")
    obj._log_fn = fn
    if obj._log_c is None:
        obj._log_c = _native.LOG_FN(_weak_callback(obj, "_on_log_c", None))
    setter(p, obj._log_c, None, lvl)


def _deliver_log(fn, level, message):
    """One log message from C: to the user's callback, else to Python logging."""
    try:
        level = LogLevel(level)
    except ValueError:
        pass
    text = _text(message)
    if fn is not None:
        fn(level, text)
    else:
        _log.log(_LOG_TO_LOGGING.get(level, logging.INFO), "%s", text)

def _labels(labels):
    """labels -> (ctypes int32 array, count)."""
    np = _np()
    if np is not None and _is_numpy(labels):
        a = np.ascontiguousarray(np.asarray(labels).reshape(-1), dtype=np.int32)
        return _readonly_buffer(a, ctypes.c_int32, a.size), int(a.size)
    if isinstance(labels, int):
        labels = [labels]
    if isinstance(labels, array.array) and labels.itemsize == 4 and labels.typecode in "il":
        return _readonly_buffer(labels, ctypes.c_int32, len(labels)), len(labels)
    if isinstance(labels, (bytes, bytearray, memoryview)):
        mv = memoryview(labels).cast("B")
        if mv.nbytes % 4:
            raise InvalidArgumentError("raw int32 labels must be a multiple of 4 bytes",
                                       Status.INVALID_ARGUMENT)
        n = mv.nbytes // 4
        return _readonly_buffer(mv, ctypes.c_int32, n), n
    vals = [int(x) for x in labels]
    return (ctypes.c_int32 * len(vals))(*vals), len(vals)


def _flatten(x, out):
    if isinstance(x, (list, tuple)):
        for y in x:
            _flatten(y, out)
    else:
        out.append(float(x))


def _float_images(images, batch, channels, imgsz):
    """images -> ctypes float32 array (length checked by the caller)."""
    np = _np()
    if np is not None and _is_numpy(images):
        a = np.ascontiguousarray(np.asarray(images), dtype=np.float32)
        if a.ndim == 4 and a.shape != (batch, channels, imgsz, imgsz):
            raise InvalidArgumentError("images have shape %s, expected (%d, %d, %d, %d) NCHW"
                                       % (a.shape, batch, channels, imgsz, imgsz),
                                       Status.INVALID_ARGUMENT)
        return _readonly_buffer(a, ctypes.c_float, a.size)
    if isinstance(images, array.array):
        if images.typecode != "f":
            images = array.array("f", images)
        return _readonly_buffer(images, ctypes.c_float, len(images))
    if isinstance(images, (bytes, bytearray, memoryview)):
        mv = memoryview(images).cast("B")
        if mv.nbytes % 4:
            raise InvalidArgumentError("raw float32 images must be a multiple of 4 bytes",
                                       Status.INVALID_ARGUMENT)
        return _readonly_buffer(mv, ctypes.c_float, mv.nbytes // 4)
    flat = array.array("f")
    _flatten(images, flat)
    return _readonly_buffer(flat, ctypes.c_float, len(flat))
