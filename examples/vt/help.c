/* vt: the usage text, each command's help text and 'vt help [COMMAND]'. */
#include <stdio.h>
#include <string.h>

#include "vt_cli.h"

/* The trainer's option keys, comma-separated (from vt_option_next / vt_option_info). */
static const char *trainer_keys(void)
{
    static char buf[1024];
    if (buf[0]) return buf;
    size_t used = 0, line = 0;
    for (int id = vt_option_next(0); id; id = vt_option_next(id)) {
        const char *key;
        if (!(vt_option_scopes((vt_option)id) & VT_SCOPE_TRAINER) ||
            vt_option_info((vt_option)id, &key, NULL, NULL, NULL, NULL))
            continue;
        const char *sep = !used ? "" : line + strlen(key) > 70 ? ",\n  " : ", ";
        if (!strcmp(sep, ",\n  ")) line = 0;
        line += strlen(key) + 2;
        used += (size_t)snprintf(buf + used, used < sizeof buf ? sizeof buf - used : 0, "%s%s",
                                 sep, key);
    }
    return buf;
}

/* ---- help ----------------------------------------------------------------------------------- */

const char *const usage_text =
    "usage: vt COMMAND [key=value ...]\n"
    "\n"
    "commands:\n"
    "  train     train a classifier (ImageFolder), a detector (YOLO data.yaml, COCO json)\n"
    "            or a segmenter (YOLO-seg, masks); resume=RUN/weights/last.vtm continues\n"
    "  val       evaluate a saved model on a dataset split\n"
    "  predict   classify images, or detect or segment objects in them, with a saved model\n"
    "  export    write a saved model as an ONNX file\n"
    "  import    read a model from an ONNX file (torchvision's resnet18) into a .vtm\n"
    "  estimate  estimate the time and cost of a training run on each catalog GPU\n"
    "  check     validate a dataset: every problem with file:line, counts per split and class\n"
    "  dataset   dataset tools: split, subset, clone, stats\n"
    "  info      version, GPUs, the GPU catalog and every training option\n"
    "  synth     write a synthetic dataset (coloured shapes)\n"
    "  demo      generate a dataset, train cls-n on it and print the accuracy\n"
    "            (task=detect: det-n and its mAP; task=segment: seg-n and its mIoU)\n"
    "  help      'vt help COMMAND' or 'vt COMMAND --help' for a command's keys\n"
    "\n"
    "examples:\n"
    "  vt synth data=shapes classes=4\n"
    "  vt train data=shapes model=cls-n epochs=10 imgsz=32 save=shapes.vtm\n"
    "  vt predict model=shapes.vtm source=shapes/val/circle/00000.png\n"
    "  vt estimate model=cls-s data=shapes epochs=100 imgsz=224 batch=64 gpu=all\n"
    "\n"
    "exit codes: 0 ok, 1 failure, 2 usage error, 3 data error (missing or unusable dataset,\n"
    "            image, model or catalog file), 4 interrupted (Ctrl-C)\n";

typedef struct {
    const char *cmd, *text;
} help_entry;

static const help_entry help_texts[] = {
    {"train",
     "usage: vt train data=DIR [key=value ...]\n"
     "   or: vt train resume=RUN/weights/last.vtm [epochs=N ...]\n"
     "Train a classifier on an ImageFolder dataset (DIR/train/<class>/*.png|jpg, DIR/val/...),\n"
     "a detector on a YOLO data.yaml (or a folder holding one) or a COCO .json, or a\n"
     "segmenter (YOLO-seg polygons or masks, task=segment).  The run folder\n"
     "(runs/<task>/<name>: args.yaml, weights/last.vtm, weights/best.vtm, results.csv,\n"
     "plots) is named at the start and the end.\n"
     "resume= alone continues a run: the checkpoint holds its data, model and options; trainer\n"
     "keys given with it override them (epochs= extends), a different model is refused.\n"
     "\n"
     "tool keys:\n"
     "  data=DIR         the dataset (required, unless resume= names a checkpoint)\n"
     "  model=NAME|FILE  @MODELS@; or a saved .vtm to fine-tune: on data of other classes its "
     "head is re-created, every other tensor transferred ('vt: transferred K/N tensors ...')\n"
     "  save=FILE        also copy the best weights (weights/best.vtm) to FILE, checked to be\n"
     "                   writable before training; also written after Ctrl-C.  Without it the\n"
     "                   weights are only in the run folder.  save=0|1 is passed to the\n"
     "                   trainer (its run-folder switch); save=0 writes nothing\n"
     "  task=@TASKS@  default: segment for a seg-* model, else detect for a\n"
     "                   .yaml/.yml/.json, a folder holding a data.yaml or a det-* model,\n"
     "                   else classify\n"
     "  channels=1|3     input channels of a new model (default 3)\n"
     "  dropout=P        dropout before the classifier of a new model (default 0)\n"
     "  progress=auto|bar|plain|off  live bar on a terminal, plain lines otherwise (auto);\n"
     "                   off: no bar and no epoch table, the other lines still print\n"
     "  quiet=1          print nothing but errors (no notes, warnings, data summary, results)\n"
     "  policy=drop|skip|fail  a bad box is dropped (default), its image skipped, or the run\n"
     "                   refused naming file:line (as for 'vt check')\n"
     "  min_size=10      smaller images are left out;  decode=0 skips decoding every image\n"
     "                   before training (faster start; unreadable images warned later)\n"
     "The data summary after the first line says what is used and left out per split, the\n"
     "problems by reason, each as file:line (the first 3 of more than 10), and where all of\n"
     "them are written (problems.txt in the run folder); with problems it goes to stderr, as\n"
     "every warning and note ('vt: ...') does.  batch= must be 2 or more, or -1: the largest\n"
     "batch that fits autobatch_fraction (0.6) of the GPU's (or available host) memory,\n"
     "checked by one training step and halved while it runs out of memory.\n"
     "device=0,1,... starts one process (rank) per GPU listed, trained data-parallel (NCCL).\n"
     "trainer keys (see 'vt info' for types, ranges and defaults):\n"
     "  @TRAINER_KEYS@\n"
     "  imgsz= also sets a new model's image size; seed= seeds shuffling and augmentation.\n"
     "  Augmentation keys of another task's pipeline (mosaic= on a classifier, erasing= on a\n"
     "  detector, ...) are refused rather than ignored.\n"
     "  pretrained=FILE.vtm starts a model given by name from a saved one (the same\n"
     "  architecture, or the shared backbone: model=det-r18 pretrained=r18.vtm from 'vt\n"
     "  import'); freeze=N|backbone trains only the layers after the first N of 'vt info\n"
     "  model=' (or after the backbone).\n"
     "\n"
     "Prints a progress bar (epoch, batch, loss, img/s, ETA; on a GPU its use, memory,\n"
     "power and temperature, or 'GPU n/a' without NVML) and one table row per epoch\n"
     "(loss, val loss, top-1, top-5 or P, R, mAP50, mAP50-95, lr, img/s, time).  The best\n"
     "epoch is chosen by top-1, mAP50-95 or mIoU.  Ctrl-C stops after the current batch,\n"
     "saves last.vtm (and save=) and exits with code 4.\n"
     "example: vt train data=shapes epochs=10 imgsz=32 batch=32 optimizer=adamw lr0=0.003\n"},
    {"val",
     "usage: vt val model=FILE data=DIR [split=val|test|train policy=drop|skip|fail min_size=\n"
     "               decode= quiet=1 batch= imgsz= device= workers= precision=]\n"
     "Evaluate a saved model on a split of a dataset: loss, top-1 and top-5 accuracy, or for a\n"
     "detector precision, recall, mAP50 and mAP50-95 (COCO-style, 101-point).\n"
     "policy=drop|skip|fail, min_size=, decode= open the dataset as for 'vt train'; its\n"
     "problems are summarised first (to stderr).  quiet=1 prints nothing but errors (the exit\n"
     "status tells).  Training keys that validation does not use (fraction=,\n"
     "epochs=, ...) are refused.\n"     "example: vt val model=shapes.vtm data=shapes\n"},
    {"predict",
     "usage: vt predict model=FILE source=IMAGE|DIR [IMAGE ...] [top=1 conf=0.25 iou=0.7\n"
     "                  max_det=300 out=predictions color=1 threads=0]\n"
     "Classify PNG or JPEG images with a saved model, detect objects, or segment them, one\n"
     "image at a time on threads= CPU threads (0: every online processor).\n"
     "source= takes files, and a folder stands for the images directly in it; image paths may\n"
     "also be given without source=.  Classifier: one line per image, 'path: class\n"
     "probability' (top=K: the K best classes).  Detector: 'path: N detections', then one line\n"
     "per box: class, score, x0 y0 x1 y1 in the image's pixels (score >= conf, class-aware NMS\n"
     "at IoU iou, at most max_det).  Segmenter: writes OUT/<name>_mask.png (class id per\n"
     "pixel, the image's size; out=DIR, default predictions) and OUT/<name>_color.png (each\n"
     "class in its colour, a class named background black; color=0: the class-id mask only),\n"
     "and prints each class's share of the pixels.  Instance segmenter: 'path: N instances'\n"
     "and one line per object as for a detector (conf=, iou=, max_det= as there); with\n"
     "out=DIR also OUT/<name>_instances.png (8-bit gray, the image's size: 0 background, k+1\n"
     "object k, best score first, ids capped at 255; where objects overlap the better one's)\n"
     "and OUT/<name>_overlay.png (the image with each object's mask blended half and half in\n"
     "its class's colour).\n"
     "example: vt predict model=shapes.vtm source=shapes/val/circle top=2\n"},
    {"export",
     "usage: vt export model=FILE.vtm [format=onnx out=FILE.onnx opset=17 batch=1|N|dynamic\n"
     "                 nms=0|1 conf=0.25 iou=0.7 max_det=300 half=0 fold=1]\n"
     "Write the model's inference graph as ONNX (opset 13..21, batch norm folded unless\n"
     "fold=0), default out: the model's path with .onnx.  Input 'images': float32 NCHW,\n"
     "pixels / 255, resized (classifiers) or letterboxed (detectors, segmenters) by the\n"
     "caller.  Outputs: 'probs' (softmax), 'head' (detector: per stride-8 cell dx dy lw lh\n"
     "+ class logits) or 'logits' (segmenter: per pixel).  nms=1 (detectors, batch=1):\n"
     "'boxes' x0 y0 x1 y1 in input pixels, 'scores', 'classes', as vt predict gives them for\n"
     "conf, iou and max_det.\n"
     "The contract is also in the file's metadata_props.\n"
     "example: vt export model=det.vtm nms=1 conf=0.25\n"},
    {"import",
     "usage: vt import FILE.onnx [arch=resnet18 out=FILE.vtm imgsz=224 normalize=imagenet|none\n"
     "                            mean=R,G,B std=R,G,B]\n"
     "Read a model's weights from an ONNX file and save them as a .vtm (default out: the\n"
     "file's path with .vtm).  arch=resnet18 (the only one so far): torchvision's resnet18 as\n"
     "torch.onnx.export writes it, batch norm folded into the convolutions (the eval-mode\n"
     "default) or kept (training=TrainingMode.PRESERVE: the real running statistics, the\n"
     "better start for fine-tuning).  The class count is the final Gemm's, the channels the\n"
     "first Conv's; imgsz is the model's image size.  A graph of another layout is refused,\n"
     "naming the first ONNX node that differs.\n"
     "Inputs are pixels / 255 like every model of the library; torchvision's ImageNet\n"
     "weights expect (x - mean) / std, which the graph does not contain.  normalize=imagenet\n"
     "(mean 0.485,0.456,0.406, std 0.229,0.224,0.225) or mean=R,G,B std=R,G,B (one value per\n"
     "input channel, std > 0; default normalize=none) folds that normalisation into the first\n"
     "convolution (weight / std, the mean into its batch norm's running mean), and the tool\n"
     "says so.  Exact except at the image border, where the first convolution's zero\n"
     "padding differs (the graph pads with pixels at the mean): see docs/onnx.md.\n"
     "example: vt import resnet18.onnx out=r18.vtm imgsz=224 normalize=imagenet\n"},
    {"estimate",
     "usage: vt estimate [key=value ...]\n"
     "Estimate the time and cost of a training run, from the model's layer list and a cost\n"
     "model of each GPU (see lib/estimate/estimate.c), and rank the catalog GPUs.\n"
     "\n"
     "  model=NAME|FILE  @MODELS@; or a saved .vtm\n"
     "  data=PATH        take the class and image counts from a dataset, any layout vt train\n"
     "                   reads: an ImageFolder, a YOLO data.yaml (or its folder), a COCO JSON;\n"
     "                   task=@TASKS@ as vt train guesses it; or give them:\n"
     "  classes=N train=N val=N    (defaults 10, 1000, 0)\n"
     "  epochs=100 imgsz=640 batch=16 (total over all GPUs) gpus=1 (data-parallel; with\n"
     "                   gpu=cpu N MPI ranks on this host, sharing its cores)\n"
     "  link_gbs=GB/s    bandwidth of a device's link in the gradient all-reduce of gpus>1\n"
     "                   (default 0: by interconnect, the catalog GPU's NVLink or PCIe,\n"
     "                   shared memory on the CPU; docs/estimator.md)\n"
     "  precision=tf32 (default, the trainer's)|fp32|bf16|fp16|amp   optimizer=sgd|adamw\n"
     "                   (each GPU runs the nearest it has: a T4 or V100 fp32 for tf32 and\n"
     "                   fp16 for bf16; the CPU bf16 with AVX512-BF16, else fp32; the note\n"
     "                   column says so; calibrate=1 measures at that precision)\n"
     "  workers=8 (loader threads)\n"
     "  gpu=all          rank every catalog GPU (default); gpu=NAME one catalog GPU, or an\n"
     "                   unambiguous abbreviation (T4, V100, A6000; H200 = H200 SXM);\n"
     "                   gpu=local the calibrated local device (the CPU without a GPU); gpu=cpu\n"
     "  by=cost|time     ranking key of gpu=all (default cost)\n"
     "  deadline=HOURS   rank by cost among the GPUs that finish within the deadline\n"
     "  budget=USD       rank by time among the GPUs whose cost stays within the budget\n"
     "  catalog=CSV      merge a CSV of GPUs/prices into the catalog (vt info lists it)\n"
     "  calibrate=1      first measure a few training steps on the local device\n"
     "                   (device=cpu|0|1..., default the first GPU, else the CPU;\n"
     "                   seconds=S measurement budget, default 10; batches=B1,B2[,B3];\n"
     "                   local_gpu=NAME the catalog name of the local GPU, else guessed)\n"
     "  calibration=FILE load a saved calibration, or save it after calibrate=1\n"
     "  price=USD        hourly price of the local device (default 0)\n"
     "  top=N            show only the N best GPUs of the ranking\n"
     "estimator keys also accepted as is: mosaic, val_each, channels, load_ms, startup,\n"
     "  deadline_h, budget_usd, local_price, memory_fraction, link_gbs\n"
     "\n"
     "gpu=all prints a table sorted by the ranking: GPU, memory, whether the run fits (and the\n"
     "largest batch that does), seconds per epoch, total time (h:mm) and its range, price,\n"
     "cost in USD and its range ('-' when the catalog has no price); then a recommendation:\n"
     "best buy (least cost x time), fastest, cheapest, and the best within deadline=/budget=\n"
     "or 'nothing fits' with the cheapest and fastest; then advice for the dataset's size.\n"
     "The ranges come from the cost model's measured accuracy: calibrated on this CPU +-15 %,\n"
     "on this GPU +-20 %, extrapolated to another GPU -35/+50 %, uncalibrated -50/+100 %.\n"
     "example: vt estimate model=cls-s train=20000 val=2000 epochs=100 imgsz=224 batch=64\n"},
    {"check",
     "usage: vt check data=PATH [task=@TASKS@ policy=drop|skip|fail min_size=10\n"
     "                           workers=4 show=100]\n"
     "Validate a dataset with vt_dataset_validate: an ImageFolder (classify), a YOLO data.yaml\n"
     "or a COCO .json (detect); for segment a YOLO-seg data.yaml, a data.yaml with masks:\n"
     "(class-id PNG masks, which are decoded and checked too) or a COCO .json with polygons.\n"
     "task defaults to\n"
     "detect when data ends in .yaml/.yml/.json or the folder holds a data.yaml, else classify.\n"
     "Every image is decoded (workers= threads); every problem is printed as 'file:line: ...'\n"
     "[code] (the first show=N of them): bad label lines, classes or coordinates out of range,\n"
     "zero-size and duplicate boxes, polygons of fewer than 3 points, missing or empty splits,\n"
     "names/nc mismatches, unreadable, corrupt, truncated, too small (min_size), too large or\n"
     "unsupported images, paths outside the dataset folder, symbolic link loops and broken\n"
     "links.  Then instances per class and split, and per split: images, usable (under the\n"
     "policy), corrupt, size limits (too small or too large), skipped (policy=skip: images with\n"
     "a label problem), backgrounds,\n"
     "instances.  Exits 3 when an image is unreadable, or on the first problem with policy=fail\n"
     "(the message names file:line).  The dataset's files are only read.\n"
     "example: vt check data=shapes     vt check data=coco8/data.yaml policy=skip\n"},
    {"dataset",
     "usage: vt dataset split  data=PATH out=DIR [val=0.2 seed=0 task= policy=]\n"
     "       vt dataset subset data=PATH out=DIR fraction=F|count=N [seed=0 task= policy=]\n"
     "       vt dataset clone  data=DIR out=DIR\n"
     "       vt dataset stats  data=PATH [plot=FILE.png bins=10 task= policy=]\n"
     "Dataset tools.  Nothing of the dataset is changed: split and subset write list files\n"
     "(train.txt, val.txt, test.txt: absolute image paths) and a data.yaml naming them into the\n"
     "new or empty folder out=, for YOLO data.yaml datasets only (labels stay beside the\n"
     "images).  split shuffles the train images with the seed and puts round(val*n) of them in\n"
     "val; subset keeps a fraction (or count) of every split; the same seed gives the same\n"
     "lists.  policy=skip or fail applies while opening (see 'vt help check').  clone copies a\n"
     "dataset folder to a new or empty folder.  stats prints instances per class and split and,\n"
     "for detection, histograms of box width, height and sqrt(w*h) relative to the image;\n"
     "plot= writes a PNG of the label distribution.\n"
     "example: vt dataset split data=coco8/data.yaml out=coco8-split val=0.25 seed=1\n"},
    {"info",
     "usage: vt info [catalog=CSV]\n"
     "       vt info model=FILE.vtm|ARCH [classes=N imgsz=N]\n"
     "Print the library version and ABI, the GPUs this build can use, the GPU catalog of the\n"
     "estimator (catalog=CSV merges a CSV first) and every training and model option.\n"
     "With model=: the model's layer list (index, kind, output shape, parameters), the one\n"
     "freeze=N counts in, and where its backbone ends (freeze=backbone).\n"},
    {"synth",
     "usage: vt synth data=DIR [task=@TASKS@ classes=4 train=100 val=40 imgsz=32\n"
     "                          seed=0]\n"
     "Write a synthetic dataset of coloured shapes on noisy backgrounds.  classify: ImageFolder,\n"
     "one shape per class, train/val images per class (classes 2..8, imgsz 16..512).  detect:\n"
     "YOLO layout with data.yaml, train/val images in all, max_objects=6 shapes per image\n"
     "(classes 3..8, imgsz 32..1024; defaults classes=3 train=200 val=50 imgsz=160), their\n"
     "longer side min_size..max_size px (default 5%..50% of imgsz), sizes=linear|log (log:\n"
     "as many per octave, e.g. min_size=8 max_size=200 sizes=log for a multi-scale set).\n"
     "segment: the detect options and scenes, YOLO-seg polygons in labels/ and the same labels\n"
     "as class-id PNGs in masks/ (0 background, shape class k -> k+1).  instance: the same\n"
     "polygons, one object each, no masks/.\n"},
    {"demo",
     "usage: vt demo [data=DIR save=FILE key=value ...]\n"
     "Generate a synthetic dataset in DIR (default demo-data) unless it exists, train cls-n on\n"
     "it (epochs=8 imgsz=32 batch=32 seed=1 optimizer=adamw lr0=0.003 unless given) and print\n"
     "the validation accuracy.  Takes the keys of 'vt train'.\n"
     "task=detect: a synthetic YOLO detection dataset (default demo-det, 3 shape classes,\n"
     "400 train / 80 val images of 64 px) and det-n (epochs=30 imgsz=64 batch=16 seed=1\n"
     "optimizer=adamw lr0=0.002 unless given); prints the validation mAP.\n"
     "task=segment: a synthetic segmentation dataset (default demo-seg, 300 + 60 images of\n"
     "64 px) and seg-n (epochs=15 imgsz=64 batch=16); prints the validation mIoU.\n"},
};

const char *help_for(const char *cmd)
{
    for (size_t i = 0; i < sizeof help_texts / sizeof help_texts[0]; i++)
        if (!strcmp(help_texts[i].cmd, cmd)) return help_texts[i].text;
    return NULL;
}

/* "cls-n (default), cls-s, ...; det-n (default for detection), ...": the models of every
 * task the library lists (vt_arch_name, vt_arch_task), each task's default first. */
static const char *model_list(void)
{
    static char buf[2048];
    if (buf[0]) return buf;
    size_t used = 0;
    for (vt_task t = vt_task_next((vt_task)0); t; t = vt_task_next(t)) {
        const char *def = vt_task_default_model(t), *title = vt_task_title(t);
        int n = 0;
        if (def && vt_arch_task(def) == t && used < sizeof buf) {
            /* the first task's is the default of all (no data.yaml: classify) */
            if (t == vt_task_next((vt_task)0))
                used += (size_t)snprintf(buf + used, sizeof buf - used, "%s (default)", def);
            else
                used += (size_t)snprintf(buf + used, sizeof buf - used, "; %s (default for %s)",
                                         def, title ? title : "its task");
            n++;
        }
        for (int i = 0; vt_arch_name(i); i++) {
            const char *name = vt_arch_name(i);
            if (vt_arch_task(name) != t || (def && !strcmp(name, def)) || used >= sizeof buf)
                continue;
            used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s",
                                     n ? ", " : used ? "; " : "", name);
            n++;
        }
    }
    return buf;
}

/* "classify|detect|segment": the tasks the library lists. */
static const char *task_list(void)
{
    static char buf[256];
    return task_names("|", buf, sizeof buf);
}

/* Print one line of help text (its '\n' included), its placeholders filled (see vt_cli.h); a
 * line holding @MODELS@ is wrapped at 88 columns, continued under the start of its value. */
static void print_help_line(FILE *f, const char *line, size_t len)
{
    static const struct {
        const char *mark;
        const char *(*value)(void);
    } fills[] = {{"@TRAINER_KEYS@", trainer_keys}, {"@TASKS@", task_list},
                 {"@MODELS@", model_list}};
    char out[8192];
    size_t used = 0;
    int indent = -1; /* the column of @MODELS@: the line is wrapped */
    for (size_t i = 0; i < len && used + 1 < sizeof out;) {
        size_t k = 0;
        while (k < sizeof fills / sizeof *fills &&
               strncmp(line + i, fills[k].mark, strlen(fills[k].mark)))
            k++;
        if (k == sizeof fills / sizeof *fills) {
            out[used++] = line[i++];
            continue;
        }
        const char *v = fills[k].value();
        if (!strcmp(fills[k].mark, "@MODELS@")) indent = (int)used;
        used += (size_t)snprintf(out + used, sizeof out - used, "%s", v);
        if (used >= sizeof out) used = sizeof out - 1;
        i += strlen(fills[k].mark);
    }
    out[used] = 0;
    if (indent < 0) {
        fputs(out, f);
        return;
    }
    /* greedy: as many words as fit in 88 columns, the first of a line always */
    enum { WIDTH = 88 };
    char *p = out + indent;
    size_t col = (size_t)indent;
    fwrite(out, 1, (size_t)indent, f);
    int first = 1;
    while (*p && *p != '\n') {
        size_t wl = strcspn(p, " \n");
        if (!first && col + 1 + wl > WIDTH) {
            fprintf(f, "\n%*s", indent, "");
            col = (size_t)indent;
            first = 1;
        }
        if (!first) fputc(' ', f), col++;
        fwrite(p, 1, wl, f);
        col += wl;
        first = 0;
        p += wl;
        while (*p == ' ') p++;
    }
    fputs("\n", f);
}

void print_help(FILE *f, const char *text)
{
    while (*text) {
        size_t len = strcspn(text, "\n");
        if (text[len] == '\n') len++;
        print_help_line(f, text, len);
        text += len;
    }
}

int cmd_help(const args *a, int argc, char **argv)
{
    (void)a;
    if (argc == 0) {
        fputs(usage_text, stdout);
        return 0;
    }
    const char *text = help_for(argv[0]);
    if (!text) {
        fprintf(stderr, "vt help: unknown command '%s'\n", argv[0]);
        fputs(usage_text, stderr);
        return EXIT_USAGE;
    }
    print_help(stdout, text);
    return 0;
}
