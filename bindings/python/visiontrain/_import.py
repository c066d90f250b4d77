"""import_onnx(): a Model from an ONNX file (vt_model_import_onnx).

    model = vt.import_onnx("resnet18.onnx", imgsz=224)     # torchvision's resnet18, exported
    model.save("r18.vtm")                                  # or train it: Trainer(model, ...)
"""

import ctypes

from . import _native
from ._core import _check, _cpath, _cstr
from ._model import Model


def import_onnx(path, arch="resnet18", imgsz=224, normalize=None, mean=None, std=None):
    """A new ``arch`` Model whose weights are those of the ONNX file at ``path`` (only
    "resnet18" so far: torchvision's layout, as torch.onnx.export writes it, batch norm folded
    into the convolutions (the default eval-mode export) or kept
    (training=torch.onnx.TrainingMode.PRESERVE, the better start for fine-tuning)).  Its class
    count is the final Gemm's output count, its channels the first Conv's; ``imgsz`` is the
    model's image size.  ``normalize="imagenet"`` (torchvision's mean and std) or ``mean=``
    / ``std=`` (a number or one per input channel) fold the input normalisation the graph was
    trained with into the first convolution, so the model takes pixels / 255 as every model
    of the library does (docs/onnx.md).  A graph that does not match the architecture raises
    InvalidArgumentError naming the first ONNX node that differs; a file that is not ONNX,
    FormatError; a bad option value, OptionValueError."""
    if isinstance(imgsz, bool) or not isinstance(imgsz, int):
        raise TypeError("imgsz must be an int, not %r" % (imgsz,))
    opts = ["imgsz=%d" % imgsz]
    if normalize is not None:
        opts.append("normalize=%s" % normalize)
    for key, value in (("mean", mean), ("std", std)):
        if value is None:
            continue
        values = value if isinstance(value, (list, tuple)) else [value]
        opts.append("%s=%s" % (key, ",".join(repr(float(v)) for v in values)))
    lib = _native.lib()
    out = ctypes.c_void_p()
    _check(lib.vt_model_import_onnx(ctypes.byref(out), _cpath(path), _cstr(str(arch)),
                                    _cstr(" ".join(opts))))
    model = Model.__new__(Model)
    model._init(lib, out.value)
    return model
