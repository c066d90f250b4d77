"""Python bindings for libvisiontrain (ctypes; no compiled extension).

    import visiontrain as vt
    vt.synth_generate("shapes", classes=4, train=50, val=20)
    model = vt.Model("cls-n")                        # the classes come from the data
    model.train(data="shapes", epochs=2, imgsz=32)   # prints the progress; returns the metrics
    model.val()                                      # the val split of the same data
    for r in model.predict("shapes/val/circle"):     # a file, folder, list or numpy arrays
        print(r.path, r.probs.top1, r.probs.top1conf)
    model.save("shapes.vtm")                         # vt.Model("shapes.vtm") loads it

Underneath: Dataset, Trainer (every option, callbacks, step()) and Model.classify() / detect() /
segment() for one image; Estimator for time and cost.

The library is found through visiontrain.load_library(path), else $VT_LIBRARY, else a
libvisiontrain.so* next to this package (where pip install puts it), else the system's
libvisiontrain.so.0.  It is loaded on first use, or at import when VT_LIBRARY is set.  A library
whose ABI version differs from ABI_VERSION is refused with AbiMismatchError (an ImportError).
"""

import os as _os

from ._native import ABI_VERSION, library_path, load_library
from .errors import (AbiMismatchError, BadStateError, BufferTooSmallError, Cancelled,
                     CancelledError, CheckpointError, DatasetError, DeviceError,
                     DeviceOutOfMemoryError, FileIOError, FormatError, InternalError,
                     InvalidArgumentError, LibraryNotFoundError, NotFoundError, NumericError,
                     OptionError, OptionValueError, OutOfMemoryError, Status, UnknownOptionError,
                     UnsupportedError, VisionTrainError)
from ._core import (Box, Dataset, Detection, Event, Instance, ExportFormat, LogLevel, Metric, OptionInfo, OptionScope,
                    OptionType,
                    Polygon,
                    Prediction, Problem, ProblemCode, Progress, Split, StopReason, Task, TaskInfo,
                    Trainer, abi_version, tasks,
                    checkpoint_args, cpu_kernels, device_count, devices, no_gpu_reason, option_info, options,
                    synth_generate, version, version_info)
from ._estimate import (GPU, Catalog, Estimate, Estimator, EstBasis, EstPrecision, EstResult, Pick, GpuField, RankBy,
                        dataset_advice)
from ._validate import Count, Report, clone_dataset, problem_code_name, validate
from ._model import Model
from ._import import import_onnx
from ._results import Boxes, InstanceMasks, Masks, Probs, Results

__version__ = "0.1.0"   # version of the bindings; version() is the loaded library's

__all__ = [
    "ABI_VERSION", "load_library", "library_path", "version", "version_info", "abi_version",
    "cpu_kernels", "checkpoint_args",
    "options", "option_info", "tasks", "synth_generate", "devices", "device_count", "no_gpu_reason",
    "dataset_advice", "import_onnx",
    "Dataset", "Model", "Trainer", "Progress", "Prediction", "Detection", "Instance", "OptionInfo", "OptionScope", "Box",
    "TaskInfo",
    "Results", "Boxes", "Probs", "Masks", "InstanceMasks",
    "Polygon", "Problem",
    "Catalog", "GPU", "Estimator", "Estimate", "Report", "Count", "validate", "clone_dataset",
    "problem_code_name",
    "Task", "Split", "Metric", "Event", "ExportFormat", "LogLevel", "OptionType", "Status", "StopReason",
    "ProblemCode", "GpuField", "EstResult", "EstPrecision", "EstBasis", "Pick", "RankBy",
    "VisionTrainError", "InvalidArgumentError", "OutOfMemoryError", "FileIOError",
    "NotFoundError", "FormatError", "OptionError", "UnknownOptionError", "OptionValueError",
    "DatasetError", "UnsupportedError", "BadStateError", "Cancelled", "CancelledError",
    "DeviceError", "DeviceOutOfMemoryError", "CheckpointError", "BufferTooSmallError",
    "InternalError", "NumericError", "LibraryNotFoundError", "AbiMismatchError",
]

if _os.environ.get("VT_LIBRARY"):
    # An explicit library choice is checked at import (ImportError on a bad path or ABI).
    load_library()
