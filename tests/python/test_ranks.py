"""Model.train(device=[0, 1]): one rank per GPU (visiontrain/_ranks.py).  On a machine without
GPUs the ranks are stand-ins (VT_TEST_RANKS_EXEC, a script written here) that record what they
were given, hand back a result as rank 0 does, or fail on cue; the real ranks are run once, to
fail for want of a GPU.  Run as test_bindings.py is."""

import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import time
import unittest

from vt_test_env import ROOT  # noqa: E402,F401  (sets up the import paths first)

import visiontrain as vt  # noqa: E402

RANK_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
             "MASTER_PORT")

# A stand-in rank: records its variables, payload and pid in OUT/rank<R>.json, then as MODE
# says: "result": rank 0 hands back the start model and metrics {"fake": 1.0} as a real rank 0
# hands back its result; "fail": rank 1 exits 3 once rank 0 sleeps (300 s).
STAND_IN = r'''#!%(python)s
import json, os, shutil, sys, time
OUT, MODE, VARS = %(out)r, %(mode)r, %(vars)r
rank = int(os.environ["RANK"])


def write_json(path, value):
    with open(path + ".part", "w") as f:
        json.dump(value, f)
    os.replace(path + ".part", path)


with open(sys.argv[1]) as f:
    payload = json.load(f)
write_json(os.path.join(OUT, "rank%%d.json" %% rank),
           dict(env={k: os.environ.get(k) for k in VARS}, payload=payload, pid=os.getpid()))
if MODE == "fail":
    if rank == 1:
        while not os.path.exists(os.path.join(OUT, "rank0.json")):
            time.sleep(0.02)
        sys.exit(3)
    time.sleep(300)
elif rank == 0:
    model = payload["result"] + ".vtm"
    shutil.copy(payload["model"], model)
    write_json(payload["result"], dict(run_dir="", metrics={"fake": 1.0}, model=model))
'''


def setUpModule():
    global TMP, DATA
    TMP = tempfile.mkdtemp(prefix="vt-pyranks-")
    DATA = vt.synth_generate(os.path.join(TMP, "cls"), classes=2, train=4, val=2, imgsz=32)


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


@contextlib.contextmanager
def environ(**values):
    """Set (a str) or unset (None) environment variables for the block."""
    saved = {k: os.environ.get(k) for k in values}
    try:
        for k, v in values.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def children():
    """The pids whose parent is this process (Linux /proc): none may be left behind."""
    out = []
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % pid) as f:
                stat = f.read()
        except (OSError, ValueError):
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid():
            out.append(int(pid))
    return out


class RanksTest(unittest.TestCase):

    def setUp(self):
        self.out = tempfile.mkdtemp(dir=TMP)
        # no rank variables of an outer launcher; the stand-ins are set per test
        self.env = environ(**{k: None for k in RANK_VARS + ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                                          "PMIX_SIZE", "VT_TEST_RANKS_EXEC")})
        self.env.__enter__()

    def tearDown(self):
        self.env.__exit__(None, None, None)

    def stand_in(self, mode):
        path = os.path.join(self.out, "rank.py")
        with open(path, "w") as f:
            f.write(STAND_IN % dict(python=sys.executable, out=self.out, mode=mode,
                                    vars=RANK_VARS))
        os.chmod(path, 0o755)
        os.environ["VT_TEST_RANKS_EXEC"] = path

    def record(self, rank):
        with open(os.path.join(self.out, "rank%d.json" % rank)) as f:
            return json.load(f)

    def test_bad_device_list(self):
        self.stand_in("result")   # a start would leave its record
        for device in ([0, 0], ["cpu", 0], "0,64", "1,,2"):
            model = vt.Model("cls-n")
            with self.assertRaises(ValueError) as cm:
                model.train(data=DATA, epochs=1, imgsz=32, device=device, verbose=False)
            self.assertIn("device=", str(cm.exception))
            self.assertEqual(os.listdir(self.out), ["rank.py"])   # no rank started
        self.assertIn("listed twice", self.check_message([0, 0]))
        self.assertIn("'cpu' is not a GPU index", self.check_message(["cpu", 0]))

    def check_message(self, device):
        with self.assertRaises(vt.OptionValueError) as cm:
            vt.Model("cls-n").train(data=DATA, device=device, verbose=False)
        return str(cm.exception)

    def test_stand_in_ranks(self):
        self.stand_in("result")
        model = vt.Model("cls-n")   # built here from the data, saved, and handed to the ranks
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            metrics = model.train(data=DATA, epochs=1, imgsz=32, device=[0, 1], workers=1)
        self.assertEqual(metrics, {"fake": 1.0})
        self.assertEqual(model.metrics, {"fake": 1.0})
        self.assertEqual(model.run_dir, "")
        ranks = [self.record(r) for r in (0, 1)]
        port = ranks[0]["env"]["MASTER_PORT"]
        self.assertIn("visiontrain: 2 ranks, one per GPU (device=0,1), rendezvous "
                      "127.0.0.1:%s\n" % port, err.getvalue())
        for r, rec in enumerate(ranks):
            self.assertEqual(rec["env"], dict(RANK=str(r), WORLD_SIZE="2", LOCAL_RANK=str(r),
                                              LOCAL_WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                                              MASTER_PORT=port))
            payload = rec["payload"]
            self.assertEqual(payload["options"],
                             dict(epochs=1, imgsz=32, device="0,1", workers=1))
            self.assertEqual(payload["data"], DATA)
            self.assertIs(payload["verbose"], True)
        self.assertGreater(int(port), 0)
        # the temporary folder (start model, payload, result) is gone
        self.assertFalse(os.path.exists(os.path.dirname(ranks[0]["payload"]["result"])))
        # the model is the one built here, adopted back: the data's classes, and it predicts
        self.assertEqual(len(model.names), 2)
        folder = os.path.join(DATA, "val", sorted(os.listdir(os.path.join(DATA, "val")))[0])
        image = os.path.join(folder, sorted(os.listdir(folder))[0])
        results = model.predict(image, verbose=False)
        self.assertEqual(len(results), 1)
        self.assertEqual(len(results[0].probs.data), 2)
        self.assertEqual(children(), [])

    def test_failed_rank_stops_the_others(self):
        self.stand_in("fail")
        t0 = time.monotonic()
        with self.assertLogs("visiontrain", "INFO") as logs, \
                self.assertRaises(vt.VisionTrainError) as cm:
            vt.Model("cls-n").train(data=DATA, epochs=1, imgsz=32, device="0,1", verbose=False)
        self.assertLess(time.monotonic() - t0, 35)
        self.assertIn("rank 1 failed (exit code 3)", str(cm.exception))
        self.assertIn("visiontrain: rank 1 failed (exit code 3); stopped the other ranks",
                      "\n".join(logs.output))
        with self.assertRaises(ProcessLookupError):   # rank 0 was asleep: stopped and reaped
            os.kill(self.record(0)["pid"], 0)
        self.assertEqual(children(), [])

    def test_ranks_without_gpus(self):
        if vt.device_count() >= 2:
            self.skipTest("%d GPUs: the ranks would train" % vt.device_count())
        # the real ranks (python -m visiontrain._ranks) fail for want of GPUs, and say why
        with self.assertLogs("visiontrain", "INFO"), \
                self.assertRaises(vt.VisionTrainError) as cm:
            vt.Model("cls-n").train(data=DATA, epochs=1, imgsz=32, device=[0, 1],
                                    project=os.path.join(self.out, "runs"), verbose=False)
        self.assertRegex(str(cm.exception), r"^rank [01] failed \(exit code 1\)")
        self.assertEqual(children(), [])

    def test_already_a_rank(self):
        # WORLD_SIZE set: this process is a rank already, so it starts none and the library
        # refuses a GPU list for one process
        self.stand_in("result")
        with environ(WORLD_SIZE="1"), self.assertRaises(vt.OptionValueError) as cm:
            vt.Model("cls-n").train(data=DATA, epochs=1, imgsz=32, device=[0, 1],
                                    project=os.path.join(self.out, "runs"), verbose=False)
        self.assertIn("trains alone", str(cm.exception))
        self.assertEqual(os.listdir(self.out), ["rank.py"])


if __name__ == "__main__":
    unittest.main()
