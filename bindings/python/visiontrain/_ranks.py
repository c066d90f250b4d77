"""Model.train(device=[0, 1]): one process per GPU, as `vt train device=0,1` starts them
(launch_ranks in examples/vt/common.c).

This process saves the model, so that every rank starts from the same weights, then starts one
rank per GPU (`python -m visiontrain._ranks PAYLOAD`) with torchrun's variables: RANK,
WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT.  Each rank trains its shard
on the GPU at entry LOCAL_RANK of the list (the library's NCCL engine); rank 0 alone prints the
progress, writes the run folder and hands its best weights and metrics back here.
"""

import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from . import _core, _native
from ._core import Dataset, Status
from ._model import _DATASET_KEYS, Model
from .errors import OptionValueError, VisionTrainError, exception_for

# A process that an MPI launcher, torchrun or this module started is one rank already: it trains
# on its own entry of the list and starts none.
_WORLD_VARS = ("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE")
_GRACE_S = 30.0   # from SIGTERM (or a forwarded SIGINT) to SIGKILL, as `vt train`
_POLL_S = 0.2


def launches_ranks(device):
    """Whether train(device=...) starts ranks here: the device names several GPUs (a list, or a
    string with commas) and this process is not one rank already."""
    several = len(device) >= 2 if isinstance(device, (list, tuple)) else \
        isinstance(device, str) and "," in device
    return several and not any(v in os.environ for v in _WORLD_VARS)


def gpu_list(device):
    """[0, 1] or "0,1" -> [0, 1].  OptionValueError (a ValueError) unless each entry is a GPU
    index 0..63 (the library's range) and each GPU is named once: two ranks on one GPU would
    only fight over its memory."""
    entries = [str(d).strip() for d in device] if isinstance(device, (list, tuple)) else \
        [d.strip() for d in str(device).split(",")]
    text = ",".join(entries)
    gpus = []
    for e in entries:
        if not (e.isascii() and e.isdigit() and int(e) <= 63):
            raise OptionValueError("device=%s: %r is not a GPU index 0..63; a list names GPUs, "
                                   "one process (rank) on each (for several CPU ranks: mpirun "
                                   "-np N ... device=cpu)" % (text, e), Status.OPTION_VALUE)
        if int(e) in gpus:
            raise OptionValueError("device=%s: GPU %d is listed twice; give each GPU once (one "
                                   "rank per GPU)" % (text, int(e)), Status.OPTION_VALUE)
        gpus.append(int(e))
    return gpus


def train(model, data, verbose, options):
    """Model.train() when launches_ranks(): options are train()'s (epochs=, imgsz=, batch= among
    them).  Returns rank 0's metrics; the model then holds rank 0's best weights."""
    gpus = gpu_list(options["device"])
    options["device"] = ",".join(map(str, gpus))
    if model._new is not None:   # Model("det-n"): built from the data's classes, as train() does
        with Dataset(data, task=model.task,
                     **{k: options[k] for k in _DATASET_KEYS if k in options}) as ds:
            model._build(ds, options)
    tmp = tempfile.mkdtemp(prefix="visiontrain-ranks-")
    try:
        payload = dict(model=model.save(os.path.join(tmp, "start.vtm")), data=data,
                       options=options, verbose=bool(verbose),
                       result=os.path.join(tmp, "result.json"), parent=os.getpid())
        payload_path = os.path.join(tmp, "payload.json")
        _write_json(payload_path, payload)
        _run_ranks(payload_path, len(gpus), options["device"], verbose)
        try:
            with open(payload["result"]) as f:
                result = json.load(f)
        except FileNotFoundError:
            raise VisionTrainError("rank 0 ended without handing back its weights and metrics")
        model._adopt(_core.Model.load(result["model"]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    model.run_dir = result["run_dir"]
    model.metrics = result["metrics"]
    model._data = data
    return model.metrics


def _run_ranks(payload_path, n, device, verbose):
    """Start the n ranks and wait for them all; raise the first failure's error."""
    port = _free_port()
    _say(verbose, logging.INFO, "visiontrain: %d ranks, one per GPU (device=%s), rendezvous "
         "127.0.0.1:%d" % (n, device, port))
    # VT_TEST_RANKS_EXEC=PATH, for tests only (tests/python/test_ranks.py), runs [PATH, payload]
    # as the ranks instead of this module, so that a rank can stand in, or fail on cue, on a
    # machine without GPUs.
    exe = os.environ.get("VT_TEST_RANKS_EXEC")
    cmd = [exe] if exe else [sys.executable, "-m", "visiontrain._ranks"]
    env = dict(os.environ, WORLD_SIZE=str(n), LOCAL_WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(port))
    # the ranks import this same package and load this same library
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    if _native.library_path() and os.sep in _native.library_path():
        env["VT_LIBRARY"] = _native.library_path()
    sys.stdout.flush()
    sys.stderr.flush()
    procs = []
    # SIGTERM and SIGHUP to this process reach the ranks too, as with `vt train`: the ranks
    # stop, then this process ends as the signal would have ended it
    forwarded = {}
    if threading.current_thread() is threading.main_thread():
        def forward(signum, frame):
            raise _Stopped(signum)
        for sig in (signal.SIGTERM, signal.SIGHUP):
            forwarded[sig] = signal.signal(sig, forward)
    try:
        for rank in range(n):
            env.update(RANK=str(rank), LOCAL_RANK=str(rank))
            # A session of its own: a Ctrl-C at the terminal reaches a rank once, forwarded from
            # here, not twice (a second would cut its clean stop short); and a signal to its
            # group reaches any children of it too.
            procs.append(subprocess.Popen(cmd + [payload_path], env=env,
                                          start_new_session=True))
        failed = _wait(procs, verbose)
    except KeyboardInterrupt:
        # the ranks stop on their own after the current batch; SIGKILL if they do not
        _signal(procs, signal.SIGINT)
        _reap(procs, time.monotonic() + _GRACE_S)
        raise
    except _Stopped as stop:
        _signal(procs, signal.SIGTERM)
        _reap(procs, time.monotonic() + _GRACE_S)
        for sig, old in forwarded.items():
            signal.signal(sig, old)
        forwarded = {}
        os.kill(os.getpid(), stop.signum)   # the signal's own outcome (by default: the end)
        raise VisionTrainError("the ranks were stopped by signal %d" % stop.signum)
    finally:
        for sig, old in forwarded.items():
            signal.signal(sig, old)
        _signal(procs, signal.SIGKILL)   # none left running or unreaped, whatever happened
        for p in procs:
            p.wait()
    if failed is not None:
        rank, code = failed
        why = _why(code)
        err = _read_error(os.path.dirname(payload_path), rank)
        if err is not None:
            raise exception_for(err.get("status"))("rank %d failed (%s): %s" % (
                rank, why, err.get("message")), err.get("status"), err.get("status_string"))
        raise VisionTrainError("rank %d failed (%s); its own message is above" % (rank, why))


class _Stopped(BaseException):
    """SIGTERM or SIGHUP while the ranks run (raised by the handler _run_ranks installs)."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def _wait(procs, verbose):
    """Wait for every rank; returns (rank, exit code) of the first to fail, or None.  A failed
    rank leaves the others waiting for it in their next all-reduce: they get SIGTERM, and
    SIGKILL if still running 30 s later."""
    failed, kill_at = None, None
    while True:
        codes = [p.poll() for p in procs]
        running = [p for p in procs if p.returncode is None]
        if failed is None:
            failed = next(((r, c) for r, c in enumerate(codes) if c), None)
            if failed is not None:
                _say(verbose, logging.ERROR, "visiontrain: rank %d failed (%s)%s" % (
                    failed[0], _why(failed[1]), "; stopped the other ranks" if running else ""))
                _signal(running, signal.SIGTERM)
                kill_at = time.monotonic() + _GRACE_S
        if not running:
            return failed
        if kill_at is not None and time.monotonic() >= kill_at:
            _say(verbose, logging.ERROR, "visiontrain: %d rank(s) still running 30 s after "
                 "SIGTERM: killed" % len(running))
            _signal(running, signal.SIGKILL)
            kill_at = None
        time.sleep(_POLL_S)


def _reap(procs, deadline):
    while any(p.poll() is None for p in procs):
        if time.monotonic() >= deadline:
            _signal(procs, signal.SIGKILL)
            deadline = float("inf")
        time.sleep(_POLL_S)


def _signal(procs, sig):
    """Signal each unreaped rank's process group (the rank and any children of it)."""
    for p in procs:
        if p.returncode is None:
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                pass


def _why(code):
    return "killed by signal %d" % -code if code < 0 else "exit code %d" % code


def _say(verbose, level, line):
    """The launcher's lines: to stderr, as `vt train`; verbose=False: to the "visiontrain"
    logger, like train()'s other lines."""
    if verbose:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    else:
        logging.getLogger("visiontrain").log(level, "%s", line)


def _free_port():
    """A TCP port free on 127.0.0.1 now, for the rendezvous.  Another program may take it
    before rank 0 listens on it: rare, and rank 0 then fails and says so."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _write_json(path, value):
    """Write atomically: the reader sees the whole file or none."""
    part = path + ".part"
    with open(part, "w") as f:
        json.dump(value, f, default=lambda v: os.fspath(v) if isinstance(v, os.PathLike)
                  else str(v))
    os.replace(part, path)


def _error_path(folder, rank):
    return os.path.join(folder, "rank%d.error.json" % rank)


def _read_error(folder, rank):
    """What a rank that failed with a VisionTrainError left: its status and message."""
    try:
        with open(_error_path(folder, rank)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


# ---- one rank: python -m visiontrain._ranks PAYLOAD ---------------------------------------------

def _watch_parent(parent):
    """End this rank when the process that started it is gone (killed outright, it could not
    stop the ranks), as the ranks of `vt train` do (PR_SET_PDEATHSIG)."""
    def watch():
        while os.getppid() == parent:
            time.sleep(1)
        os.kill(os.getpid(), signal.SIGKILL)
    threading.Thread(target=watch, name="visiontrain-parent-watch", daemon=True).start()


def main(payload_path):
    """Train this rank (RANK) as the payload says; rank 0 hands back its best weights, run
    folder and metrics.  Returns the exit code: 0, 1 after a VisionTrainError (its message on
    stderr and in a file for the launcher), 130 after Ctrl-C."""
    with open(payload_path) as f:
        payload = json.load(f)
    rank = int(os.environ.get("RANK", "0"))
    _watch_parent(payload["parent"])
    folder = os.path.dirname(payload["result"])
    try:
        model = Model(payload["model"])
        metrics = model.train(payload["data"], verbose=payload["verbose"] and rank == 0,
                              **payload["options"])
        if rank == 0:   # train() left the model holding the best epoch's weights
            best = model.save(os.path.join(folder, "best.vtm"))
            _write_json(payload["result"], dict(run_dir=model.run_dir, metrics=metrics,
                                                model=best))
    except VisionTrainError as e:
        sys.stderr.write("visiontrain: rank %d: %s\n" % (rank, e))
        status = int(e.status) if e.status is not None else None
        _write_json(_error_path(folder, rank), dict(status=status, message=str(e),
                                                     status_string=e.status_string))
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
