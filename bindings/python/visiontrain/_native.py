"""Loading libvisiontrain with ctypes and declaring every C prototype of visiontrain.h.

Nothing here is public API; use the names exported by the ``visiontrain`` package.
"""

import ctypes
import ctypes.util
import glob
import os
import sys
import threading

from .errors import AbiMismatchError, LibraryNotFoundError

#: The ABI version (VT_ABI_VERSION, the SONAME suffix) these bindings were written for.
ABI_VERSION = 0

# ---- C types -------------------------------------------------------------------------------

c_status = ctypes.c_int        # vt_status
c_enum = ctypes.c_int          # every other enum (vt_task, vt_split, vt_option, ...)
c_void_p = ctypes.c_void_p     # opaque handles: vt_dataset *, vt_model *, vt_trainer *,
                               # const vt_progress *, vt_catalog *, vt_estimator *
c_char_p = ctypes.c_char_p
c_int = ctypes.c_int
c_double = ctypes.c_double
c_float = ctypes.c_float
c_int64 = ctypes.c_int64
c_uint64 = ctypes.c_uint64
c_size_t = ctypes.c_size_t
POINTER = ctypes.POINTER

# int (*vt_progress_fn)(void *user, vt_event event, const vt_progress *progress)
PROGRESS_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, c_enum, ctypes.c_void_p)
# void (*vt_log_fn)(void *user, vt_log_level level, const char *message)
LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, c_enum, ctypes.c_char_p)

# name: (restype, [argtypes]) -- one entry per function of include/visiontrain/visiontrain.h.
PROTOTYPES = {
    # version
    "vt_version": (ctypes.c_uint, []),
    "vt_version_string": (c_char_p, []),
    "vt_abi_version": (ctypes.c_uint, []),
    # status
    "vt_status_string": (c_char_p, [c_status]),
    "vt_last_error": (c_char_p, []),
    # options
    "vt_option_info": (c_status, [c_enum, POINTER(c_char_p), POINTER(c_enum), POINTER(c_double),
                                  POINTER(c_double), POINTER(c_char_p)]),
    "vt_option_next": (c_int, [c_int]),
    "vt_option_scopes": (c_int, [c_enum]),
    "vt_option_default": (c_status, [c_enum, POINTER(c_double), POINTER(c_char_p)]),
    # devices
    "vt_cpu_kernels": (c_char_p, []),
    "vt_device_count": (c_int, []),
    "vt_device_info": (c_status, [c_int, c_char_p, c_size_t, POINTER(c_int), POINTER(c_int),
                                  POINTER(c_uint64), POINTER(c_uint64)]),
    # datasets
    "vt_dataset_open": (c_status, [POINTER(c_void_p), c_enum, c_char_p]),
    "vt_dataset_destroy": (None, [c_void_p]),
    "vt_dataset_task": (c_enum, [c_void_p]),
    "vt_dataset_num_classes": (c_int, [c_void_p]),
    "vt_dataset_class_name": (c_char_p, [c_void_p, c_int]),
    "vt_dataset_num_images": (c_int, [c_void_p, c_enum]),
    "vt_dataset_image_path": (c_char_p, [c_void_p, c_enum, c_int]),
    "vt_dataset_image_class": (c_int, [c_void_p, c_enum, c_int]),
    "vt_dataset_last_error": (c_char_p, [c_void_p]),
    "vt_dataset_num_boxes": (c_int, [c_void_p, c_enum, c_int]),
    "vt_dataset_box": (c_status, [c_void_p, c_enum, c_int, c_int, POINTER(c_int),
                                  POINTER(c_float)]),
    "vt_dataset_num_polygons": (c_int, [c_void_p, c_enum, c_int]),
    "vt_dataset_polygon": (c_status, [c_void_p, c_enum, c_int, c_int, POINTER(c_int),
                                      POINTER(c_float), c_int, POINTER(c_int)]),
    "vt_dataset_ignore_value": (c_int, [c_void_p]),
    "vt_dataset_image_size": (c_status, [c_void_p, c_enum, c_int, POINTER(c_int),
                                         POINTER(c_int)]),
    "vt_dataset_mask": (c_status, [c_void_p, c_enum, c_int, POINTER(ctypes.c_uint8), c_int,
                                   c_int]),
    "vt_dataset_num_problems": (c_int, [c_void_p]),
    "vt_dataset_problem": (c_status, [c_void_p, c_int, POINTER(c_char_p), POINTER(c_int),
                                      POINTER(c_int), POINTER(c_char_p)]),
    "vt_synth_generate": (c_status, [c_char_p, c_enum, c_char_p]),
    "vt_problem_code_name": (c_char_p, [c_int]),
    # dataset policies and validation
    "vt_dataset_open_ex": (c_status, [POINTER(c_void_p), c_enum, c_char_p, c_char_p]),
    "vt_dataset_validate": (c_status, [POINTER(c_void_p), c_enum, c_char_p, c_char_p]),
    "vt_report_destroy": (None, [c_void_p]),
    "vt_report_task": (c_enum, [c_void_p]),
    "vt_report_num_classes": (c_int, [c_void_p]),
    "vt_report_class_name": (c_char_p, [c_void_p, c_int]),
    "vt_report_num_problems": (c_int, [c_void_p]),
    "vt_report_problem": (c_status, [c_void_p, c_int, POINTER(c_char_p), POINTER(c_int),
                                     POINTER(c_int), POINTER(c_char_p)]),
    "vt_report_count": (c_int64, [c_void_p, c_enum, c_enum]),
    "vt_report_class_instances": (c_int64, [c_void_p, c_enum, c_int]),
    "vt_dataset_count": (c_int64, [c_void_p, c_enum, c_enum]),
    # dataset tools
    "vt_dataset_split": (c_status, [c_void_p, c_char_p, c_char_p]),
    "vt_dataset_subset": (c_status, [c_void_p, c_char_p, c_char_p]),
    "vt_dataset_clone": (c_status, [c_char_p, c_char_p]),
    "vt_dataset_class_histogram": (c_status, [c_void_p, c_enum, POINTER(c_int64), c_int]),
    "vt_dataset_box_histogram": (c_status, [c_void_p, c_enum, c_enum, POINTER(c_int64), c_int]),
    "vt_dataset_plot_labels": (c_status, [c_void_p, c_char_p]),
    # models
    "vt_model_create": (c_status, [POINTER(c_void_p), c_char_p, c_int, c_char_p]),
    "vt_model_destroy": (None, [c_void_p]),
    "vt_model_save": (c_status, [c_void_p, c_char_p]),
    "vt_model_load": (c_status, [POINTER(c_void_p), c_char_p]),
    "vt_model_task": (c_enum, [c_void_p]),
    "vt_model_arch": (c_char_p, [c_void_p]),
    "vt_model_num_classes": (c_int, [c_void_p]),
    "vt_model_class_name": (c_char_p, [c_void_p, c_int]),
    "vt_model_channels": (c_int, [c_void_p]),
    "vt_model_imgsz": (c_int, [c_void_p]),
    "vt_model_num_params": (ctypes.c_uint64, [c_void_p]),
    "vt_model_flops": (c_double, [c_void_p, c_int]),
    "vt_model_predict_file": (c_status, [c_void_p, c_char_p, POINTER(c_float), c_int]),
    "vt_model_predict_pixels": (c_status, [c_void_p, POINTER(ctypes.c_uint8), c_int, c_int, c_int,
                                           ctypes.c_size_t, POINTER(c_float), c_int]),
    "vt_model_detect_file": (c_status, [c_void_p, c_char_p, c_float, c_float, c_int,
                                        POINTER(c_int), POINTER(c_float), POINTER(c_float), c_int,
                                        POINTER(c_int)]),
    "vt_model_detect_pixels": (c_status, [c_void_p, POINTER(ctypes.c_uint8), c_int, c_int, c_int,
                                          ctypes.c_size_t, c_float, c_float, c_int,
                                          POINTER(c_int), POINTER(c_float), POINTER(c_float),
                                          c_int, POINTER(c_int)]),
    "vt_trainer_class_ap": (c_status, [c_void_p, c_int, POINTER(c_double), POINTER(c_double),
                                       POINTER(ctypes.c_int64)]),
    "vt_model_instances_file": (c_status, [c_void_p, c_char_p, c_float, c_float, c_int,
                                           POINTER(c_int), POINTER(c_int), POINTER(c_int),
                                           POINTER(c_float), POINTER(c_float),
                                           POINTER(ctypes.c_uint8), c_int, POINTER(c_int)]),
    "vt_model_instances_pixels": (c_status, [c_void_p, POINTER(ctypes.c_uint8), c_int, c_int,
                                             c_int, ctypes.c_size_t, c_float, c_float, c_int,
                                             POINTER(c_int), POINTER(c_float), POINTER(c_float),
                                             POINTER(ctypes.c_uint8), c_int, POINTER(c_int)]),
    "vt_model_segment_file": (c_status, [c_void_p, c_char_p, POINTER(ctypes.c_uint8),
                                         ctypes.c_size_t, POINTER(c_int), POINTER(c_int)]),
    "vt_model_segment_pixels": (c_status, [c_void_p, POINTER(ctypes.c_uint8), c_int, c_int, c_int,
                                           ctypes.c_size_t, POINTER(ctypes.c_uint8)]),
    "vt_png_save": (c_status, [c_char_p, POINTER(ctypes.c_uint8), c_int, c_int, c_int,
                               ctypes.c_size_t]),
    "vt_image_read": (c_status, [c_char_p, POINTER(ctypes.c_uint8), ctypes.c_size_t,
                                 POINTER(c_int), POINTER(c_int)]),
    "vt_model_last_error": (c_char_p, [c_void_p]),
    "vt_model_output_shape": (c_status, [c_void_p, POINTER(c_int), POINTER(c_int),
                                         POINTER(c_int)]),
    "vt_model_forward": (c_status, [c_void_p, POINTER(c_float), c_int, POINTER(c_float),
                                    c_size_t]),
    "vt_model_set_threads": (c_status, [c_void_p, c_int]),
    "vt_model_export": (c_status, [c_void_p, c_char_p, c_enum, c_char_p]),
    "vt_model_transfer": (c_status, [c_void_p, c_void_p, POINTER(c_int), POINTER(c_int)]),
    "vt_model_set_classes": (c_status, [c_void_p, c_int, POINTER(c_char_p), POINTER(c_int),
                                        POINTER(c_int)]),
    "vt_model_num_layers": (c_int, [c_void_p]),
    "vt_model_layer": (c_status, [c_void_p, c_int, POINTER(c_char_p), POINTER(c_int),
                                  POINTER(c_int), POINTER(c_int), POINTER(c_uint64)]),
    "vt_model_backbone_layers": (c_int, [c_void_p]),
    "vt_model_import_onnx": (c_status, [POINTER(c_void_p), c_char_p, c_char_p, c_char_p]),
    # progress
    "vt_progress_epoch": (c_int, [c_void_p]),
    "vt_progress_epochs": (c_int, [c_void_p]),
    "vt_progress_batch": (c_int, [c_void_p]),
    "vt_progress_batches": (c_int, [c_void_p]),
    "vt_progress_iteration": (ctypes.c_int64, [c_void_p]),
    "vt_progress_metric": (c_status, [c_void_p, c_enum, POINTER(c_double)]),
    "vt_progress_checkpoint_path": (c_char_p, [c_void_p]),
    # training
    "vt_trainer_create": (c_status, [POINTER(c_void_p), c_void_p, c_void_p]),
    "vt_trainer_destroy": (None, [c_void_p]),
    "vt_trainer_set_int": (c_status, [c_void_p, c_enum, ctypes.c_int64]),
    "vt_trainer_set_float": (c_status, [c_void_p, c_enum, c_double]),
    "vt_trainer_set_string": (c_status, [c_void_p, c_enum, c_char_p]),
    "vt_trainer_set": (c_status, [c_void_p, c_char_p]),
    "vt_trainer_get_float": (c_status, [c_void_p, c_enum, POINTER(c_double)]),
    "vt_trainer_set_log": (None, [c_void_p, LOG_FN, c_void_p, c_enum]),
    "vt_trainer_set_progress": (None, [c_void_p, PROGRESS_FN, c_void_p]),
    "vt_trainer_run": (c_status, [c_void_p]),
    "vt_trainer_run_dir": (c_char_p, [c_void_p]),
    "vt_checkpoint_args": (c_status, [c_char_p, c_char_p, ctypes.c_size_t,
                                      POINTER(ctypes.c_size_t)]),
    "vt_trainer_stop_reason": (c_enum, [c_void_p]),
    "vt_trainer_rank": (c_int, [c_void_p, POINTER(c_int)]),
    "vt_trainer_step": (c_status, [c_void_p, POINTER(c_float), POINTER(ctypes.c_int32), c_int,
                                   POINTER(c_float)]),
    "vt_trainer_validate": (c_status, [c_void_p, c_enum]),
    "vt_trainer_metric": (c_status, [c_void_p, c_enum, POINTER(c_double)]),
    "vt_trainer_cancel": (None, [c_void_p]),
    "vt_trainer_last_error": (c_char_p, [c_void_p]),
    # GPU catalog
    "vt_catalog_create": (c_status, [POINTER(c_void_p)]),
    "vt_catalog_destroy": (None, [c_void_p]),
    "vt_catalog_load_csv": (c_status, [c_void_p, c_char_p]),
    "vt_catalog_set_price": (c_status, [c_void_p, c_char_p, c_double]),
    "vt_catalog_count": (c_int, [c_void_p]),
    "vt_catalog_find": (c_int, [c_void_p, c_char_p]),
    "vt_catalog_gpu_name": (c_char_p, [c_void_p, c_int]),
    "vt_catalog_gpu_arch": (c_char_p, [c_void_p, c_int]),
    "vt_catalog_gpu_tier": (c_char_p, [c_void_p, c_int]),
    "vt_catalog_gpu_value": (c_status, [c_void_p, c_int, c_enum, POINTER(c_double)]),
    "vt_catalog_last_error": (c_char_p, [c_void_p]),
    # estimator
    "vt_estimator_create": (c_status, [POINTER(c_void_p)]),
    "vt_estimator_destroy": (None, [c_void_p]),
    "vt_estimator_catalog": (c_void_p, [c_void_p]),
    "vt_estimator_set_int": (c_status, [c_void_p, c_enum, c_int64]),
    "vt_estimator_set_float": (c_status, [c_void_p, c_enum, c_double]),
    "vt_estimator_set_string": (c_status, [c_void_p, c_enum, c_char_p]),
    "vt_estimator_set": (c_status, [c_void_p, c_char_p]),
    "vt_estimator_set_model": (c_status, [c_void_p, c_void_p]),
    "vt_estimator_set_dataset": (c_status, [c_void_p, c_void_p]),
    "vt_estimator_run": (c_status, [c_void_p]),
    "vt_estimator_result": (c_status, [c_void_p, c_enum, POINTER(c_double)]),
    "vt_estimator_rank": (c_status, [c_void_p, c_enum, POINTER(c_int), c_int, POINTER(c_int)]),
    "vt_estimator_rank_result": (c_status, [c_void_p, c_int, c_enum, POINTER(c_double)]),
    "vt_estimator_pick": (c_status, [c_void_p, c_enum, POINTER(c_int)]),
    "vt_estimator_calibrate": (c_status, [c_void_p, c_char_p, c_char_p]),
    "vt_estimator_is_calibrated": (c_int, [c_void_p]),
    "vt_estimator_save_calibration": (c_status, [c_void_p, c_char_p]),
    "vt_estimator_load_calibration": (c_status, [c_void_p, c_char_p]),
    "vt_estimator_set_log": (None, [c_void_p, LOG_FN, c_void_p, c_enum]),
    "vt_estimator_last_error": (c_char_p, [c_void_p]),
    "vt_estimate_dataset_advice": (c_char_p, [c_int64]),
    # tasks, as the library describes them
    "vt_task_next": (c_enum, [c_enum]),
    "vt_task_name": (c_char_p, [c_enum]),
    "vt_task_title": (c_char_p, [c_enum]),
    "vt_task_parse": (c_enum, [c_char_p]),
    "vt_task_model_prefix": (c_char_p, [c_enum]),
    "vt_task_default_model": (c_char_p, [c_enum]),
    "vt_arch_task": (c_enum, [c_char_p]),
    "vt_arch_name": (c_char_p, [c_int]),
    "vt_task_metrics": (c_int, [c_enum, POINTER(c_enum), c_int]),
    "vt_task_fitness": (c_enum, [c_enum]),
    "vt_task_option_applies": (c_int, [c_enum, c_char_p]),
    "vt_task_label_kinds": (ctypes.c_uint, [c_enum]),
    "vt_dataset_guess_task": (c_enum, [c_char_p]),
    "vt_metric_name": (c_char_p, [c_enum]),
    "vt_metric_label": (c_char_p, [c_enum]),
}

_lock = threading.Lock()
_lib = None
_lib_path = None


def _candidates():
    """Library paths to try, in order, when no explicit path was given."""
    env = os.environ.get("VT_LIBRARY")
    if env:
        # An explicit choice: no fallback, so a wrong VT_LIBRARY is reported, not hidden.
        return [env], True
    here = os.path.dirname(os.path.abspath(__file__))
    found = sorted(glob.glob(os.path.join(here, "libvisiontrain.so*")))
    found += sorted(glob.glob(os.path.join(here, "libvisiontrain*.dylib")))
    found += sorted(glob.glob(os.path.join(here, "visiontrain*.dll")))
    # Prefer the SONAME (libvisiontrain.so.0) over the bare development link.
    soname = os.path.join(here, "libvisiontrain.so.%d" % ABI_VERSION)
    if soname in found:
        found.remove(soname)
        found.insert(0, soname)
    system = []
    name = ctypes.util.find_library("visiontrain")
    if name:
        system.append(name)
    if sys.platform.startswith("linux") or not system:
        system.append("libvisiontrain.so.%d" % ABI_VERSION)
    return found + system, False


def _declare(lib):
    missing = []
    for name, (restype, argtypes) in PROTOTYPES.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            missing.append(name)
            continue
        fn.restype = restype
        fn.argtypes = argtypes
    return missing


def _open(path):
    """Open one library file, check its ABI, declare the prototypes.  Raises ImportError."""
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise LibraryNotFoundError("cannot load libvisiontrain from %r: %s" % (path, e)) from None
    try:
        abi_fn = lib.vt_abi_version
    except AttributeError:
        raise AbiMismatchError("%r is not libvisiontrain (no vt_abi_version symbol)" % path,
                               path=path) from None
    abi_fn.restype = ctypes.c_uint
    abi_fn.argtypes = []
    abi = abi_fn()
    if abi != ABI_VERSION:
        raise AbiMismatchError(
            "%r has ABI version %d but these Python bindings were written for ABI version %d; "
            "install matching versions of libvisiontrain and the visiontrain package"
            % (path, abi, ABI_VERSION), path=path, found=abi, expected=ABI_VERSION)
    missing = _declare(lib)
    if missing:
        raise AbiMismatchError(
            "%r (ABI %d) lacks symbols the bindings need: %s" % (path, abi, ", ".join(missing)),
            path=path, found=abi, expected=ABI_VERSION)
    return lib


def load_library(path=None):
    """Load libvisiontrain and return the ctypes.CDLL.

    With ``path`` that file is loaded.  Without it: $VT_LIBRARY, then a libvisiontrain.so*
    next to this package, then the system's library (ctypes.util.find_library, then
    "libvisiontrain.so.0").  Raises LibraryNotFoundError or AbiMismatchError (both derive from
    ImportError).  Loading is done once; a second call with a different path raises.
    """
    global _lib, _lib_path
    with _lock:
        if path is not None:
            path = os.fspath(path)
            if _lib is not None:
                if _same_file(path, _lib_path):
                    return _lib
                raise RuntimeError("libvisiontrain is already loaded from %r; cannot switch to %r "
                                   "in the same process" % (_lib_path, path))
            _lib = _open(path)
            _lib_path = path
            return _lib
        if _lib is not None:
            return _lib
        candidates, explicit = _candidates()
        errors = []
        for cand in candidates:
            try:
                lib = _open(cand)
            except AbiMismatchError:
                raise
            except LibraryNotFoundError as e:
                if explicit:
                    raise LibraryNotFoundError("VT_LIBRARY: %s" % e) from None
                errors.append(str(e))
                continue
            _lib, _lib_path = lib, cand
            return _lib
        raise LibraryNotFoundError(
            "libvisiontrain not found; pass its path to visiontrain.load_library(), set "
            "VT_LIBRARY, or install it.  Tried:\n  " + "\n  ".join(errors))


def _same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a == b


def lib():
    """The loaded library, loading it on first use."""
    return _lib if _lib is not None else load_library()


def library_path():
    """The path or name libvisiontrain was loaded from, or None when not loaded yet."""
    return _lib_path
