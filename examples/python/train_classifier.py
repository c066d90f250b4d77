#!/usr/bin/env python3
"""Train an image classifier with libvisiontrain from Python.

    python3 train_classifier.py DATA_DIR [OUT.vtm] [key=value ...]

DATA_DIR is an ImageFolder dataset: DATA_DIR/train/<class>/ folders of .png or .jpg images,
and DATA_DIR/val/<class>/ alike
(`vt synth data=DIR` writes a synthetic one, as does visiontrain.synth_generate()).  key=value
pairs are trainer options (epochs=, batch=, imgsz=, optimizer=, lr0=, device=, ...).  The trained
model is saved to OUT.vtm (default classifier.vtm).

The bindings find the library through $VT_LIBRARY, next to the package, or on the system.
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
    data = argv[1]
    rest = argv[2:]
    out = "classifier.vtm"
    if rest and "=" not in rest[0]:
        out, rest = rest[0], rest[1:]
    options = dict(kv.split("=", 1) for kv in rest)
    options.setdefault("epochs", "5")   # our default; the command line overrides it

    try:
        dataset = vt.Dataset(data)      # only file names are read here
    except vt.VisionTrainError as e:
        print(e, file=sys.stderr)   # the message names the folder
        return 3
    print("%d classes, %d training and %d validation images"
          % (dataset.num_classes, dataset.num_images("train"), dataset.num_images("val")))

    # The model's image size is a model option: give it the command line's imgsz= too.
    model_options = {"imgsz": options["imgsz"]} if "imgsz" in options else {}
    try:
        model = vt.Model("cls-n", dataset.num_classes, **model_options)
        trainer = vt.Trainer(model, dataset)   # borrows the model and the dataset
        trainer.set(*("%s=%s" % kv for kv in options.items()))
    except vt.OptionError as e:     # the message lists the valid keys or the valid range
        print(e, file=sys.stderr)
        return 2

    def progress(event, p):         # called after every batch and every epoch
        if event == vt.Event.EPOCH_END:
            line = "epoch %d/%d: loss %.4f" % (p.epoch, p.epochs, p.loss)
            if "top1" in p.metrics:  # only with a val split
                line += ", val top-1 %.3f" % p.top1
            print(line, flush=True)

    with dataset, model, trainer:   # closed in reverse order: trainer, model, dataset
        metrics = trainer.run(callback=progress)   # Ctrl-C stops it cleanly
        if "top1" in metrics:
            print("final validation top-1 accuracy: %.3f" % metrics["top1"])
        model.save(out)             # Model.load() reads it back (see predict.py)
        print("saved", out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
