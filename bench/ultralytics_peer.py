#!/usr/bin/env python3
"""The peer side of bench/det_vs_ultralytics.sh: train an Ultralytics model from its YAML (from
scratch, no weights fetched) on a data.yaml and print one JSON line with its parameter count,
final validation metrics, training wall time and img/s.

Run inside the peer venv (/work/shared/tools/peer-ultralytics.sh, then `. DIR/env.sh`):

  python bench/ultralytics_peer.py --data DIR/data.yaml --task detect --model yolo26n.yaml \
      --epochs 12 --imgsz 128 --batch 16 --threads 2 --project DIR/runs

Give it a copy of the dataset: Ultralytics writes labels/*.cache next to the labels.
"""
import argparse
import csv
import json
import os
import resource
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--task", default="detect", choices=["detect", "semantic", "segment"],
                    help="segment: Ultralytics' instance segmentation (yolov8n-seg.yaml)")
    ap.add_argument("--model", default="yolo26n.yaml")
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--imgsz", type=int, default=128)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--optimizer", default="AdamW")
    ap.add_argument("--lr0", type=float, default=0.002)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--project", required=True)
    ap.add_argument("--weights", help="a .pt to start from (its matching tensors: Ultralytics' "
                    "transfer, the head rebuilt for the data's classes) instead of the YAML's "
                    "random initialisation")
    a = ap.parse_args()

    if os.environ.get("YOLO_OFFLINE") != "1":
        sys.exit("ultralytics_peer.py: source the peer's env.sh first (YOLO_OFFLINE=1, local font)")
    import torch
    import ultralytics
    import ultralytics.utils.torch_utils as tu
    from ultralytics import YOLO

    # On a CPU, select_device() calls torch.set_num_threads(NUM_THREADS), and NUM_THREADS is
    # min(8, cpu_count - 1): one thread on 2 cores.  Set the module global it reads, so every
    # select_device() (the trainer's, the final validator's) keeps our count.
    tu.NUM_THREADS = a.threads
    torch.set_num_threads(a.threads)

    # a YAML: random initialisation, nothing downloaded; a .pt: the trainer rebuilds the model
    # for the data's classes and loads every tensor of matching name and shape into it
    # ("Transferred K/N items from pretrained weights"), as its users fine-tune
    model = YOLO(a.weights, task=a.task) if a.weights else YOLO(a.model, task=a.task)
    def cpu_s():  # user + system seconds of every thread of this process
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    c0, t0 = cpu_s(), time.perf_counter()
    model.train(data=a.data, epochs=a.epochs, imgsz=a.imgsz, batch=a.batch, device="cpu",
                workers=0,  # what the trainer forces on a CPU anyway (engine/trainer.py)
                optimizer=a.optimizer, lr0=a.lr0, seed=a.seed, deterministic=False,
                pretrained=bool(a.weights), amp=False, plots=False, project=a.project, name="train",
                exist_ok=True, verbose=False)
    wall, cpu = time.perf_counter() - t0, cpu_s() - c0
    tr = model.trainer
    # the trainer's model, rebuilt for the dataset's classes (the YAML's is for 80), unfused
    params = sum(p.numel() for p in tr.model.parameters())
    # final_eval() re-validates best.pt (its default); its metrics are trainer.metrics
    m = {k: float(v) for k, v in (tr.metrics or {}).items()}
    nimg = len(tr.train_loader.dataset)
    out = {"trainer": "ultralytics " + ultralytics.__version__, "torch": torch.__version__,
           "best": os.path.join(str(tr.save_dir), "weights", "best.pt"),
           "threads": torch.get_num_threads(), "model": os.path.splitext(a.model)[0],
           "params": params, "train_images": nimg, "epochs": a.epochs, "wall_s": wall, "cpu_s": cpu,
           "img_s": nimg * a.epochs / wall, "optimizer": str(tr.args.optimizer),
           "lr0": float(tr.args.lr0)}
    if a.task in ("detect", "segment"):
        out["map50"] = m.get("metrics/mAP50(B)")
        out["map50_95"] = m.get("metrics/mAP50-95(B)")
    if a.task == "segment":
        out["mask_map50"] = m.get("metrics/mAP50(M)")
        out["mask_map50_95"] = m.get("metrics/mAP50-95(M)")
    if a.task == "semantic":
        out["miou"] = m.get("metrics/mIoU")
        out["pixel_acc"] = m.get("metrics/pixel_acc")
    # the last epoch's own validation (EMA weights of the last epoch), next to best.pt's
    rc = os.path.join(str(tr.save_dir), "results.csv")
    if os.path.exists(rc):
        with open(rc) as f:
            rows = [{k.strip(): v for k, v in r.items()} for r in csv.DictReader(f)]
        if rows:
            last = rows[-1]
            keys = {"detect": ("metrics/mAP50(B)", "metrics/mAP50-95(B)"),
                    "segment": ("metrics/mAP50(B)", "metrics/mAP50-95(B)", "metrics/mAP50(M)",
                                "metrics/mAP50-95(M)"),
                    "semantic": ("metrics/mIoU", "metrics/pixel_acc")}[a.task]
            out["last_epoch"] = [float(last[k]) for k in keys if k in last]
    print("PEER_RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
