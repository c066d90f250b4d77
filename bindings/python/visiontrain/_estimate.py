"""The GPU catalog and the training time / cost estimator (vt_catalog_*, vt_estimator_*)."""

import collections
import ctypes
import enum
import os

from . import _native
from ._core import (Dataset, Model, _Closable, _cpath, _cstr, _deliver_log, _enum_arg,
                    _format_value, _Handle, _install_log, _kv_string, _raise, _text)
from .errors import Status, VisionTrainError



def _check(status):
    """Raise for a non-OK status with the calling thread's message (vt_last_error()).

    The catalog and estimator functions set it on every failure, while their handles' last
    error is only updated by some of them, so the thread's message is the current one."""
    if status != 0:
        _raise(status)


# ---- enums -------------------------------------------------------------------------------------

class GpuField(enum.IntEnum):
    """Numeric fields of a catalog entry (vt_gpu_field)."""
    MEMORY_GB = 1
    BANDWIDTH_GBS = 2
    FP32_TFLOPS = 3
    TF32_TFLOPS = 4
    BF16_TFLOPS = 5
    PRICE_USD_H = 6
    TDP_W = 7
    COMPUTE_CAPABILITY = 8


class EstResult(enum.IntEnum):
    """Results of an estimate (vt_est_result); keys of an Estimate are their lower-case names."""
    STEP_SECONDS = 1
    STEPS_PER_EPOCH = 2
    TRAIN_SECONDS_PER_EPOCH = 3
    VAL_SECONDS_PER_EPOCH = 4
    EPOCH_SECONDS = 5
    TOTAL_SECONDS = 6
    COST_USD = 7
    PEAK_MEMORY_BYTES = 8
    DEVICE_MEMORY_BYTES = 9
    FITS = 10
    MAX_BATCH = 11
    TRAIN_FLOPS_PER_IMAGE = 12
    FORWARD_FLOPS_PER_IMAGE = 13
    PARAMS = 14
    COMPUTE_SECONDS_PER_STEP = 15
    LOADER_SECONDS_PER_STEP = 16
    LOADER_BOUND = 17
    MEETS_LIMIT = 18
    USD_PER_HOUR = 19
    PRECISION = 20
    TOTAL_SECONDS_LOW = 21
    TOTAL_SECONDS_HIGH = 22
    COST_USD_LOW = 23
    COST_USD_HIGH = 24
    BASIS = 25


class EstBasis(enum.IntEnum):
    """What an estimate's range rests on (vt_est_basis); an Estimate gives its lower-case
    name ("calibrated", "extrapolated", "uncalibrated")."""
    CALIBRATED = 1
    EXTRAPOLATED = 2
    UNCALIBRATED = 3


class Pick(enum.IntEnum):
    """What Estimator.recommend() picks (vt_est_pick)."""
    BEST_BUY = 1
    FASTEST = 2
    CHEAPEST = 3
    WITHIN_LIMIT = 4


class EstPrecision(enum.IntEnum):
    """The precision a device runs in an estimate (vt_est_precision); an Estimate gives its
    lower-case name ("fp32", "tf32", "bf16", "fp16")."""
    FP32 = 0
    TF32 = 1
    BF16 = 2
    FP16 = 3


class RankBy(enum.IntEnum):
    """Orders of Estimator.rank() (vt_rank_by)."""
    COST = 1
    TIME = 2
    COST_WITHIN_DEADLINE = 3
    TIME_WITHIN_BUDGET = 4


_RANK_NAMES = {"cost": RankBy.COST, "cheapest": RankBy.COST,
               "time": RankBy.TIME, "fastest": RankBy.TIME,
               "cost_deadline": RankBy.COST_WITHIN_DEADLINE,
               "cost_within_deadline": RankBy.COST_WITHIN_DEADLINE,
               "time_budget": RankBy.TIME_WITHIN_BUDGET,
               "time_within_budget": RankBy.TIME_WITHIN_BUDGET}

_INT_RESULTS = frozenset([EstResult.STEPS_PER_EPOCH, EstResult.PEAK_MEMORY_BYTES,
                          EstResult.DEVICE_MEMORY_BYTES, EstResult.MAX_BATCH, EstResult.PARAMS])
_BOOL_RESULTS = frozenset([EstResult.FITS, EstResult.LOADER_BOUND, EstResult.MEETS_LIMIT])


def _result_value(r, v):
    if r == EstResult.PRECISION:
        return EstPrecision(int(v)).name.lower()
    if r == EstResult.BASIS:
        return EstBasis(int(v)).name.lower()
    if r in _BOOL_RESULTS:
        return v != 0
    if r in _INT_RESULTS and v == v and abs(v) < 2 ** 63:
        return int(round(v))
    return v


def _est_result(value):
    return _enum_arg(value, EstResult, {r.name.lower(): r for r in EstResult}, "estimator result")


def dataset_advice(train_images):
    """One line of advice for a training set of that many images (for printing beside an
    estimate)."""
    return _text(_native.lib().vt_estimate_dataset_advice(int(train_images)))


# ---- catalog -----------------------------------------------------------------------------------

_GPU_NUMERIC = (("memory_gb", GpuField.MEMORY_GB), ("bandwidth_gbs", GpuField.BANDWIDTH_GBS),
                ("fp32_tflops", GpuField.FP32_TFLOPS), ("tf32_tflops", GpuField.TF32_TFLOPS),
                ("bf16_tflops", GpuField.BF16_TFLOPS), ("price_usd_h", GpuField.PRICE_USD_H),
                ("tdp_w", GpuField.TDP_W), ("compute_capability", GpuField.COMPUTE_CAPABILITY))


class GPU(collections.namedtuple("GPU", ("index", "name", "arch", "tier")
                                 + tuple(n for n, _ in _GPU_NUMERIC))):
    """A catalog entry: index, name ("H100 SXM"), arch ("Hopper"), tier ("free" | "pro") and
    the numeric fields memory_gb, bandwidth_gbs, fp32_tflops, tf32_tflops, bf16_tflops,
    price_usd_h (USD per hour of one GPU), tdp_w, compute_capability (e.g. 9.0); a field the
    catalog does not list is None.  as_dict() gives a plain dict."""
    __slots__ = ()

    def as_dict(self):
        return dict(self._asdict())


class Catalog(_Closable):
    """A GPU catalog: the built-in GPUs with their specifications and hourly prices.

    Catalog() is a private copy (changing it affects nothing else); Estimator.catalog is the
    catalog an estimator ranks.  len(catalog), iteration (GPU entries), catalog[i] or
    catalog["H100 SXM"] (names match ignoring case, spaces, '-' and '_'), "H200" in catalog.
    """

    def __init__(self):
        lib = _native.lib()
        out = ctypes.c_void_p()
        _check(lib.vt_catalog_create(ctypes.byref(out)))
        self._lib = lib
        self._owner = None
        self._h = _Handle(out.value, lib.vt_catalog_destroy, "Catalog")

    @classmethod
    def _borrowed(cls, ptr, owner):
        """The catalog owned by an Estimator: closed when the estimator is, never destroyed."""
        self = cls.__new__(cls)
        self._lib = owner._lib
        self._owner = owner   # keeps the estimator (and so the catalog) alive
        self._h = _Handle(ptr, lambda p: None, "Catalog")
        self._h.borrow(owner._h)
        return self

    def _ptr(self):
        return self._h.get()

    def load_csv(self, path):
        """Merge a CSV file (header line naming the columns, "name" required; e.g.
        "name,price_usd_h" then "H100 SXM,2.10" overrides a price; new names add GPUs and need
        memory_gb, bandwidth_gbs and fp32_tflops).  All or nothing; FormatError "path:line:
        ..." for a bad file, NotFoundError / FileIOError when it cannot be read."""
        _check(self._lib.vt_catalog_load_csv(self._ptr(), _cpath(path)))
        return self

    def set_price(self, name, usd_per_hour):
        """Set one GPU's hourly price (USD, >= 0).  NotFoundError for an unknown name."""
        _check(self._lib.vt_catalog_set_price(self._ptr(), _cstr(name), float(usd_per_hour)))
        return self

    def __len__(self):
        return self._lib.vt_catalog_count(self._ptr())

    def index(self, name):
        """The index of a GPU by name; NotFoundError (listing the known names) when absent."""
        i = self._lib.vt_catalog_find(self._ptr(), _cstr(name))
        if i < 0:
            _check(Status.NOT_FOUND)
        return i

    def find(self, name):
        """The GPU entry of a name, or None when the catalog does not list it."""
        i = self._lib.vt_catalog_find(self._ptr(), _cstr(name))
        return self.gpu(i) if i >= 0 else None

    def __contains__(self, name):
        return isinstance(name, str) and \
            self._lib.vt_catalog_find(self._ptr(), _cstr(name)) >= 0

    def value(self, i, field):
        """A numeric field (GpuField or its lower-case name) of entry i, None when not listed."""
        if isinstance(field, str):
            field = _enum_arg(field, GpuField, {f.name.lower(): f for f in GpuField},
                              "GPU field")
        v = ctypes.c_double()
        st = self._lib.vt_catalog_gpu_value(self._ptr(), int(i), int(field), ctypes.byref(v))
        if st == Status.NOT_FOUND:
            return None
        _check(st)
        return v.value

    def gpu(self, i):
        """Entry i as a GPU."""
        p = self._ptr()
        n = self._lib.vt_catalog_count(p)
        if not isinstance(i, int):
            raise TypeError("catalog index must be an int or a name")
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("catalog index %d out of range 0..%d" % (i, n - 1))
        values = [self.value(i, f) for _, f in _GPU_NUMERIC]
        return GPU(i, _text(self._lib.vt_catalog_gpu_name(p, i)),
                   _text(self._lib.vt_catalog_gpu_arch(p, i)),
                   _text(self._lib.vt_catalog_gpu_tier(p, i)), *values)

    def __getitem__(self, key):
        if isinstance(key, str):
            i = self._lib.vt_catalog_find(self._ptr(), _cstr(key))
            if i < 0:
                raise KeyError(key)
            return self.gpu(i)
        return self.gpu(key)

    def __iter__(self):
        for i in range(len(self)):
            yield self.gpu(i)

    @property
    def names(self):
        p = self._ptr()
        return [_text(self._lib.vt_catalog_gpu_name(p, i))
                for i in range(self._lib.vt_catalog_count(p))]

    def __repr__(self):
        if self.closed:
            return "<visiontrain.Catalog (closed)>"
        return "<visiontrain.Catalog %d GPUs>" % len(self)


# ---- estimator ---------------------------------------------------------------------------------

class Estimate(dict):
    """Results of an estimate: a dict from result names (step_seconds, steps_per_epoch,
    train_seconds_per_epoch, val_seconds_per_epoch, epoch_seconds, total_seconds, cost_usd,
    peak_memory_bytes, device_memory_bytes, fits, max_batch, train_flops_per_image,
    forward_flops_per_image, params, compute_seconds_per_step, loader_seconds_per_step,
    loader_bound, meets_limit, usd_per_hour, precision: the one the GPU runs, "fp32" | "tf32" |
    "bf16" | "fp16", the asked one or the nearest it has; total_seconds_low/high and
    cost_usd_low/high, the uncertainty range; basis: "calibrated" | "extrapolated" |
    "uncalibrated", what the range rests on) to values; a result the estimator does not know
    (no price, unknown device memory) is absent.  Flags are bools, counts ints.  Keys are also
    attributes (est.total_seconds; None when absent).  Rankings add index, name, arch and tier
    of the GPU."""

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return self.get(name)

    @property
    def hours(self):
        t = self.get("total_seconds")
        return None if t is None else t / 3600.0

    def __repr__(self):
        return "Estimate(%s)" % dict.__repr__(self)


class Estimator(_Closable):
    """Estimates the time, cost and memory of a training run, on the local device or on every
    GPU of a catalog, before renting one.

        with vt.Estimator(model="cls-s", classes=10, train=20000, epochs=100, imgsz=224,
                          batch=64) as est:
            print(est.run(gpu="H100 SXM").total_seconds)
            for r in est.rank("cost")[:5]:
                print(r["name"], r["hours"], r.get("cost_usd"))

    Settings (keyword arguments here, in set() and in run()/rank()): model (an architecture
    name or a Model), dataset (a Dataset: its image counts), classes, train, val, epochs, batch,
    imgsz, precision, mosaic, val_each, workers, gpu, gpus, channels, load_ms, startup,
    deadline_h, budget_usd, local_price, optimizer, memory_fraction, link_gbs (see visiontrain.h).
    """

    def __init__(self, **settings):
        lib = _native.lib()
        out = ctypes.c_void_p()
        _check(lib.vt_estimator_create(ctypes.byref(out)))
        self._lib = lib
        self._h = _Handle(out.value, lib.vt_estimator_destroy, "Estimator")
        self._log_c = None
        self._log_fn = None
        self._pending = None
        self.set_log(None, "info")   # calibration diagnostics -> logging.getLogger("visiontrain")
        if settings:
            self.set(**settings)

    def _ptr(self):
        return self._h.get()

    # -- settings --

    def set(self, *key_values, **settings):
        """est.set(epochs=100, gpu="H100 SXM") or est.set("epochs=100").  ``model=`` may be a
        Model and ``dataset=`` a Dataset.  Every setting is tried; the good ones are set and
        the bad ones raise together: UnknownOptionError / OptionValueError (of the first bad
        one) whose message lists each ("3 bad settings: epochs=x: ...; batch=-3: ...")."""
        p = self._ptr()
        bad = []

        def attempt(fn, *args):
            try:
                fn(*args)
            except VisionTrainError as e:
                bad.append(e)

        for kv in key_values:
            attempt(lambda kv: _check(self._lib.vt_estimator_set(p, _cstr(kv))), kv)
        for key, value in settings.items():
            if key == "model" and isinstance(value, Model):
                attempt(self.set_model, value)
            elif key == "dataset":
                attempt(self.set_dataset, value)
            else:
                kv = "%s=%s" % (key, _format_value(value))
                attempt(lambda kv: _check(self._lib.vt_estimator_set(p, _cstr(kv))), kv)
        if len(bad) == 1:
            raise bad[0]
        if bad:
            first = bad[0]
            raise type(first)("%d bad settings: %s" % (len(bad), "; ".join(str(e) for e in bad)),
                              first.status, first.status_string)
        return self

    def set_model(self, model):
        """Take the architecture, class count and channels of a Model (None: back to the
        ``model`` setting)."""
        if model is not None and not isinstance(model, Model):
            raise TypeError("set_model() takes a visiontrain.Model or None")
        _check(self._lib.vt_estimator_set_model(self._ptr(),
                                                model._ptr() if model is not None else None))
        return self

    def set_dataset(self, dataset):
        """Take the train and val image counts of a Dataset."""
        if not isinstance(dataset, Dataset):
            raise TypeError("set_dataset() takes a visiontrain.Dataset")
        _check(self._lib.vt_estimator_set_dataset(self._ptr(), dataset._ptr()))
        return self

    @property
    def catalog(self):
        """The estimator's own Catalog (override prices or load a CSV into it)."""
        return Catalog._borrowed(self._lib.vt_estimator_catalog(self._ptr()), self)

    # -- estimates --

    def run(self, **settings):
        """Estimate the configured run on the configured GPU (setting ``gpu``: a catalog name,
        "local" (the calibrated device) or "cpu"); settings given here are applied first.
        Returns an Estimate.  NotFoundError for an unknown GPU name."""
        if settings:
            self.set(**settings)
        p = self._ptr()
        st = self._lib.vt_estimator_run(p)
        self._raise_pending()
        _check(st)
        return self._collect(lambda r, v: self._lib.vt_estimator_result(p, r, v))

    def result(self, name):
        """One result of the last run() (an EstResult or its lower-case name); None when it
        is not known (e.g. no price).  BadStateError before a run()."""
        v = ctypes.c_double()
        r = _est_result(name)
        st = self._lib.vt_estimator_result(self._ptr(), r, ctypes.byref(v))
        if st == Status.NOT_FOUND:
            return None
        _check(st)
        return _result_value(r, v.value)

    def rank(self, by="cost", limit=None, **settings):
        """Estimate the run on every catalog GPU and rank them, best first.  ``by``: "cost"
        (cheapest), "time" (fastest), "cost_deadline" (cheapest within the deadline_h
        setting), "time_budget" (fastest within budget_usd), or a RankBy.  GPUs where the run
        fits and meets the limit come first, then those missing the limit, then those where it
        does not fit; unpriced GPUs follow priced ones in a cost ranking.  Returns a list of
        Estimate (with index, name, arch and tier), at most ``limit`` of them."""
        by = _enum_arg(by, RankBy, _RANK_NAMES, "ranking")
        if settings:
            self.set(**settings)
        p = self._ptr()
        count = ctypes.c_int()
        n = self._lib.vt_catalog_count(self._lib.vt_estimator_catalog(p))
        while True:
            order = (ctypes.c_int * max(n, 1))()
            st = self._lib.vt_estimator_rank(p, by, order, n, ctypes.byref(count))
            self._raise_pending()
            if st == Status.BUFFER_TOO_SMALL:  # cannot happen with the catalog's own count
                n = count.value
                continue
            _check(st)
            break
        out = []
        cat = self.catalog
        try:
            for gpu in list(order)[:count.value]:
                e = self._collect(
                    lambda r, v, gpu=gpu: self._lib.vt_estimator_rank_result(p, gpu, r, v))
                info = cat.gpu(gpu)
                e.update(index=gpu, name=info.name, arch=info.arch, tier=info.tier)
                out.append(e)
                if limit is not None and len(out) >= limit:
                    break
        finally:
            cat.close()
        return out

    def recommend(self, by="cost", **settings):
        """Rank (as rank(by)) and pick: a dict with "best_buy" (least cost x time), "fastest",
        "cheapest" and, for a ranking within a deadline or budget, "within_limit" (the
        cheapest within the deadline_h / fastest within budget_usd), each an Estimate of the
        ranking or None when no GPU qualifies (the run fits none, no price, none meets the
        limit)."""
        ranked = {r["index"]: r for r in self.rank(by, **settings)}
        out = {}
        idx = ctypes.c_int()
        for pick in Pick:
            st = self._lib.vt_estimator_pick(self._ptr(), pick, ctypes.byref(idx))
            if st == Status.BAD_STATE and pick == Pick.WITHIN_LIMIT:
                continue   # no deadline or budget in this ranking
            if st == Status.NOT_FOUND:
                out[pick.name.lower()] = None
                continue
            _check(st)
            out[pick.name.lower()] = ranked.get(idx.value)
        return out

    def _collect(self, get):
        out = Estimate()
        v = ctypes.c_double()
        for r in EstResult:
            st = get(r, ctypes.byref(v))
            if st == 0:
                out[r.name.lower()] = _result_value(r, v.value)
            elif st != Status.NOT_FOUND:
                _check(st)
        return out

    # -- calibration --

    def calibrate(self, device="cpu", **options):
        """Measure a few real training steps of the configured model and image size on
        ``device`` ("cpu" or a CUDA index "0", 0, ...) and fit the cost model to them.
        Options: batches=(B1, B2[, B3]), seconds=S (budget, default 10), gpu=NAME (the
        catalog name of the local GPU), probe_max=0|1.  Blocks for up to about 1.5 x
        ``seconds`` (probes, a warm-up step per batch size, then ``seconds`` of steps).
        DeviceError when the device is missing."""
        if "gpu" in options and isinstance(options["gpu"], str):
            # names match ignoring spaces and '-': "H100 SXM" -> "H100-SXM" fits key=value
            options["gpu"] = "-".join(options["gpu"].split())
        st = self._lib.vt_estimator_calibrate(self._ptr(), _cstr(str(device)),
                                              _cstr(_kv_string(options)))
        self._raise_pending()
        _check(st)
        return self

    @property
    def is_calibrated(self):
        """True when a calibration was measured or loaded."""
        return bool(self._lib.vt_estimator_is_calibrated(self._ptr()))

    def save_calibration(self, path):
        """Save the calibration as a small text file (atomically)."""
        _check(self._lib.vt_estimator_save_calibration(self._ptr(), _cpath(path)))
        return os.fspath(path)

    def load_calibration(self, path):
        """Load a calibration saved by save_calibration(); FormatError "path:line: ..." for a
        corrupt or foreign file, NotFoundError for a missing one (the current one is kept)."""
        _check(self._lib.vt_estimator_load_calibration(self._ptr(), _cpath(path)))
        return self

    # -- logging --

    def set_log(self, fn=None, level="info"):
        """Route the estimator's log messages (calibration) to fn(level, message); with
        fn=None to logging.getLogger("visiontrain"); level=None turns them off.  An exception
        raised by fn is re-raised when the call that logged returns."""
        _install_log(self, self._lib.vt_estimator_set_log, fn, level)

    def _on_log_c(self, user, level, message):
        try:
            _deliver_log(self._log_fn, level, message)
        except BaseException as e:   # cannot propagate through C: re-raised after the call
            if self._pending is None:
                self._pending = e

    def _raise_pending(self):
        pending, self._pending = self._pending, None
        if pending is not None:
            raise pending

    def __repr__(self):
        if self.closed:
            return "<visiontrain.Estimator (closed)>"
        return "<visiontrain.Estimator%s>" % (" calibrated" if self.is_calibrated else "")
