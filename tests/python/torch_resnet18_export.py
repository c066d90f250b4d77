"""torchvision's resnet18 exported by torch.onnx.export, for onnx_import.py (which runs this in
an interpreter that has torch and torchvision; it needs neither onnx nor onnxruntime).

    python3 torch_resnet18_export.py OUT_DIR IMGSZ SEED

writes into OUT_DIR:
  plain_fold.onnx   torchvision's own random initialisation (every batch norm still at scale 1,
                    shift 0, mean 0, variance 1), the default eval-mode export: batch norm
                    folded into the convolutions (equal folded biases become Identity nodes)
  fold.onnx         random batch-norm parameters and statistics, the default export (folded)
  preserve.onnx     the same model, training=TrainingMode.PRESERVE in eval mode: the
                    BatchNormalization nodes kept, with the running statistics
  inputs.npy        3 random images, float32 NCHW in [0, 1]
  plain_out.npy, out.npy   torch's eval-mode outputs (logits) for them
  norm_out.npy      the second model's logits for the inputs normalised with torchvision's
                    ImageNet mean and std, (x - mean) / std, what an import with
                    normalize=imagenet computes on x except near the borders
  norm_pad_out.npy  the same with the library's padding of the first convolution: the inputs
                    padded with 0 pixels (pads of conv1) before normalising, conv1 without
                    padding; what the import with normalize=imagenet computes exactly
"""

import os
import sys

import numpy as np
import torch
import torchvision

MEAN = (0.485, 0.456, 0.406)   # torchvision's ImageNet normalisation
STD = (0.229, 0.224, 0.225)


def normalised(x):
    return (x - torch.tensor(MEAN).view(1, 3, 1, 1)) / torch.tensor(STD).view(1, 3, 1, 1)


def export(model, x, path, **kw):
    torch.onnx.export(model, x, path, opset_version=13, **kw)


def main():
    out, imgsz, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    torch.manual_seed(seed)
    x = torch.rand(3, 3, imgsz, imgsz)
    np.save(os.path.join(out, "inputs.npy"), x.numpy())
    one = x[:1]
    model = torchvision.models.resnet18()
    model.eval()
    with torch.no_grad():
        np.save(os.path.join(out, "plain_out.npy"), model(x).numpy())
    export(model, one, os.path.join(out, "plain_fold.onnx"))
    with torch.no_grad():
        for mod in model.modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.weight.uniform_(0.5, 1.5)
                mod.bias.uniform_(-0.3, 0.3)
                mod.running_mean.uniform_(-0.3, 0.3)
                mod.running_var.uniform_(0.5, 2.0)
        np.save(os.path.join(out, "out.npy"), model(x).numpy())
        np.save(os.path.join(out, "norm_out.npy"), model(normalised(x)).numpy())
        pad = model.conv1.padding
        model.conv1.padding = (0, 0)
        xp = torch.nn.functional.pad(x, (pad[1], pad[1], pad[0], pad[0]))  # pixels 0 outside
        np.save(os.path.join(out, "norm_pad_out.npy"), model(normalised(xp)).numpy())
        model.conv1.padding = pad
    export(model, one, os.path.join(out, "fold.onnx"))
    # PRESERVE keeps the BatchNormalization nodes; in eval mode they are inference ones (one
    # output, the running statistics), in train mode they would be training ones
    export(model, one, os.path.join(out, "preserve.onnx"),
           training=torch.onnx.TrainingMode.PRESERVE)


if __name__ == "__main__":
    main()
