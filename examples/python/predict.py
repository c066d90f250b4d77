#!/usr/bin/env python3
"""Classify images with a trained model.

    python3 predict.py MODEL.vtm IMAGE [IMAGE ...]

Prints the three most likely classes of each PNG or JPEG image.  The model comes from
train_classifier.py (or `vt train`).  Model.predict() also takes numpy arrays and PIL images.
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
    if len(argv) < 3:
        print("usage: predict.py MODEL.vtm IMAGE [IMAGE ...]", file=sys.stderr)
        return 2
    try:
        model = vt.Model.load(argv[1])   # weights, architecture, image size, class names
    except vt.VisionTrainError as e:
        print(e, file=sys.stderr)   # the message names the file and the problem
        return 3
    rc = 0
    with model:
        print("%s: %s, %d classes, %dx%d input"
              % (argv[1], model.arch, model.num_classes, model.imgsz, model.imgsz))
        for path in argv[2:]:
            try:
                best = model.predict_topk(path, k=3)   # [Prediction(index, name, probability)]
            except vt.VisionTrainError as e:
                print(e, file=sys.stderr)
                rc = 3
                continue
            print("%s: %s" % (path, "  ".join("%s %.1f%%" % (p.name, 100 * p.probability)
                                             for p in best)))
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
