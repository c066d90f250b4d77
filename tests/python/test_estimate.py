"""Tests of the Python bindings of the GPU catalog, the estimator and the device listing.

Run from the repository root (see test_bindings.py for how the library is found):
    VT_LIBRARY=build/libvisiontrain.so.0 python3 -m unittest discover -s tests/python -v
"""

import math
import os
import shutil
import sys
import tempfile
import unittest

from vt_test_env import ROOT  # noqa: E402,F401  (sets up the import paths first)

import visiontrain as vt  # noqa: E402

# A small run; counts chosen so that steps per epoch are known exactly.
RUN = dict(classes=10, train=1000, val=200, epochs=5, imgsz=64, batch=32)


def setUpModule():
    global TMP
    TMP = tempfile.mkdtemp(prefix="vt-pytest-est-")


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


def write(name, text):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(text)
    return path


class TestCatalog(unittest.TestCase):
    def test_listing(self):
        with vt.Catalog() as cat:
            gpus = list(cat)
            self.assertGreaterEqual(len(cat), 24)
            self.assertEqual(len(gpus), len(cat))
            names = [g.name for g in gpus]
            self.assertEqual(names, cat.names)
            self.assertEqual(len(set(names)), len(names))
            self.assertTrue(any(n.startswith("H200") for n in names), names)
            for i, g in enumerate(gpus):
                self.assertEqual(g.index, i)
                self.assertTrue(g.name and g.arch)
                self.assertIn(g.tier, ("free", "pro"))
                for field in ("memory_gb", "bandwidth_gbs", "fp32_tflops"):
                    self.assertGreater(getattr(g, field), 0, (g.name, field))
                d = g.as_dict()
                self.assertEqual(d["name"], g.name)
                self.assertIn("price_usd_h", d)
            h100 = cat.find("h100-sxm")      # case, spaces, '-' and '_' ignored
            self.assertIsNotNone(h100)
            self.assertEqual(h100.name, "H100 SXM")
            self.assertEqual(h100.arch, "Hopper")
            self.assertAlmostEqual(h100.compute_capability, 9.0)
            self.assertGreater(h100.price_usd_h, 0)
            self.assertEqual(cat["H100_SXM"], h100)
            self.assertEqual(cat[h100.index], h100)
            self.assertEqual(cat.value(h100.index, "memory_gb"), h100.memory_gb)
            self.assertIn("H100 SXM", cat)
            self.assertNotIn("No Such GPU", cat)
            self.assertIsNone(cat.find("No Such GPU"))
            with self.assertRaises(KeyError):
                cat["No Such GPU"]
            with self.assertRaises(IndexError):
                cat[len(cat)]
            with self.assertRaises(vt.NotFoundError) as cm:
                cat.index("No Such GPU")
            self.assertIn("H100 SXM", str(cm.exception))   # the message lists the catalog

    def test_set_price_and_csv(self):
        with vt.Catalog() as cat:
            n = len(cat)
            cat.set_price("H100 SXM", 1.25)
            self.assertAlmostEqual(cat["H100 SXM"].price_usd_h, 1.25)
            with self.assertRaises(vt.NotFoundError):
                cat.set_price("No Such GPU", 1.0)
            with self.assertRaises(vt.OptionValueError):
                cat.set_price("H100 SXM", -1.0)
            csv = write("prices.csv", "# my prices\n\nname,price_usd_h\nH100-SXM,2.10\n"
                        "\"L4\",0.31\n"
                        "")
            cat.load_csv(csv)
            self.assertAlmostEqual(cat["H100 SXM"].price_usd_h, 2.10)
            self.assertAlmostEqual(cat["L4"].price_usd_h, 0.31)
            self.assertEqual(len(cat), n)
            new = write("new.csv", "name,arch,memory_gb,bandwidth_gbs,fp32_tflops,price_usd_h\n"
                        "My GPU,Hopper,96,4000,60,3.5\n")
            cat.load_csv(new)
            self.assertEqual(len(cat), n + 1)
            mine = cat["my gpu"]
            self.assertEqual(mine.arch, "Hopper")
            self.assertEqual(mine.memory_gb, 96)
            self.assertIsNone(mine.tdp_w)
            bad = write("bad.csv", "name,price_usd_h\nH100 SXM,cheap\n")
            with self.assertRaises(vt.FormatError) as cm:
                cat.load_csv(bad)
            self.assertIn("bad.csv:2", str(cm.exception))
            self.assertAlmostEqual(cat["H100 SXM"].price_usd_h, 2.10)   # all or nothing
            with self.assertRaises(vt.NotFoundError):
                cat.load_csv(os.path.join(TMP, "missing.csv"))
        with vt.Catalog() as fresh:      # a private copy: the change above is not seen here
            self.assertNotAlmostEqual(fresh["H100 SXM"].price_usd_h, 2.10)


class TestEstimator(unittest.TestCase):
    def test_run_cls_n_and_cls_s(self):
        results = {}
        for arch in ("cls-n", "cls-s"):
            with vt.Estimator(model=arch, gpu="H100 SXM", **RUN) as est:
                r = est.run()
                results[arch] = r
                self.assertIsInstance(r, dict)
                for key in ("step_seconds", "train_seconds_per_epoch", "epoch_seconds",
                            "total_seconds", "cost_usd", "usd_per_hour", "peak_memory_bytes",
                            "device_memory_bytes", "train_flops_per_image", "params"):
                    self.assertGreater(r[key], 0, key)
                    self.assertTrue(math.isfinite(r[key]), key)
                self.assertEqual(r.steps_per_epoch, math.ceil(RUN["train"] / RUN["batch"]))
                self.assertGreater(r.val_seconds_per_epoch, 0)
                self.assertIs(r.fits, True)
                self.assertGreaterEqual(r.max_batch, RUN["batch"])
                self.assertLess(r.peak_memory_bytes, r.device_memory_bytes)
                self.assertAlmostEqual(r.hours, r.total_seconds / 3600)
                self.assertAlmostEqual(r.cost_usd, r.hours * r.usd_per_hour, places=6)
                self.assertGreaterEqual(r.total_seconds, RUN["epochs"] * r.epoch_seconds)
                self.assertEqual(est.result("fits"), True)
                self.assertAlmostEqual(est.result(vt.EstResult.TOTAL_SECONDS), r.total_seconds)
        with vt.Estimator(model="cls-s", gpu="T4", **dict(RUN, imgsz=1024, batch=100000)) as est:
            big = est.run()
            self.assertIs(big.fits, False)
            self.assertLess(big.max_batch, 100000)
            self.assertGreater(big.peak_memory_bytes, big.device_memory_bytes)
        self.assertGreater(results["cls-s"].params, results["cls-n"].params)
        self.assertGreater(results["cls-s"].train_flops_per_image,
                           results["cls-n"].train_flops_per_image)

    def test_unpriced_and_local(self):
        with vt.Estimator(model="cls-n", **RUN) as est:
            est.catalog.load_csv(write("unpriced.csv", "name,memory_gb,bandwidth_gbs,fp32_tflops"
                                       "\nNo Price GPU,24,900,30\n"))
            r = est.run(gpu="No Price GPU")
            self.assertNotIn("cost_usd", r)           # NOT_FOUND results are left out
            self.assertIsNone(r.cost_usd)
            self.assertIsNone(est.result("cost_usd"))
            self.assertGreater(r.total_seconds, 0)
            cpu = est.run(gpu="cpu")
            self.assertGreater(cpu.total_seconds, 0)

    def test_model_and_dataset(self):
        data = vt.synth_generate(os.path.join(TMP, "synth"), classes=3, train=5, val=2,
                                 imgsz=16)
        with vt.Model("cls-s", 3, imgsz=64) as m, vt.Dataset(data) as ds:
            with vt.Estimator(gpu="L4", batch=4, epochs=2, imgsz=64) as est:
                est.set_model(m)
                est.set_dataset(ds)
                r = est.run()
                self.assertEqual(r.params, m.num_params)
                self.assertEqual(r.steps_per_epoch, math.ceil(15 / 4))
                est.set_model(None)                   # back to the "model" setting (cls-n)
                self.assertLess(est.run().params, m.num_params)
                with vt.Estimator(model=m, dataset=ds, gpu="L4", batch=4, imgsz=64) as e2:
                    self.assertEqual(e2.run().params, m.num_params)

    def test_rank(self):
        with vt.Estimator(model="cls-n", **RUN) as est:
            n = len(est.catalog)
            ranked = est.rank("cost")
            self.assertEqual(len(ranked), n)
            self.assertEqual(sorted(r["index"] for r in ranked), list(range(n)))
            for r in ranked:
                self.assertTrue(r["name"])
                self.assertGreater(r["total_seconds"], 0)
            priced = [r for r in ranked if r.fits and "cost_usd" in r]
            self.assertTrue(priced)
            costs = [r.cost_usd for r in priced]
            self.assertEqual(costs, sorted(costs))
            # priced GPUs where the run fits come first
            self.assertEqual([r.name for r in ranked[:len(priced)]], [r.name for r in priced])
            self.assertEqual(len(est.rank(vt.RankBy.COST, limit=3)), 3)

            by_time = est.rank("time")
            fitting = [r.total_seconds for r in by_time if r.fits]
            self.assertEqual(fitting, sorted(fitting))

            # a cheaper price moves a GPU to the top of the cost ranking
            est.catalog.set_price(priced[-1].name, 0.0001)
            top = est.rank("cost")[0]
            self.assertEqual(top.name, priced[-1].name)
            self.assertAlmostEqual(top.usd_per_hour, 0.0001)

            est.set(deadline_h=1e-6)                  # no GPU can make it
            within = est.rank("cost_deadline")
            self.assertFalse(any(r.meets_limit for r in within))
            est.set(deadline_h=0, budget_usd=1000)
            within = est.rank("time_budget")
            self.assertTrue(within[0].meets_limit)
            with self.assertRaises(ValueError):
                est.rank("cheapest-ever")

    def test_precision_range_recommend(self):
        with vt.Estimator(model="det-s", train=1000, epochs=100, imgsz=640, batch=16) as est:
            t4 = est.run(gpu="T4")
            self.assertEqual(t4.precision, "fp32")        # no TF32 on a T4
            self.assertEqual(est.run(gpu="T4", precision="bf16").precision, "fp16")
            h200 = est.run(gpu="H200", precision="tf32")  # an abbreviation: H200 SXM
            self.assertEqual(h200.precision, "tf32")
            self.assertEqual(h200.basis, "uncalibrated")
            self.assertLess(h200.total_seconds_low, h200.total_seconds)
            self.assertGreater(h200.cost_usd_high, h200.cost_usd)
            rec = est.recommend("cost")
            self.assertEqual(set(rec), {"best_buy", "fastest", "cheapest"})
            fastest = min(r.total_seconds for r in est.rank("time") if r.fits)
            self.assertEqual(rec["fastest"].total_seconds, fastest)
            est.set(budget_usd=0.0001)
            rec = est.recommend("time_budget")
            self.assertIsNone(rec["within_limit"])        # nothing fits the budget
            self.assertIsNotNone(rec["cheapest"])
            est.set(budget_usd=1000)
            self.assertIsNotNone(est.recommend("time_budget")["within_limit"])

    def test_errors(self):
        with vt.Estimator() as est:
            with self.assertRaises(vt.BadStateError):
                est.result("total_seconds")
            with self.assertRaises(vt.UnknownOptionError) as cm:
                est.set(no_such_setting=1)
            self.assertIn("no_such_setting", str(cm.exception))
            with self.assertRaises(vt.OptionValueError):
                est.set(epochs=0)
            with self.assertRaises(vt.OptionValueError):
                est.set("precision=fp8")
            # every bad setting of one call is reported, the good ones are set
            with self.assertRaises(vt.OptionValueError) as cm:
                est.set(epochs="x", batch=-3, imgsz=7, train=50)
            for part in ("3 bad settings", "epochs=x", "batch=-3", "imgsz=7"):
                self.assertIn(part, str(cm.exception))
            self.assertEqual(cm.exception.status, vt.Status.OPTION_VALUE)
            with self.assertRaises(vt.NotFoundError) as cm:
                est.run(gpu="No Such GPU")
            self.assertIn("H100 SXM", str(cm.exception))
            with self.assertRaises(vt.NotFoundError):
                est.load_calibration(os.path.join(TMP, "missing.cal"))
            with self.assertRaises(vt.FormatError):
                est.load_calibration(write("garbage.cal", "not a calibration\n"))
            with self.assertRaises(vt.UnknownOptionError):
                est.calibrate("cpu", seconds=0.1, no_such_option=1)
            with self.assertRaises(vt.VisionTrainError):
                est.calibrate("bogus-device", seconds=0.1)
            self.assertFalse(est.is_calibrated)
        self.assertTrue(est.closed)
        with self.assertRaises(vt.BadStateError):
            est.run()

    def test_catalog_lifetime(self):
        est = vt.Estimator()
        cat = est.catalog
        self.assertGreaterEqual(len(cat), 24)
        est.close()                                   # the estimator owns its catalog
        self.assertTrue(cat.closed)
        with self.assertRaises(vt.BadStateError):
            len(cat)
        est2 = vt.Estimator()
        cat2 = est2.catalog
        del est2                                      # kept alive by its catalog
        self.assertGreaterEqual(len(cat2), 24)
        cat2.close()

    def test_calibrate_save_load(self):
        logs = []
        with vt.Estimator(model="cls-n", classes=4, imgsz=32, batch=8, train=200,
                          epochs=3) as est:
            est.set_log(lambda level, msg: logs.append((level, msg)), "debug")
            self.assertFalse(est.is_calibrated)
            est.calibrate("cpu", seconds=0.1, batches=(2, 4))
            self.assertTrue(est.is_calibrated)
            local = est.run(gpu="local")
            self.assertGreater(local.total_seconds, 0)
            self.assertGreater(local.step_seconds, 0)
            path = est.save_calibration(os.path.join(TMP, "cpu.cal"))
            self.assertTrue(os.path.isfile(path))
        self.assertTrue(logs)
        with vt.Estimator(model="cls-n", classes=4, imgsz=32, batch=8, train=200,
                          epochs=3) as est2:
            est2.load_calibration(path)
            self.assertTrue(est2.is_calibrated)
            again = est2.run(gpu="local")
            self.assertAlmostEqual(again.total_seconds, local.total_seconds,
                                   delta=1e-6 * local.total_seconds)


    def test_calibrate_detector_and_segmenter(self):
        # their steps take boxes and masks: calibration makes them up
        for model in ("det-n", "seg-n"):
            with vt.Estimator(model=model, classes=3, imgsz=64, batch=4, train=100,
                              epochs=2) as est:
                est.calibrate("cpu", seconds=0.2, batches=(2, 4))
                self.assertTrue(est.is_calibrated, model)
                self.assertGreater(est.run(gpu="local").step_seconds, 0, model)


class TestDevicesAndAdvice(unittest.TestCase):
    def test_devices(self):
        devs = vt.devices()
        self.assertIsInstance(devs, list)
        self.assertEqual(len(devs), vt.device_count())
        for i, d in enumerate(devs):
            self.assertEqual(d["index"], i)
            self.assertTrue(d["name"])
            self.assertGreater(d["total_bytes"], 0)
            self.assertLessEqual(d["free_bytes"], d["total_bytes"])
            self.assertEqual(len(d["compute_capability"]), 2)

    def test_no_gpu_reason(self):
        reason = vt.no_gpu_reason()
        if vt.device_count() > 0:
            self.assertIsNone(reason)
        else:
            # the library's own wording of why (no CUDA build, no module, no driver, ...)
            self.assertIsInstance(reason, str)
            self.assertIn("CUDA", reason)

    def test_dataset_advice(self):
        texts = [vt.dataset_advice(n) for n in (500, 5000, 50000)]
        for t in texts:
            self.assertIsInstance(t, str)
            self.assertTrue(t)
        self.assertEqual(len(set(texts)), 3)


if __name__ == "__main__":
    unittest.main()
