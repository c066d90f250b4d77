"""Exceptions raised by the visiontrain bindings.

Every failing libvisiontrain call raises a subclass of VisionTrainError chosen by its vt_status;
the exception's text is the library's message (the handle's *_last_error(), or vt_last_error()
when there is no handle) and ``.status`` is the numeric vt_status.
"""

import enum


class Status(enum.IntEnum):
    """vt_status.  The numeric values are fixed by the C ABI."""
    OK = 0
    INVALID_ARGUMENT = 1
    OUT_OF_MEMORY = 2
    IO = 3
    NOT_FOUND = 4
    FORMAT = 5
    UNKNOWN_OPTION = 6
    OPTION_VALUE = 7
    DATASET = 8
    UNSUPPORTED = 9
    BAD_STATE = 10
    CANCELLED = 11
    DEVICE = 12
    DEVICE_OOM = 13
    CHECKPOINT = 14
    BUFFER_TOO_SMALL = 15
    INTERNAL = 16
    NUMERIC = 17


class VisionTrainError(Exception):
    """A libvisiontrain call failed.

    Attributes: ``status`` (int, the vt_status; a Status member when known), ``message`` (the
    library's message), ``status_string`` (vt_status_string(), e.g. "not found").
    """
    status = None

    def __init__(self, message, status=None, status_string=None):
        super().__init__(message)
        if status is not None:
            try:
                status = Status(status)
            except ValueError:
                pass
            self.status = status
        self.message = message
        self.status_string = status_string


class InvalidArgumentError(VisionTrainError, ValueError):
    """VT_ERR_INVALID_ARGUMENT"""


class OutOfMemoryError(VisionTrainError, MemoryError):
    """VT_ERR_OUT_OF_MEMORY (host memory)"""


class FileIOError(VisionTrainError):
    """VT_ERR_IO: a file could not be read or written"""


class NotFoundError(VisionTrainError):
    """VT_ERR_NOT_FOUND: a file or folder does not exist (or a metric is not available yet)"""


class FormatError(VisionTrainError):
    """VT_ERR_FORMAT: a file is corrupt or of an unsupported kind"""


class OptionError(VisionTrainError, ValueError):
    """An option key or value was rejected (base of UnknownOptionError and OptionValueError)"""


class UnknownOptionError(OptionError, KeyError):
    """VT_ERR_UNKNOWN_OPTION"""

    def __str__(self):  # KeyError would repr() the message
        return str(self.message)


class OptionValueError(OptionError):
    """VT_ERR_OPTION_VALUE: wrong type or out of range"""


class DatasetError(VisionTrainError):
    """VT_ERR_DATASET: the dataset's layout or labels are unusable"""


class UnsupportedError(VisionTrainError):
    """VT_ERR_UNSUPPORTED: a valid request this build or model cannot do"""


class BadStateError(VisionTrainError):
    """VT_ERR_BAD_STATE (also raised by the bindings for a closed handle)"""


class Cancelled(VisionTrainError):
    """VT_ERR_CANCELLED: Trainer.cancel() or a progress callback stopped the run"""


CancelledError = Cancelled


class DeviceError(VisionTrainError):
    """VT_ERR_DEVICE: GPU missing or a GPU call failed"""


class DeviceOutOfMemoryError(DeviceError):
    """VT_ERR_DEVICE_OOM"""


class CheckpointError(VisionTrainError):
    """VT_ERR_CHECKPOINT: a checkpoint is truncated, corrupt, foreign or too new"""


class BufferTooSmallError(VisionTrainError):
    """VT_ERR_BUFFER_TOO_SMALL"""


class InternalError(VisionTrainError):
    """VT_ERR_INTERNAL: a bug in libvisiontrain"""


class NumericError(VisionTrainError, ArithmeticError):
    """VT_ERR_NUMERIC: training diverged (loss became NaN or infinite)"""


STATUS_EXCEPTIONS = {
    Status.INVALID_ARGUMENT: InvalidArgumentError,
    Status.OUT_OF_MEMORY: OutOfMemoryError,
    Status.IO: FileIOError,
    Status.NOT_FOUND: NotFoundError,
    Status.FORMAT: FormatError,
    Status.UNKNOWN_OPTION: UnknownOptionError,
    Status.OPTION_VALUE: OptionValueError,
    Status.DATASET: DatasetError,
    Status.UNSUPPORTED: UnsupportedError,
    Status.BAD_STATE: BadStateError,
    Status.CANCELLED: Cancelled,
    Status.DEVICE: DeviceError,
    Status.DEVICE_OOM: DeviceOutOfMemoryError,
    Status.CHECKPOINT: CheckpointError,
    Status.BUFFER_TOO_SMALL: BufferTooSmallError,
    Status.INTERNAL: InternalError,
    Status.NUMERIC: NumericError,
}


def exception_for(status):
    """The exception class for a vt_status (VisionTrainError for a status added later)."""
    return STATUS_EXCEPTIONS.get(status, VisionTrainError)


# ---- loading errors (ImportError, so `except ImportError` around an import catches them) ----

class LibraryNotFoundError(ImportError):
    """libvisiontrain could not be found or loaded."""


class AbiMismatchError(ImportError):
    """The loaded libvisiontrain has an ABI version these bindings were not written for."""

    def __init__(self, message, path=None, found=None, expected=None):
        super().__init__(message, path=path)
        self.found = found
        self.expected = expected
