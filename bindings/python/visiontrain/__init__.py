"""Python bindings for libvisiontrain (ctypes; no compiled extension).

    import visiontrain as vt
    vt.synth_generate("data", classes=4, train=50, val=20)
    with vt.Dataset("data") as ds, vt.Model("cls-n", ds.num_classes, imgsz=32) as model:
        with vt.Trainer(model, ds, epochs=2, batch=16) as trainer:
            trainer.run(callback=lambda event, p: print(p))
        model.save("model.vtm")
        print(model.predict_topk("data/val/<class>/<image>.png", k=2))

    with vt.Estimator(model="cls-s", train=20000, epochs=100, imgsz=224, batch=64) as est:
        for r in est.rank("cost", limit=5):
            print(r.name, "%.1f h" % r.hours, r.cost_usd)

The library is found through visiontrain.load_library(path), else $VT_LIBRARY, else a
libvisiontrain.so* next to this package, else the system's libvisiontrain.so.0.  It is loaded
on first use, or at import when VT_LIBRARY is set.  A library whose ABI version differs from
ABI_VERSION is refused with AbiMismatchError (an ImportError).
"""

import os as _os

from ._native import ABI_VERSION, library_path, load_library
from .errors import (AbiMismatchError, BadStateError, BufferTooSmallError, Cancelled,
                     CancelledError, CheckpointError, DatasetError, DeviceError,
                     DeviceOutOfMemoryError, FileIOError, FormatError, InternalError,
                     InvalidArgumentError, LibraryNotFoundError, NotFoundError, NumericError,
                     OptionError, OptionValueError, OutOfMemoryError, Status, UnknownOptionError,
                     UnsupportedError, VisionTrainError)
from ._core import (Box, Dataset, Detection, Event, ExportFormat, LogLevel, Metric, Model, OptionInfo, OptionType,
                    Polygon,
                    Prediction, Problem, ProblemCode, Progress, Split, StopReason, Task, Trainer,
                    abi_version, checkpoint_args, cpu_kernels, device_count, devices, no_gpu_reason, option_info, options,
                    synth_generate, version, version_info)
from ._estimate import (GPU, Catalog, Estimate, Estimator, EstBasis, EstPrecision, EstResult, Pick, GpuField, RankBy,
                        dataset_advice)
from ._validate import Count, Report, clone_dataset, problem_code_name, validate

__version__ = "0.1.0"   # version of the bindings; version() is the loaded library's

__all__ = [
    "ABI_VERSION", "load_library", "library_path", "version", "version_info", "abi_version",
    "cpu_kernels", "checkpoint_args",
    "options", "option_info", "synth_generate", "devices", "device_count", "no_gpu_reason",
    "dataset_advice",
    "Dataset", "Model", "Trainer", "Progress", "Prediction", "Detection", "OptionInfo", "Box",
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
