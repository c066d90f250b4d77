#!/usr/bin/env python3
"""Train an object detector with libvisiontrain from Python, then detect objects in an image.

    python3 train_detector.py DATA.yaml [IMAGE] [key=value ...]

DATA.yaml is an Ultralytics data.yaml (or a folder holding one, or a COCO .json); `vt synth
data=DIR task=detect` or visiontrain.synth_generate(DIR, task="detect") writes a synthetic one.
key=value pairs are trainer options (epochs=, batch=, imgsz=, optimizer=, lr0=, mosaic=, ...);
imgsz= also sets the model's image size (a multiple of 32).  The model is saved to detector.vtm,
then IMAGE (default: the first validation image) is searched for objects.
"""
import os
import sys

try:
    import visiontrain as vt
except ImportError:  # not installed: use the bindings of this source tree
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "bindings", "python"))
    import visiontrain as vt


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    data, rest = argv[1], argv[2:]
    image = None
    if rest and "=" not in rest[0]:
        image, rest = rest[0], rest[1:]
    options = dict(kv.split("=", 1) for kv in rest)
    options.setdefault("epochs", "10")
    options.setdefault("save", "0")     # no run folder for this example

    try:
        dataset = vt.Dataset(data, task="detect")
    except vt.VisionTrainError as e:
        print(e, file=sys.stderr)
        return 3
    for problem in dataset.problems():   # bad labels are dropped, each reported
        print("warning:", problem.message, file=sys.stderr)
    print("%d classes, %d training and %d validation images"
          % (dataset.num_classes, dataset.num_images("train"), dataset.num_images("val")))

    model_options = {"imgsz": options["imgsz"]} if "imgsz" in options else {}
    try:
        model = vt.Model("det-n", dataset.num_classes, **model_options)
        trainer = vt.Trainer(model, dataset)
        trainer.set(*("%s=%s" % kv for kv in options.items()))

        def progress(event, p):         # called after every batch and every epoch
            if event == vt.Event.EPOCH_END:
                line = "epoch %d/%d: loss %.4f" % (p.epoch, p.epochs, p.loss)
                if p.map50 is not None:
                    line += ", val mAP50 %.3f mAP50-95 %.3f" % (p.map50, p.map50_95)
                print(line)

        trainer.run(callback=progress)
        model.save("detector.vtm")
        print("saved detector.vtm")
        image = image or dataset.image_path("val", 0)
        detections = model.detect(image, conf=0.25, iou=0.7, max_det=100)
    except vt.VisionTrainError as e:
        print(e, file=sys.stderr)
        return 1
    print("%s: %d objects" % (image, len(detections)))
    for d in detections:
        print("  %-10s %.3f  (%.0f, %.0f) - (%.0f, %.0f)" % (d.name, d.score, d.x0, d.y0, d.x1,
                                                            d.y1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
