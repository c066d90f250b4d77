"""ONNX import (vt_model_import_onnx, visiontrain.import_onnx, `vt import`) of torchvision's
resnet18, without torch: the graphs are built here with onnx.helper in the layout, node order
and names torch.onnx.export writes (torch 1.13, opset 13), with random weights, in both forms:

  folded    the default eval-mode export: each batch norm folded into the Conv before it (a
            Conv with a bias, no BatchNormalization)
  preserve  training=TrainingMode.PRESERVE of an eval-mode model: Conv without bias, then
            BatchNormalization with the running statistics

Each is run in onnxruntime and the imported model's forward (softmax probabilities) is compared
with the softmax of the graph's logits.  Also: a variant with the other encodings the importer
reads (float_data, Constant nodes, Gemm transB=0, one input channel); the library's own export
of resnet18 read back; graphs that differ from resnet18 refused with a message naming the
node; truncated and corrupted files refused without a crash; `vt import` and Model(.vtm).

The input normalisation folded into the first convolution (options normalize=imagenet,
mean=R,G,B std=R,G,B): the import fed x must compute what the graph computes on
(x - mean) / std.  That is exact except where conv1's zero padding reaches (the graph pads the
normalised input with 0, i.e. pixels at `mean`; the library pads pixels with 0), so the exact
comparison is against the graph with conv1's pads taken out, fed (pad(x, 0) - mean) / std
(1e-4 as everywhere); against the graph itself on (x - mean) / std the fold must only be much
closer than an import without it (the differences are printed).  Bad values are refused.

Where an interpreter with torch and torchvision exists (/usr/bin/python3 on Debian, or
$VT_TORCH_PYTHON), a real torchvision.models.resnet18() is exported too
(torch_resnet18_export.py): its node sequence must be the builder's, and the imported models
must compute torch's own eval-mode output.  Without torch that part prints a SKIP line.

Not a unittest module (meson runs it as the `onnx_import` test).  Exit 77 (meson: SKIP) when
numpy, onnx or onnxruntime is missing, or when this build has no ONNX support.
"""

import ctypes
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import vt_test_env  # noqa: F401  (sets up the import path and the library)

SKIP = 77
missing = []
try:
    import numpy as np
except ImportError:
    missing.append("numpy")
try:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError:
    missing.append("onnx")
try:
    import onnxruntime as ort
except ImportError:
    missing.append("onnxruntime")
if missing:
    print("SKIP: python3 (%s) lacks %s; scripts/install-deps.sh installs them with pip"
          % (sys.executable, ", ".join(missing)))
    sys.exit(SKIP)

import visiontrain as vt  # noqa: E402
from visiontrain import _native  # noqa: E402
from visiontrain import _core as vt_core  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
IMGSZ = 64
NC = 10
TOL = 1e-4          # max abs difference of the probabilities
IMAGENET = (np.array([0.485, 0.456, 0.406], np.float32), np.array([0.229, 0.224, 0.225],
                                                                  np.float32))
NORM_MARGIN = 3.0   # the fold's logit difference near the borders: < 1/3 of no fold's
failures = []
worst = {}


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg)
    if not cond:
        failures.append(msg)


# ---- the builder -------------------------------------------------------------------------------

# torchvision's resnet18: (stage, block, output channels, stride) of each basic block
BLOCKS = [(s, b, c, 2 if s > 1 and b == 0 else 1)
          for s, c in zip((1, 2, 3, 4), (64, 128, 256, 512)) for b in (0, 1)]


class Builder:
    """One resnet18 graph as torch.onnx.export (1.13, opset 13) writes it: node names
    "/layer1/layer1.0/conv1/Conv", outputs "<node>_output_0"; initializers named after the
    modules ("layer1.0.bn1.running_mean") in the preserve form, "onnx::Conv_193"... (the
    folded weights, in torch's numbering) in the folded one."""

    def __init__(self, form, seed, nc=NC, channels=3, raw=True, consts=False, trans_b=1):
        self.form, self.raw, self.consts = form, raw, consts
        self.rng = np.random.RandomState(seed)
        self.nodes, self.inits, self.folded_id = [], [], 193
        x = "input.1"
        x = self.cbr("/conv1", "/bn1", "conv1", "bn1", x, channels, 64, 7, 2, 3, "/relu/Relu")
        x = self.node("MaxPool", "/maxpool/MaxPool", [x], ceil_mode=0, kernel_shape=[3, 3],
                      pads=[1, 1, 1, 1], strides=[2, 2])
        cin = 64
        for s, b, c, stride in BLOCKS:
            p, m = "/layer%d/layer%d.%d" % (s, s, b), "layer%d.%d" % (s, b)
            y = self.cbr(p + "/conv1", p + "/bn1", m + ".conv1", m + ".bn1", x, cin, c, 3,
                         stride, 1, p + "/relu/Relu")
            y = self.cbr(p + "/conv2", p + "/bn2", m + ".conv2", m + ".bn2", y, c, c, 3, 1, 1)
            sc = x
            if stride != 1 or cin != c:
                sc = self.cbr(p + "/downsample/downsample.0", p + "/downsample/downsample.1",
                              m + ".downsample.0", m + ".downsample.1", x, cin, c, 1, stride, 0)
            y = self.node("Add", p + "/Add", [y, sc])
            x = self.node("Relu", p + "/relu_1/Relu", [y])
            cin = c
        x = self.node("GlobalAveragePool", "/avgpool/GlobalAveragePool", [x])
        x = self.node("Flatten", "/Flatten", [x], axis=1)
        w = (self.rng.randn(nc, 512) * 0.005).astype(np.float32)  # logits of std ~2
        bias = (self.rng.randn(nc) * 0.1).astype(np.float32)
        if trans_b == 0:
            w = np.ascontiguousarray(w.T)
        fc = [self.tensor("fc.weight", w), self.tensor("fc.bias", bias)]
        if form == "folded":  # torch writes the classifier's tensors first there
            self.inits = self.inits[-2:] + self.inits[:-2]
        self.node("Gemm", "/fc/Gemm", [x] + fc, out="191", alpha=1.0, beta=1.0,
                  **({"transB": 1} if trans_b else {}))
        self.channels, self.nc = channels, nc

    def tensor(self, name, value):
        if self.consts and not name.startswith("fc."):
            # the tensor as a Constant node's value (in front of the node that reads it)
            t = numpy_helper.from_array(value, name + "_value")
            self.nodes.append(helper.make_node("Constant", [], [name], name="/Constant_" + name,
                                               value=t))
        elif self.raw:
            self.inits.append(numpy_helper.from_array(value, name))
        else:
            self.inits.append(helper.make_tensor(name, TensorProto.FLOAT, value.shape,
                                                 value.ravel().tolist()))
        return name

    def node(self, op, name, inputs, out=None, **attrs):
        out = out or name + "_output_0"
        self.nodes.append(helper.make_node(op, inputs, [out], name=name, **attrs))
        return out

    def cbr(self, conv, bn, conv_mod, bn_mod, x, cin, cout, k, s, p, relu=None):
        """Conv, its batch norm (folded or kept), and a ReLU when `relu` names one."""
        w = (self.rng.randn(cout, cin, k, k) * np.sqrt(2.0 / (cin * k * k))).astype(np.float32)
        r = self.rng
        gamma = r.uniform(0.5, 1.5, cout).astype(np.float32)
        beta = r.uniform(-0.3, 0.3, cout).astype(np.float32)
        mean = r.uniform(-0.3, 0.3, cout).astype(np.float32)
        var = r.uniform(0.5, 2.0, cout).astype(np.float32)
        attrs = dict(dilations=[1, 1], group=1, kernel_shape=[k, k], pads=[p] * 4,
                     strides=[s, s])
        if self.form == "folded":
            sc = gamma / np.sqrt(var + np.float32(1e-5))
            wf = (w * sc[:, None, None, None]).astype(np.float32)
            bf = (beta - mean * sc).astype(np.float32)
            names = ["onnx::Conv_%d" % self.folded_id, "onnx::Conv_%d" % (self.folded_id + 1)]
            self.folded_id += 3
            ins = [x, self.tensor(names[0], wf), self.tensor(names[1], bf)]
            y = self.node("Conv", conv + "/Conv", ins, **attrs)
        else:
            y = self.node("Conv", conv + "/Conv", [x, self.tensor(conv_mod + ".weight", w)],
                          **attrs)
            ins = [y] + [self.tensor(bn_mod + "." + n, v) for n, v in
                         (("weight", gamma), ("bias", beta), ("running_mean", mean),
                          ("running_var", var))]
            y = self.node("BatchNormalization", bn + "/BatchNormalization", ins,
                          epsilon=1e-5, momentum=0.9)
        return self.node("Relu", relu, [y]) if relu else y

    def model(self):
        inp = helper.make_tensor_value_info("input.1", TensorProto.FLOAT,
                                            ["batch", self.channels, IMGSZ, IMGSZ])
        out = helper.make_tensor_value_info("191", TensorProto.FLOAT, ["batch", self.nc])
        g = helper.make_graph(self.nodes, "torch_jit", [inp], [out], self.inits)
        m = helper.make_model(g, producer_name="pytorch", producer_version="1.13.0",
                              opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 7
        return m


def save(model, path):
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return path


def softmax(z):
    z = z.astype(np.float64)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def compare(label, model, x, ref_logits):
    """The imported model's probabilities against the softmax of the reference logits."""
    got = model.forward(x).reshape(len(x), -1).astype(np.float64)
    p = softmax(ref_logits)
    d = float(np.abs(got - p).max())
    # log-probabilities: the logits up to a constant, where the probabilities are not tiny
    keep = p > 1e-6
    dl = float(np.abs(np.log(np.maximum(got, 1e-30)) - np.log(p))[keep].max())
    worst[label] = (d, dl)
    check(d <= TOL and dl <= 1e-3, "%s: max |probability difference| %.3g, max |log-probability "
          "difference| %.3g (probabilities up to %.3f)" % (label, d, dl, float(p.max())))


def ort_logits(path, x):
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return s.run(None, {s.get_inputs()[0].name: x})[0]


def refused(label, fn, exc, *patterns):
    try:
        fn()
    except exc as e:
        msg = str(e)
        ok = all(re.search(p, msg) for p in patterns)
        check(ok, "%s: %s: %s" % (label, type(e).__name__, msg))
        return
    except vt.VisionTrainError as e:
        check(False, "%s: %s (expected %s): %s" % (label, type(e).__name__, exc.__name__, e))
        return
    check(False, "%s: accepted" % label)


def import_(path, **kw):
    return vt.import_onnx(path, imgsz=IMGSZ, **kw)


def import_with(path, options, imgsz=IMGSZ):
    """vt_model_import_onnx with more options than import_onnx() passes (it passes imgsz)."""
    lib = _native.lib()
    out = ctypes.c_void_p()
    st = lib.vt_model_import_onnx(ctypes.byref(out), path.encode(), b"resnet18",
                                  ("imgsz=%d %s" % (imgsz, options)).encode())
    if st:
        if out.value is not None:
            check(False, "a refused import (%s) leaves *out NULL" % options)
        vt_core._check(st)
    m = vt.Model.__new__(vt.Model)
    m._init(lib, out.value)
    return m


def normalised(x, mean, std, pad=0):
    """(x - mean) / std per channel; pad > 0: x first padded with `pad` pixels of 0 on each
    side (the library's padding of the first convolution)."""
    if pad:
        x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    c = x.shape[1]
    return ((x - mean.reshape(1, c, 1, 1)) / std.reshape(1, c, 1, 1)).astype(np.float32)


def without_first_pads(model):
    """The graph with its first Conv's pads taken out and its input that much larger: fed an
    input padded with 0 pixels before normalising, it computes what a normalising import
    does.  Returns the graph and the pad."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    conv = next(n for n in m.graph.node if n.op_type == "Conv")
    a = next(a for a in conv.attribute if a.name == "pads")
    pad = a.ints[0]
    assert list(a.ints) == [pad] * 4
    a.ints[:] = [0, 0, 0, 0]
    for d in m.graph.input[0].type.tensor_type.shape.dim[2:]:
        d.dim_value += 2 * pad
    return m, pad


def logit_diff(probs, logits):
    """Max |difference| of the logits (up to each image's constant) behind the probabilities."""
    lp = np.log(np.maximum(probs.reshape(len(logits), -1).astype(np.float64), 1e-300))
    z = logits.astype(np.float64)
    return float(np.abs((lp - lp.mean(1, keepdims=True)) - (z - z.mean(1, keepdims=True))).max())


def fold_vs_none(label, folded, plain, x, ref_logits):
    """Against the graph on (x - mean) / std with its own padding: the folded import must be
    far closer than one without the fold (the padding differs, nothing else)."""
    got = folded.forward(x)
    d, d0 = logit_diff(got, ref_logits), logit_diff(plain.forward(x), ref_logits)
    dp = float(np.abs(got.reshape(len(x), -1) - softmax(ref_logits)).max())
    worst[label + ", graph's padding (no fold: %.3g)" % d0] = (dp, d)
    check(d * NORM_MARGIN < d0, "%s, the graph's own padding: max |logit difference| %.3g, "
          "without the fold %.3g (logits up to %.3g)" % (label, d, d0,
                                                         float(np.abs(ref_logits).max())))


# ---- the parts ---------------------------------------------------------------------------------

def synthetic(tmp, x):
    for form in ("folded", "preserve"):
        b = Builder(form, seed=1 if form == "folded" else 2)
        path = save(b.model(), os.path.join(tmp, form + ".onnx"))
        onnx.checker.check_model(path, full_check=True)
        m = import_(path)
        check((m.arch, m.num_classes, m.channels, m.imgsz) == ("resnet18", NC, 3, IMGSZ),
              "%s: imported as %s, %d classes, %d channels, imgsz %d" % (form, m.arch,
                                                                        m.num_classes,
                                                                        m.channels, m.imgsz))
        compare("synthetic " + form, m, x, ort_logits(path, x))
    # the other encodings: float_data, tensors of Constant nodes, Gemm transB=0, gray input
    b = Builder("preserve", seed=3, nc=5, channels=1, raw=False, consts=True, trans_b=0)
    path = save(b.model(), os.path.join(tmp, "variant.onnx"))
    x1 = np.ascontiguousarray(x[:, :1])
    m = import_(path)
    check(m.channels == 1 and m.num_classes == 5, "variant: 1 channel, 5 classes")
    compare("synthetic variant (float_data, Constant, transB=0, gray)", m, x1,
            ort_logits(path, x1))


def own_export(tmp, x):
    """The library's own resnet18 export read back: folded (fold=1) and with BatchNormalization
    nodes (fold=0), each ending in the exporter's Softmax."""
    src = vt.Model("resnet18", 7, imgsz=IMGSZ, seed=5)
    ref = src.forward(x).reshape(len(x), -1)
    for fold in (1, 0):
        path = src.export(os.path.join(tmp, "own%d.onnx" % fold), fold=fold)
        got = import_(path).forward(x).reshape(len(x), -1)
        d = float(np.abs(got - ref).max())
        worst["vt export fold=%d" % fold] = (d, 0.0)
        check(d <= 1e-6, "vt export fold=%d read back: max |difference| %.3g" % (fold, d))


def normalization(tmp, x):
    """normalize=imagenet and mean=/std= on the graphs of synthetic(): exact against the graph
    with the library's padding, close against the graph's own, identities exact, bad values
    refused."""
    rng = np.random.RandomState(11)
    x1 = np.ascontiguousarray(x[:, :1])
    own = (np.array([0.5, 0.4, 0.3], np.float32), np.array([0.2, 0.25, 0.3], np.float32))
    gray = (np.array([0.45], np.float32), np.array([0.226], np.float32))
    cases = [("folded", "normalize=imagenet", IMAGENET, x),
             ("preserve", "normalize=imagenet", IMAGENET, x),
             ("preserve", "mean=0.5,0.4,0.3 std=0.2,0.25,0.3", own, x),
             ("variant", "mean=0.45 std=0.226", gray, x1)]
    for form, opts, (mean, std), xx in cases:
        path = os.path.join(tmp, form + ".onnx")
        ref, pad = without_first_pads(onnx.load(path))
        ref = save(ref, os.path.join(tmp, form + "-nopad.onnx"))
        m = import_with(path, opts)
        label = "%s %s" % (form, opts)
        compare(label + ", the library's padding", m, xx,
                ort_logits(ref, normalised(xx, mean, std, pad)))
        if form != "variant":
            fold_vs_none(label, m, import_(path), xx, ort_logits(path, normalised(xx, mean, std)))
    # the identities import exactly what no option does
    path = os.path.join(tmp, "folded.onnx")
    plain = import_(path).forward(x)
    for opts in ("normalize=none", "mean=0,0,0 std=1,1,1"):
        d = float(np.abs(import_with(path, opts).forward(x) - plain).max())
        check(d == 0, "%s: the plain import (%.3g)" % (opts, d))
    # the Python keywords pass the same options
    for kw, opts in ((dict(normalize="imagenet"), "normalize=imagenet"),
                     (dict(mean=[0.5, 0.4, 0.3], std=(0.2, 0.25, 0.3)),
                      "mean=0.5,0.4,0.3 std=0.2,0.25,0.3")):
        d = float(np.abs(import_(path, **kw).forward(x) - import_with(path, opts).forward(x)).max())
        check(d == 0, "import_onnx(%s) is %s (max difference %.3g)" % (kw, opts, d))
    # a mean alone (std 1) against the graph with the library's padding
    ref = os.path.join(tmp, "folded-nopad.onnx")
    mean = rng.uniform(-1, 1, 3).astype(np.float32)
    m = import_with(path, "mean=%s" % ",".join(repr(float(v)) for v in mean))
    compare("folded, mean alone, the library's padding", m, x,
            ort_logits(ref, normalised(x, mean, np.ones(3, np.float32), 3)))
    variant = os.path.join(tmp, "variant.onnx")
    bad = [("mean=0.5,x,0.3", path, ["mean=0.5,x,0.3", "'x' is not a finite number"]),
           ("mean=0.5,,0.3", path, ["mean=0.5,,0.3", "'' is not"]),
           ("mean=1,2,3,4", path, ["mean=1,2,3,4", "more than 3"]),
           ("mean=inf,0,0", path, ["mean=inf,0,0", "'inf'"]),
           ("mean=0.5,0.5", path, ["mean=0.5,0.5", "2 values", "3 input channels"]),
           ("std=0.2,0,0.3", path, ["std=0.2,0,0.3", "0 is not > 0"]),
           ("std=-1", variant, ["std=-1", "not > 0"]),
           ("std=0.5", path, ["std=0.5", "1 value,", "3 input channels"]),
           ("mean=0.1,0.2,0.3", variant, ["mean=0.1,0.2,0.3", "3 values", "1 input channel"]),
           ("std=1e-300,1,1", path, ["std=1e-300,1,1", "overflow"]),
           ("normalize=imagenets", path, ["normalize=imagenets", "imagenet", "none"]),
           ("normalize=imagenet mean=0.5,0.5,0.5", path, ["normalize=imagenet",
                                                           "mean=0.5,0.5,0.5", "not both"]),
           ("normalize=none std=2,2,2", path, ["normalize=none", "std=2,2,2", "not both"]),
           ("normalize=imagenet", variant, ["normalize=imagenet", "RGB", "1 input channel"])]
    for opts, p, pats in bad:
        refused("%s (%s)" % (opts, os.path.basename(p)), lambda: import_with(p, opts),
                vt.OptionValueError, *pats)
    lib = _native.lib()
    out = ctypes.c_void_p()
    st = lib.vt_model_import_onnx(ctypes.byref(out), path.encode(), b"resnet18", b"mu=1")
    msg = lib.vt_last_error()
    check(st == vt.Status.UNKNOWN_OPTION and all(k in msg for k in (b"mean", b"std",
                                                                    b"normalize")),
          "options mu=1: unknown option, the message lists mean, std, normalize (%r)" % msg)


def modified(base, fn):
    m = onnx.ModelProto()
    m.CopyFrom(base)
    fn(m.graph)
    return m


def find(g, name):
    return next(i for i, n in enumerate(g.node) if n.name == name)


def mismatches(tmp):
    base = Builder("preserve", seed=4).model()

    def bigger_kernel(g):
        n = g.node[find(g, "/layer2/layer2.0/conv1/Conv")]
        for a in n.attribute:
            if a.name == "kernel_shape":
                a.ints[:] = [5, 5]
            if a.name == "pads":
                a.ints[:] = [2, 2, 2, 2]
        t = next(t for t in g.initializer if t.name == n.input[1])
        t.CopyFrom(numpy_helper.from_array(np.zeros((128, 64, 5, 5), np.float32), t.name))

    def missing_relu(g):
        i = find(g, "/layer3/layer3.1/relu/Relu")
        relu = g.node[i]
        g.node[i + 1].input[0] = relu.input[0]
        del g.node[i]

    def other_eps(g):
        n = g.node[find(g, "/layer1/layer1.1/bn2/BatchNormalization")]
        next(a for a in n.attribute if a.name == "epsilon").f = 1e-3

    def rewired(g):
        g.node[find(g, "/layer4/layer4.1/Add")].input[1] = "/layer4/layer4.0/Add_output_0"

    def external(g):
        t = next(t for t in g.initializer if t.name == "layer1.0.conv1.weight")
        t.ClearField("raw_data")
        t.data_location = TensorProto.EXTERNAL
        e = t.external_data.add()
        e.key, e.value = "location", "weights.bin"

    def double(g):
        t = next(t for t in g.initializer if t.name == "layer1.0.conv2.weight")
        t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float64), t.name))

    cases = [
        ("a 5x5 kernel where resnet18 has 3x3", bigger_kernel, vt.InvalidArgumentError,
         [r"ONNX node \d+ '/layer2/layer2\.0/conv1/Conv' \(Conv\)", r"layer \d+ \(conv\)",
          "kernel"]),
        ("a missing ReLU", missing_relu, vt.InvalidArgumentError,
         [r"'/layer3/layer3\.1/conv2/Conv' \(Conv\)", r"layer \d+ \(act\)", "Relu"]),
        ("another batch-norm epsilon", other_eps, vt.InvalidArgumentError,
         [r"'/layer1/layer1\.1/bn2/BatchNormalization'", "epsilon"]),
        ("an Add wired to another layer", rewired, vt.InvalidArgumentError,
         [r"'/layer4/layer4\.1/Add' \(Add\)", r"layer \d+ \(add\)"]),
        ("external data", external, vt.FormatError,
         ["layer1.0.conv1.weight", "external data"]),
        ("float64 weights", double, vt.FormatError, ["layer1.0.conv2.weight", "data type 11"]),
    ]
    for label, fn, exc, pats in cases:
        path = save(modified(base, fn), os.path.join(tmp, "bad.onnx"))
        refused(label, lambda: import_(path), exc, *pats)
    good = save(base, os.path.join(tmp, "good.onnx"))
    refused("arch=cls-n", lambda: vt.import_onnx(good, arch="cls-n"), vt.InvalidArgumentError,
            "resnet18")
    lib = _native.lib()
    out = ctypes.c_void_p()
    st = lib.vt_model_import_onnx(ctypes.byref(out), good.encode(), b"resnet18", b"seed=1")
    check(st == vt.Status.UNKNOWN_OPTION and out.value is None
          and b"imgsz" in lib.vt_last_error(),
          "options seed=1: unknown option, the message lists imgsz (%r)" % lib.vt_last_error())
    refused("a missing file", lambda: import_(os.path.join(tmp, "none.onnx")), vt.NotFoundError,
            "none.onnx")
    return base, good


def broken_files(tmp, base):
    """Truncations, garbage and byte flips in the nodes: an error (or, for a flip the graph
    survives, a model), never a crash."""
    data = base.SerializeToString()
    n = len(data)
    bad = os.path.join(tmp, "broken.onnx")
    cuts = [0, 1, 2, 10, 100, 1000, 5000, 20000, n // 3, n // 2, n - 4000, n - 1]
    for cut in cuts:
        with open(bad, "wb") as f:
            f.write(data[:cut])
        try:
            import_(bad)
            check(False, "truncated to %d of %d bytes: accepted" % (cut, n))
        except vt.VisionTrainError as e:
            if cut in (0, n // 2):
                print("     (%d bytes: %s)" % (cut, e))
    check(True, "%d truncations refused with an error" % len(cuts))
    rng = np.random.RandomState(7)
    with open(bad, "wb") as f:
        f.write(rng.bytes(100000))
    refused("random bytes", lambda: import_(bad), vt.VisionTrainError, ".")
    head = 30000  # the nodes come first in the file (graph field 1, initializers field 5)
    statuses = {}
    for trial in range(40):
        b = bytearray(data)
        for _ in range(1 + trial % 4):
            b[rng.randint(0, head)] = rng.randint(0, 256)
        with open(bad, "wb") as f:
            f.write(b)
        try:
            import_(bad).close()
            statuses["ok"] = statuses.get("ok", 0) + 1
        except vt.VisionTrainError as e:
            statuses[type(e).__name__] = statuses.get(type(e).__name__, 0) + 1
    check(True, "40 files with bytes flipped in the nodes: %s" % statuses)


def vt_exe():
    exe = os.environ.get("VT_EXE")
    if not exe and os.environ.get("VT_LIBRARY"):
        exe = os.path.join(os.path.dirname(os.environ["VT_LIBRARY"]), "examples", "vt")
    return exe if exe and os.access(exe, os.X_OK) else None


def cli(tmp, good, x):
    exe = vt_exe()
    if not exe:
        print("SKIP the vt import part: no vt tool (set VT_EXE)")
        return
    out = os.path.join(tmp, "r18.vtm")
    r = subprocess.run([exe, "import", good, "out=" + out, "imgsz=%d" % IMGSZ],
                       capture_output=True, text=True)
    print("     " + (r.stdout + r.stderr).strip())
    want = "imported %s as resnet18 (%d parameters, %d classes) -> %s" % (
        good, vt.Model("resnet18", NC, imgsz=IMGSZ).num_params, NC, out)
    check(r.returncode == 0 and r.stdout.strip() == want and os.path.isfile(out),
          "vt import: exit %d, the line and the file" % r.returncode)
    if os.path.isfile(out):
        loaded = vt.Model(out)
        d = float(np.abs(loaded.forward(x) - import_(good).forward(x)).max())
        check(d == 0 and loaded.imgsz == IMGSZ, "Model(%s) computes the import (%.3g)"
              % (os.path.basename(out), d))
    # default out: the .onnx's path with .vtm
    r = subprocess.run([exe, "import", good, "imgsz=%d" % IMGSZ], capture_output=True, text=True)
    check(r.returncode == 0 and os.path.isfile(good[:-5] + ".vtm"),
          "vt import without out= writes %s" % os.path.basename(good[:-5] + ".vtm"))
    # the normalisation: passed through, said, and the file computes what the import does
    r = subprocess.run([exe, "import", good, "out=" + out, "imgsz=%d" % IMGSZ,
                        "normalize=imagenet"], capture_output=True, text=True)
    print("     " + (r.stdout + r.stderr).strip().replace("\n", "\n     "))
    lines = r.stdout.strip().split("\n")
    said = "input normalised (mean 0.485,0.456,0.406, std 0.229,0.224,0.225, torchvision's " \
        "ImageNet) folded into the first convolution: the model takes pixels / 255"
    check(r.returncode == 0 and lines[0] == want and lines[1:] == [said],
          "vt import normalize=imagenet: exit %d, says what it folded" % r.returncode)
    if r.returncode == 0:
        d = float(np.abs(vt.Model(out).forward(x) -
                         import_with(good, "normalize=imagenet").forward(x)).max())
        check(d == 0, "its file computes the import with normalize=imagenet (%.3g)" % d)
    r = subprocess.run([exe, "import", good, "out=" + out, "mean=0.5,0.5,0.5"],
                       capture_output=True, text=True)
    check(r.returncode == 0 and "(mean 0.5,0.5,0.5, std 1)" in r.stdout,
          "vt import mean=0.5,0.5,0.5: exit %d, %s" % (r.returncode, r.stdout.strip()))
    r = subprocess.run([exe, "import", good, "out=" + out, "std=0.2,x,0.2"],
                       capture_output=True, text=True)
    check(r.returncode == 2 and "std=0.2,x,0.2" in r.stderr,
          "vt import std=0.2,x,0.2: exit %d, %s" % (r.returncode, r.stderr.strip()))
    r = subprocess.run([exe, "import"], capture_output=True, text=True)
    check(r.returncode == 2, "vt import without a file: exit %d (usage)" % r.returncode)
    r = subprocess.run([exe, "import", good, "arch=cls-n"], capture_output=True, text=True)
    check(r.returncode == 2 and "resnet18" in r.stderr,
          "vt import arch=cls-n: exit %d, %s" % (r.returncode, r.stderr.strip()))
    bad = os.path.join(tmp, "broken.onnx")
    with open(bad, "wb") as f:
        f.write(b"\x08\x07\x12")
    r = subprocess.run([exe, "import", bad], capture_output=True, text=True)
    check(r.returncode not in (0, 2) and r.returncode > 0 and "broken.onnx" in r.stderr,
          "vt import of a broken file: exit %d, %s" % (r.returncode, r.stderr.strip()))


def torch_python():
    for py in filter(None, [os.environ.get("VT_TORCH_PYTHON"), "/usr/bin/python3"]):
        if not os.access(py, os.X_OK):
            continue
        # torch runs without this interpreter's paths and without a sanitizer's preload
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("PYTHON") and k not in ("LD_PRELOAD", "ASAN_OPTIONS")}
        r = subprocess.run([py, "-c", "import torch, torchvision, numpy"], env=env,
                           capture_output=True)
        if r.returncode == 0:
            return py, env
    return None, None


def real_torch(tmp):
    py, env = torch_python()
    if not py:
        print("SKIP the torch part: no python3 with torch and torchvision (/usr/bin/python3 "
              "or $VT_TORCH_PYTHON)")
        return
    d = os.path.join(tmp, "torch")
    os.mkdir(d)
    t0 = time.time()
    r = subprocess.run([py, os.path.join(HERE, "torch_resnet18_export.py"), d, str(IMGSZ), "0"],
                       env=env, capture_output=True, text=True, timeout=240)
    if r.returncode:
        check(False, "torch export failed: %s" % r.stderr[-2000:])
        return
    print("     torch export: %.1f s" % (time.time() - t0))
    x = np.load(os.path.join(d, "inputs.npy"))
    # the builder's node sequence is torch's
    for form, f in (("folded", "fold.onnx"), ("preserve", "preserve.onnx")):
        real = [(n.op_type, n.name) for n in onnx.load(os.path.join(d, f)).graph.node]
        ours = [(n.op_type, n.name) for n in Builder(form, 0, nc=1000).nodes]
        same = real == ours
        if not same:
            print("     torch: %s\n     ours:  %s" % (" ".join(o for o, _ in real),
                                                    " ".join(o for o, _ in ours)))
        check(same, "%s: the builder's %d nodes are torch's (op types and names)"
              % (form, len(ours)))
    for label, f, ref in (("torch plain init, folded (Identity nodes)", "plain_fold.onnx",
                           "plain_out.npy"), ("torch folded", "fold.onnx", "out.npy"),
                          ("torch preserve", "preserve.onnx", "out.npy")):
        m = import_(os.path.join(d, f))
        check(m.num_classes == 1000, "%s: 1000 classes" % label)
        compare(label, m, x, np.load(os.path.join(d, ref)))
        if f != "plain_fold.onnx":
            # normalize=imagenet against torch on the normalised input
            n = import_with(os.path.join(d, f), "normalize=imagenet")
            compare(label + " normalize=imagenet, the library's padding", n, x,
                    np.load(os.path.join(d, "norm_pad_out.npy")))
            fold_vs_none(label + " normalize=imagenet", n, m, x,
                         np.load(os.path.join(d, "norm_out.npy")))


def main():
    try:
        vt.import_onnx(os.path.join(tempfile.gettempdir(), "vt-no-such-file.onnx"))
    except vt.UnsupportedError as e:
        print("SKIP: %s" % e)
        sys.exit(SKIP)
    except vt.NotFoundError:
        pass
    tmp = tempfile.mkdtemp(prefix="vt-onnx-import-")
    t0 = time.time()
    try:
        x = np.random.RandomState(0).rand(4, 3, IMGSZ, IMGSZ).astype(np.float32)
        synthetic(tmp, x)
        own_export(tmp, x)
        t1 = time.time()
        normalization(tmp, x)
        print("     the normalisation part: %.1f s" % (time.time() - t1))
        base, good = mismatches(tmp)
        broken_files(tmp, base)
        cli(tmp, good, x)
        real_torch(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("max differences (probabilities, log-probabilities; against the graph's padding: "
          "logits up to a constant):")
    for k, (d, dl) in worst.items():
        print("  %-58s %.3g  %.3g" % (k, d, dl))
    print("%.1f s" % (time.time() - t0))
    if failures:
        print("%d FAILED:\n  %s" % (len(failures), "\n  ".join(failures)))
        sys.exit(1)
    print("all passed")


if __name__ == "__main__":
    main()
