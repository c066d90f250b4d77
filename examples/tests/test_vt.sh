#!/bin/sh
# Smoke test of the vt tool: its exit codes (0 ok, 2 usage, 3 data, 4 interrupted), help, and a
# synth / check / train / val / predict / estimate round trip on a tiny dataset.
#
#   test_vt.sh VT
set -u
vt=$1 scratch_name=vt-tool
. "$(dirname "$0")/vt_harness.sh"

# help: 0, to stdout
expect 0 "$vt" help
expect_out 'exit codes: 0 ok, 1 failure, 2 usage error, 3 data error'
expect_out 'train +train a classifier .*, a detector'
expect_out 'or a segmenter'
for cmd in train val predict export estimate check dataset info synth demo; do
    expect 0 "$vt" help "$cmd"
    expect_out "usage: vt $cmd"
    expect 0 "$vt" "$cmd" --help
done
expect 0 "$vt" estimate --help
expect_out 'det-n'
expect_out 'seg-n'
expect 0 "$vt" --version

# usage errors: 2
expect 2 "$vt"
expect 2 "$vt" frobnicate
expect 2 "$vt" help frobnicate
expect 2 "$vt" train
expect 2 "$vt" train data=data bogus=1
expect_out 'valid options: epochs, batch'
expect 2 "$vt" train data=data epochs=abc
expect 2 "$vt" train data=data notakeyvalue
expect 2 "$vt" predict model=m.vtm
expect 2 "$vt" predict model=m.vtm source=x.png top=0
expect 2 "$vt" check
expect 2 "$vt" check data=data bogus=1
expect_out 'valid keys: data, task, policy'
expect 2 "$vt" check data=data policy=maybe
expect 2 "$vt" dataset
expect 2 "$vt" dataset frob data=x
expect 2 "$vt" dataset split data=data
expect 2 "$vt" dataset stats data=data bogus=1
expect 2 "$vt" estimate bogus=1
expect 2 "$vt" estimate epochs=0
expect 2 "$vt" estimate model=no-such-model
expect 2 "$vt" estimate gpu=no-such-gpu
expect 2 "$vt" estimate budget=10 deadline=2
# every bad value at once, then one exit (nothing estimated); price= named as given
expect 2 "$vt" estimate epochs=x batch=-3 imgsz=7 gpus=0 price=abc
expect_out '^vt estimate: epochs=x is not a number \(bad option value\)$'
expect_out '^vt estimate: batch=-3 is out of range \[1, 1000000\] \(bad option value\)$'
expect_out '^vt estimate: imgsz=7 is out of range \[8, 4096\] \(bad option value\)$'
expect_out '^vt estimate: gpus=0 is out of range \[1, 64\] \(bad option value\)$'
expect_out '^vt estimate: price=abc is not a number \(bad option value\)$'
expect_out '^vt estimate: 5 bad values; nothing estimated$'
expect_no '^run:|local_price'
expect 2 "$vt" estimate top=0 by=speed deadline=-1 bogus=1
expect_out '^vt estimate: top=0: expected an integer'
expect_out '^vt estimate: by=speed: valid values: cost, time$'
expect_out '^vt estimate: deadline=-1 is out of range'
expect_out "^vt estimate: unknown estimator option 'bogus'"
expect_out '^vt estimate: 4 bad values; nothing estimated$'
expect 2 "$vt" train data=data epochs=x batch=0 lr0=abc
expect_out '^vt train: epochs=x is not a number \(bad option value\)$'
expect_out '^vt train: batch=0 is not valid'
expect_out '^vt train: lr0=abc is not a number \(bad option value\)$'
expect_out '^vt train: 3 bad keys or values$'
expect 2 "$vt" info bogus=1
expect 2 "$vt" train data=data progress=loud

# data errors: 3
expect 3 "$vt" train data=no-such-dir
expect 3 "$vt" check data=no-such-dir
expect 3 "$vt" val model=no-such.vtm data=no-such-dir
expect 3 "$vt" estimate data=no-such-dir
expect 3 "$vt" estimate catalog=no-such.csv

# round trip: 0
expect 0 "$vt" synth data=data classes=2 train=6 val=2 imgsz=16 seed=1
expect 0 "$vt" check data=data
expect_out 'circle +6 +2'
expect_out '16 images decoded: 0 unreadable'
expect 0 "$vt" train data=data imgsz=16 epochs=2 batch=4 save=m.vtm
expect_out 'epoch +loss +val_loss +top1 +top5 +lr +img/s +time'
expect_out '^ +2/2 '
if [ "$(grep -c '^ *1/2 ' out.txt)" -ne 1 ]; then
    echo "FAIL: not exactly one summary row for epoch 1"
    sed 's/^/    /' out.txt
    failures=$((failures + 1))
fi
expect_out 'saved m.vtm'
if grep -q "$(printf '\r')" out.txt; then
    echo "FAIL: a carriage return in the output of a run that is not on a terminal"
    failures=$((failures + 1))
fi
expect 0 "$vt" train data=data imgsz=16 epochs=1 batch=4 save=m2.vtm progress=bar
expect_out "$(printf '\r')epoch 1/1 \\["
expect 0 "$vt" val model=m.vtm data=data
expect_out 'top1 [0-9.]+ +top5'
expect 0 "$vt" predict model=m.vtm source=data/val/circle top=2 data/val/square/00000.png
expect_out 'data/val/circle/00001.png: [a-z]+ [0-9.]+ [a-z]+ [0-9.]+'
expect_out 'data/val/square/00000.png: '
"$vt" predict model=m.vtm source=data/val/circle top=2 >p_default.txt 2>&1
"$vt" predict model=m.vtm source=data/val/circle top=2 threads=1 >p_one.txt 2>&1
"$vt" predict model=m.vtm source=data/val/circle top=2 threads=3 >p_three.txt 2>&1
if [ -s p_one.txt ] && cmp -s p_default.txt p_one.txt && cmp -s p_default.txt p_three.txt; then
    echo "ok   : vt predict threads=1 and threads=3 print what the default does"
else
    echo "FAIL: vt predict: threads= changes the predictions"; failures=$((failures + 1))
fi
expect 2 "$vt" predict model=m.vtm source=data/val/circle threads=-1
expect_out 'threads=-1: expected an integer in 0..256'
expect 3 "$vt" predict model=m.vtm source=no-such.png
expect 2 "$vt" export
expect 2 "$vt" export model=m.vtm format=tflite
expect 2 "$vt" export model=m.vtm bogus=1
expect_out "unknown export option 'bogus'"
expect 2 "$vt" export model=m.vtm opset=3
expect 3 "$vt" export model=no-such.vtm
"$vt" export model=m.vtm out=m.onnx >out.txt 2>&1
if [ $? -eq 1 ] && grep -q 'no ONNX export' out.txt; then
    echo "skip: this build has no ONNX export (protobuf-c not found)"
else
    expect 0 "$vt" export model=m.vtm out=m.onnx batch=dynamic
    expect_out 'm.vtm -> m.onnx \(cls-n'
    [ -s m.onnx ] || { echo "FAIL: m.onnx not written"; failures=$((failures + 1)); }
    expect 3 "$vt" export model=m.vtm out=no-such-dir/m.onnx
    expect_out '^vt export: no-such-dir/m.onnx: cannot create file: No such file or directory; no-such-dir does not exist \(not found\)$'
    # a file where a folder should be: the status and message of vt train project=FILE/x
    : >a-file
    expect 3 "$vt" export model=m.vtm out=a-file/m.onnx
    expect_out '^vt export: a-file/m.onnx: cannot create file: Not a directory; a-file is a file, not a folder \(not found\)$'
fi
expect 0 "$vt" estimate model=cls-n data=data epochs=10 imgsz=32 batch=4
expect_out 'H100 SXM'
expect_out 'advice: Under 1,000'
expect 0 "$vt" estimate model=m.vtm train=5000 gpu=H100-SXM deadline=1
expect_out 'total time'
expect_out 'advice: 1,000-10,000'
expect 0 "$vt" estimate model=cls-n train=20000 imgsz=32 batch=4 gpu=local calibrate=1 \
    seconds=1 calibration=cal.txt
expect_out 'advice: Over 10,000'
expect 0 "$vt" estimate model=cls-n imgsz=32 batch=8 calibration=cal.txt top=3
expect_out 'local device \(calibrated\)'
printf 'name,price_usd_h\nT4,0.35\n' >prices.csv
expect 0 "$vt" info catalog=prices.csv
expect_out 'T4 .* 0\.35'
expect 0 "$vt" info
expect_out 'libvisiontrain [0-9]+\.[0-9]+\.[0-9]+ \(ABI [0-9]+\)'
expect_out '^devices: '

# a corrupt image: check reports it, data error
printf 'not an image' >data/train/circle/broken.png
expect 3 "$vt" check data=data
expect_out 'data/train/circle/broken.png: not a PNG or JPEG image \[unsupported_format\]'
expect_out '17 images decoded: 1 unreadable'
rm data/train/circle/broken.png

# detection: check (problems with file:line, policies) and the dataset tools
expect 0 "$vt" synth data=det task=detect classes=3 train=8 val=4 imgsz=32 seed=1
expect 0 "$vt" check data=det
expect_out '^  backgrounds +[0-9]+ +[0-9]+ +0$'
expect_out '12 images decoded: 0 unreadable; 0 problems'
# estimate reads the layouts vt train reads: a data.yaml, its folder, a COCO JSON
expect 0 "$vt" estimate model=det-s data=det/data.yaml epochs=100 imgsz=640 batch=16
expect_out 'run: det-s, 3 classes, 8 train / 4 val images'
expect 0 "$vt" estimate model=det-s data=det epochs=100 imgsz=640 batch=16
expect_out 'run: det-s, 3 classes, 8 train / 4 val images'
expect 0 "$vt" estimate data=det top=1
expect_out 'run: det-n, 3 classes'
mkdir -p coco/images
cp data/train/circle/00000.png coco/images/a.png
cp data/train/square/00000.png coco/images/b.png
printf '{"images": [{"id": 1, "file_name": "a.png", "width": 16, "height": 16},\n' >coco/train.json
printf ' {"id": 2, "file_name": "b.png", "width": 16, "height": 16}],\n' >>coco/train.json
printf ' "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 1, 8, 8]}],\n' >>coco/train.json
printf ' "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]}\n' >>coco/train.json
expect 0 "$vt" estimate model=det-s data=coco/train.json epochs=10 imgsz=64 batch=2
expect_out 'run: det-s, 2 classes, 2 train / 0 val images'
# the recommendation, with ranges; nothing within an impossible budget or deadline
expect 0 "$vt" estimate model=det-s data=det epochs=100 imgsz=640 batch=16
expect_out '^  best buy +[A-Z].*: [0-9]+:[0-9]{2} h:mm \([0-9]+:[0-9]{2}-[0-9]+:[0-9]{2}\), [0-9.]+ USD \([0-9.]+-[0-9.]+\)$'
expect_out '^  fastest +[A-Z]'
expect_out '^  cheapest +[A-Z]'
expect_out '^  ranges: not calibrated .*: -50 %/\+100 %$'
expect_out 'time range'
expect 0 "$vt" estimate model=det-s data=det epochs=100 imgsz=640 batch=16 budget=0.0001
expect_out '^  nothing fits the budget of 0.0001 USD: the cheapest is .* at [0-9.]+ USD, the fastest is .* in [0-9]+:[0-9]{2} h:mm$'
expect 0 "$vt" estimate model=det-s data=det epochs=100 imgsz=640 batch=16 deadline=0.00001
expect_out '^  nothing fits the deadline of 0.00001 h: the cheapest is .*, the fastest is '
expect 0 "$vt" estimate model=det-s data=det epochs=100 imgsz=640 batch=16 budget=1000
expect_out '^  within budget +[A-Z]'
# each GPU runs a precision it has (the T4: no TF32, no bf16); GPU abbreviations
expect 0 "$vt" estimate model=det-s data=det epochs=100 imgsz=640 batch=16 gpu=T4
expect_out '^  precision +fp32 \(no TF32\)$'
t4_default=$(sed -n 's/^  s \/ epoch *//p' out.txt)
expect 0 "$vt" estimate model=det-s data=det epochs=100 imgsz=640 batch=16 gpu=T4 precision=fp32
if [ "$(sed -n 's/^  s \/ epoch *//p' out.txt)" != "$t4_default" ]; then
    echo "FAIL: T4 at the default precision ($t4_default s/epoch) differs from fp32"
    failures=$((failures + 1))
fi
expect 0 "$vt" estimate model=det-s data=det epochs=100 imgsz=640 batch=16 precision=bf16
expect_out ' T4 .* fp16 \(no BF16\)$'
expect_out ' V100 SXM2 .* fp16 \(no BF16\)$'
expect 0 "$vt" estimate model=det-s data=det epochs=100 imgsz=640 batch=16 gpu=H200
expect_out '^estimate on H200 SXM'
expect_out '^  range +not calibrated'
expect 2 "$vt" estimate gpu=RTX
expect_out 'ambiguous'
printf '0 0.5 0.5\n' >>det/labels/train/00000.txt
expect 0 "$vt" check data=det/data.yaml
expect_out '^  det/labels/train/00000.txt:[0-9]+: 3 columns, expected 5 .*\[bad_line\]$'
expect 0 "$vt" check data=det policy=skip
expect_out '^  skipped +1 +0 +0$'
expect 3 "$vt" check data=det policy=fail
expect_out 'det/labels/train/00000.txt:[0-9]+: 3 columns'
expect 0 "$vt" dataset split data=det out=split val=0.25 seed=1
expect_out 'wrote split/data.yaml: train 6 val 2 images'
expect 0 "$vt" check data=split
expect_out '8 images decoded'
expect 2 "$vt" dataset split data=det out=split
expect_out 'not empty'
expect 0 "$vt" dataset subset data=det out=sub count=2 seed=3
expect_out 'train 2 val 2 images'
expect 2 "$vt" dataset subset data=det out=sub2 count=2 fraction=0.5
expect 0 "$vt" dataset clone data=det out=det2
if ! diff -r det det2 >/dev/null; then
    echo "FAIL: vt dataset clone: the copy differs"
    failures=$((failures + 1))
fi
expect 0 "$vt" dataset stats data=det plot=labels.png bins=4
expect_out 'sqrt\(w\*h\)'
if [ ! -s labels.png ]; then
    echo "FAIL: vt dataset stats plot=labels.png wrote nothing"
    failures=$((failures + 1))
fi
expect 1 "$vt" dataset split data=data out=cls-split
expect_out 'ImageFolder'

# resume=PATH alone continues a run exactly as the uninterrupted one (bit for bit on the CPU):
# the checkpoint names its dataset (absolute), model and options; run from another folder
expect 0 "$vt" train data=data imgsz=16 epochs=3 batch=4 save_period=1 name=full progress=plain
expect_out '^run folder: runs/classify/full '
cp -r runs/classify/full runs/classify/cont
rm runs/classify/cont/results.csv runs/classify/cont/weights/last.vtm \
    runs/classify/cont/weights/epoch2.vtm runs/classify/cont/weights/epoch3.vtm
mkdir -p elsewhere
cd elsewhere
expect 0 "$vt" train resume=../runs/classify/cont/weights/epoch1.vtm progress=plain
cd "$work"
expect_out '3 epochs, batch 4, imgsz 16'
expect_out '^ +3/3 '
if [ "$(cut -d, -f1-6 runs/classify/full/results.csv)" != \
     "$(cut -d, -f1-6 runs/classify/cont/results.csv)" ] ||
   [ "$(wc -l <runs/classify/cont/results.csv)" -ne 4 ]; then
    echo "FAIL: resume= alone: results.csv differs from the uninterrupted run's"
    diff runs/classify/full/results.csv runs/classify/cont/results.csv | sed 's/^/    /'
    failures=$((failures + 1))
fi
"$vt" predict model=runs/classify/full/weights/last.vtm source=data/val/circle top=2 data/val/square/00000.png >p_full.txt 2>&1
"$vt" predict model=runs/classify/cont/weights/last.vtm source=data/val/circle top=2 data/val/square/00000.png >p_cont.txt 2>&1
if ! cmp -s p_full.txt p_cont.txt || ! grep -q '^data/val/circle/00000.png: ' p_full.txt; then
    echo "FAIL: resume= alone: final weights predict otherwise than the uninterrupted run's"
    failures=$((failures + 1))
fi
# a model change cannot continue a run: refused
expect 2 "$vt" train resume=runs/classify/cont/weights/epoch1.vtm model=cls-s
expect_out 'was trained with model=cls-n'
expect 2 "$vt" train resume=runs/classify/cont/weights/epoch1.vtm imgsz=32

# save= gets the best weights (weights/best.vtm), not the last epoch's (here: epoch 1 of 4)
expect 0 "$vt" train data=data imgsz=16 epochs=4 lr0=0.1 batch=4 name=best save=best.vtm
expect_out 'saved best.vtm: the best weights'
expect_out '^run folder: runs/classify/best '
"$vt" predict model=best.vtm source=data/val/circle top=2 data/val/square/00000.png >p_save.txt 2>&1
"$vt" predict model=runs/classify/best/weights/best.vtm source=data/val/circle top=2 data/val/square/00000.png >p_best.txt 2>&1
"$vt" predict model=runs/classify/best/weights/last.vtm source=data/val/circle top=2 data/val/square/00000.png >p_last.txt 2>&1
if ! cmp -s p_save.txt p_best.txt || ! grep -q '^data/val/circle/00000.png: ' p_save.txt; then
    echo "FAIL: save= is not weights/best.vtm"
    failures=$((failures + 1))
fi
cmp -s p_best.txt p_last.txt && echo "note: best and last weights coincide in this run"
if [ -e model.vtm ]; then
    echo "FAIL: vt train wrote model.vtm unasked"
    failures=$((failures + 1))
fi

# batch=-1: the batch the run chose is printed, and the run folder's args.yaml holds it; on the
# CPU the progress line has no GPU figures
expect 0 "$vt" train data=data imgsz=16 epochs=1 batch=-1 name=auto progress=plain
expect_out 'epochs, batch auto, imgsz 16'
expect_out '^batch=-1: training with batch [0-9]+$'
expect_no 'GPU'
chosen=$(sed -n 's/^batch=-1: training with batch //p' out.txt)
if ! grep -qx "batch: $chosen" runs/classify/auto/args.yaml; then
    echo "FAIL: batch=-1 chose '$chosen' but args.yaml has $(grep '^batch:' runs/classify/auto/args.yaml)"
    failures=$((failures + 1))
fi
expect 2 "$vt" train data=data imgsz=16 epochs=1 batch=0
expect_out 'batch=0 is not valid; use -1 \(automatic\)'

# an unwritable save= or run folder is refused before the first epoch
: >not-a-dir
# (no_epoch: the last command trained no epoch: the refusal came first)
no_epoch() {
    if grep -Eq '^ *1/100000 |^epoch ' out.txt; then
        echo "FAIL: $1 was found out after training"
        sed 's/^/    /' out.txt | tail -5
        failures=$((failures + 1))
    fi
}
expect 3 timeout 60 "$vt" train data=data imgsz=16 epochs=100000 batch=4 save=no-such-dir/m.vtm
expect_out 'save=no-such-dir/m.vtm: cannot write there'
no_epoch "an unwritable save="
expect 3 timeout 60 "$vt" train data=data imgsz=16 epochs=100000 batch=4 save=not-a-dir/m.vtm
no_epoch "an unwritable save="
expect 3 timeout 60 "$vt" train data=data imgsz=16 epochs=100000 batch=4 project=not-a-dir
expect_out '^vt train: not-a-dir/classify: cannot create folder: Not a directory; not-a-dir is a file, not a folder \(not found\)$'
no_epoch "an unwritable run folder"
# the same cause reads the same from every writer (vt export out=FILE/x.onnx above)
expect 3 timeout 60 "$vt" train data=data imgsz=16 epochs=100000 batch=4 project=not-a-dir/x
expect_out '^vt train: not-a-dir/x: cannot create folder: Not a directory; not-a-dir is a file, not a folder \(not found\)$'
no_epoch "an unwritable run folder"
expect 3 timeout 60 "$vt" train data=data imgsz=16 epochs=100000 batch=4 quiet=1 project=not-a-dir/x
expect_out 'not-a-dir/x: cannot create folder: Not a directory'   # quiet=1: errors still print

# keys a command would accept and ignore are refused
expect 2 "$vt" val model=m.vtm data=data fraction=0.001
expect_out "key 'fraction' does not apply to validation"
expect 2 "$vt" val model=m.vtm data=data epochs=3
expect 0 "$vt" val model=m.vtm data=data batch=2 workers=1
expect 2 "$vt" train data=data imgsz=16 epochs=1 batch=4 mosaic=0.5
expect_out 'mosaic= does not apply to classification training'
expect 2 "$vt" train data=data imgsz=16 epochs=1 batch=4 degrees=10
no_epoch "a detection-only key on a classifier"
expect 2 "$vt" train data=det imgsz=32 epochs=1 batch=4 erasing=0.3
expect_out 'erasing= does not apply to detection training'
expect 2 "$vt" predict model=m.vtm source=data/val/circle conf=0.5
expect_out 'conf= applies to detection models'

# class tables align by display width (UTF-8 names; CJK characters take two columns)
expect 0 "$vt" synth data=utf classes=2 train=3 val=1 imgsz=16 seed=1
for s in train val; do
    mv utf/$s/circle "utf/$s/hand bag ✓ é"
    mv utf/$s/square "utf/$s/外套"
done
expect 0 "$vt" check data=utf
if ! grep -Fqx '  hand bag ✓ é        3        1        -' out.txt ||
   ! grep -Fqx '  外套                3        1        -' out.txt; then
    echo "FAIL: vt check: class rows not aligned by display width"
    sed 's/^/    /' out.txt
    failures=$((failures + 1))
fi

# segmenter: predict writes the class-id mask and, by default, the mask in class colours
expect 0 "$vt" synth data=segd task=segment classes=3 train=8 val=2 imgsz=32 seed=1
expect 0 "$vt" train data=segd model=seg-n imgsz=32 epochs=1 batch=4 plots=0 save=seg.vtm
expect 0 "$vt" predict model=seg.vtm source=segd/images/val out=segp
expect 0 "$vt" predict model=seg.vtm source=segd/images/val out=segraw color=0
if [ ! -s segp/00000_mask.png ] || [ ! -s segp/00000_color.png ] || [ ! -s segraw/00000_mask.png ] ||
   [ -e segraw/00000_color.png ]; then
    echo "FAIL: vt predict on a segmenter: colour mask missing, or written with color=0"
    ls segp segraw 2>&1 | sed 's/^/    /'
    failures=$((failures + 1))
elif command -v python3 >/dev/null 2>&1; then
    # every pixel of the colour mask is its class's colour (background black)
    if ! python3 - segp/00000_mask.png segp/00000_color.png <<'PY'
import struct, sys, zlib
def png(path):
    d = open(path, 'rb').read()
    pos, idat, w = 8, b'', 0
    while pos < len(d):
        n, kind = struct.unpack('>I4s', d[pos:pos + 8])
        body = d[pos + 8:pos + 8 + n]
        if kind == b'IHDR':
            w, h, depth, ctype = struct.unpack('>IIBB', body[:10])
        elif kind == b'IDAT':
            idat += body
        pos += 12 + n
    bpp = {0: 1, 2: 3}[ctype]
    raw, rows, prev = zlib.decompress(idat), [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (w * bpp + 1)], bytearray(raw[y * (w * bpp + 1) + 1:(y + 1) * (w * bpp + 1)])
        for i in range(len(line)):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            p = a + b - c
            pred = [0, a, b, (a + b) // 2,
                    a if abs(p - a) <= abs(p - b) and abs(p - a) <= abs(p - c) else b if abs(p - b) <= abs(p - c) else c][f]
            line[i] = (line[i] + pred) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, b''.join(rows)
pal = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40)]
w, h, _, mask = png(sys.argv[1])
_, _, _, rgb = png(sys.argv[2])
for i in range(w * h):
    want = (0, 0, 0) if mask[i] == 0 else pal[mask[i]]
    if tuple(rgb[3 * i:3 * i + 3]) != want:
        sys.exit('pixel %d: class %d drawn %s, want %s' % (i, mask[i], tuple(rgb[3 * i:3 * i + 3]), want))
PY
    then
        echo "FAIL: vt predict: the colour mask does not follow the class palette"
        failures=$((failures + 1))
    else
        echo "ok   : vt predict colour mask follows the class palette"
    fi
fi

# instance segmenter: predict prints the objects as a detector does and, with out=, writes the
# instance-id image and the overlay (the image, each object blended with its class colour)
expect 0 "$vt" synth data=insd task=instance classes=3 train=8 val=2 imgsz=64 seed=1
expect 0 "$vt" train data=insd model=iseg-n imgsz=64 epochs=1 batch=4 plots=0 save=ins.vtm
expect 0 "$vt" predict model=ins.vtm source=insd/images/val conf=0.0001 max_det=5
expect_out '^insd/images/val/00000.png: 5 instances$'
expect_out '^  (circle|square|triangle) +[0-9.]+  [0-9.]+ [0-9.]+ [0-9.]+ [0-9.]+$'
[ -e predictions/00000_instances.png ] && { echo "FAIL: vt predict: instance files without out="; failures=$((failures + 1)); }
expect 2 "$vt" predict model=ins.vtm source=insd/images/val color=0
expect_out 'color= applies to segmentation models; ins.vtm is an instance segmentation model'
expect 0 "$vt" predict model=ins.vtm source=insd/images/val conf=0.0001 max_det=5 out=insp
cp out.txt insp.txt
if [ ! -s insp/00000_instances.png ] || [ ! -s insp/00000_overlay.png ] ||
   [ ! -s insp/00001_overlay.png ]; then
    echo "FAIL: vt predict on an instance segmenter: instance or overlay PNG missing"
    ls insp 2>&1 | sed 's/^/    /'
    failures=$((failures + 1))
elif command -v python3 >/dev/null 2>&1; then
    # ids 0..count, the overlay the image where no object is and the half-and-half blend with
    # the object's class colour where one is
    if ! python3 - insd/images/val/00000.png insp/00000_instances.png insp/00000_overlay.png insp.txt <<'PY'
import struct, sys, zlib
def png(path):
    d = open(path, 'rb').read()
    pos, idat, w = 8, b'', 0
    while pos < len(d):
        n, kind = struct.unpack('>I4s', d[pos:pos + 8])
        body = d[pos + 8:pos + 8 + n]
        if kind == b'IHDR':
            w, h, depth, ctype = struct.unpack('>IIBB', body[:10])
        elif kind == b'IDAT':
            idat += body
        pos += 12 + n
    bpp = {0: 1, 2: 3}[ctype]
    raw, rows, prev = zlib.decompress(idat), [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (w * bpp + 1)], bytearray(raw[y * (w * bpp + 1) + 1:(y + 1) * (w * bpp + 1)])
        for i in range(len(line)):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            p = a + b - c
            pred = [0, a, b, (a + b) // 2,
                    a if abs(p - a) <= abs(p - b) and abs(p - a) <= abs(p - c) else b if abs(p - b) <= abs(p - c) else c][f]
            line[i] = (line[i] + pred) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, b''.join(rows)
pal = [(31, 119, 180), (255, 127, 14), (44, 160, 44)]
names = ['circle', 'square', 'triangle']
lines = open(sys.argv[4]).read().split('\n')
start = lines.index(sys.argv[1] + ': 5 instances')
cls = [names.index(l.split()[0]) for l in lines[start + 1:start + 6]]
w, h, _, img = png(sys.argv[1])
iw, ih, _, ids = png(sys.argv[2])
ow, oh, obpp, over = png(sys.argv[3])
if (iw, ih) != (w, h) or (ow, oh, obpp) != (w, h, 3):
    sys.exit('sizes: image %dx%d, instances %dx%d, overlay %dx%d x%d' % (w, h, iw, ih, ow, oh, obpp))
if max(ids) > 5:
    sys.exit('instance id %d of 5 objects' % max(ids))
for i in range(w * h):
    px = img[3 * i:3 * i + 3]
    want = tuple(px) if ids[i] == 0 else tuple((px[c] + pal[cls[ids[i] - 1]][c] + 1) // 2 for c in range(3))
    if tuple(over[3 * i:3 * i + 3]) != want:
        sys.exit('pixel %d (id %d): overlay %s, want %s' % (i, ids[i], tuple(over[3 * i:3 * i + 3]), want))
print('ids present:', sorted(set(ids)))
PY
    then
        echo "FAIL: vt predict: the instance ids or the overlay are wrong"
        failures=$((failures + 1))
    else
        echo "ok   : vt predict instance ids and overlay"
    fi
fi

# the tasks, their models and metrics are the library's (vt_task_next, vt_arch_name,
# vt_task_metrics): the tasks a wrong task= lists are the help's, every model of the help is one
# vt builds, the default model of each task's data is the one vt estimate picks, and the epoch
# table and vt val show the task's metrics
expect 2 "$vt" check data=data task=bogus
tasks=$(sed -n 's/^vt check: task=bogus: valid tasks: //p' out.txt)
case $tasks in
    classify,\ detect,\ segment*) ;;
    *) echo "FAIL: vt check task=bogus lists the tasks '$tasks'"; failures=$((failures + 1)) ;;
esac
for cmd in check synth train; do
    expect 0 "$vt" help "$cmd"
    expect_out "task=$(printf '%s' "$tasks" | sed 's/, /|/g')[ ]"
done
expect 2 "$vt" demo task=bogus   # the tasks it has synthetic data and settings for
expect_out '^vt demo: task=bogus: valid tasks: classify, detect, segment$'
expect 0 "$vt" help train
models=$(sed -n '/^  model=NAME|FILE/,/or a saved/p' out.txt | tr '\n' ' ' |
    sed 's/.*model=NAME|FILE *//; s/; or a saved.*//; s/([^)]*)//g; s/[;,]/ /g')
case " $models " in
    *" cls-n "*" det-n "*" seg-n "*) ;;
    *) echo "FAIL: vt help train lists the models '$models'"; failures=$((failures + 1)) ;;
esac
for m in $models; do
    expect 0 "$vt" info model="$m" imgsz=64 classes=3
    expect_out "^$m: 3 classes"
done
expect 0 "$vt" estimate data=data top=1
expect_out '^run: cls-n, 2 classes'
expect 0 "$vt" estimate data=segd task=segment top=1
expect_out '^run: seg-n, 4 classes'
expect 0 "$vt" train data=segd task=segment imgsz=32 epochs=1 batch=4 plots=0 save=0 progress=plain
expect_out '^training seg-n '
expect_out '^ +epoch +loss +val_loss +mIoU +pixel_acc +lr +img/s +time$'
expect_out '^final validation mIoU [0-9.]+  pixel accuracy [0-9.]+$'
expect 0 "$vt" val model=seg.vtm data=segd
expect_out '^val \(2 images\): loss [0-9.]+  mIoU [0-9.]+  pixel accuracy [0-9.]+  \('
expect 0 "$vt" val model=m.vtm data=data
expect_out '^val \(4 images\): loss [0-9.]+  top1 [0-9.]+  top5 [0-9.]+  \('
expect_no 'AP50'

# progress=off leaves out the bar and the epoch table only: the data summary and every problem
# (stderr: problems and warnings), the results (stdout) still print.  quiet=1: only errors.
# expect_split CODE COMMAND...: as expect, stdout in out.txt and stderr in err.txt
expect_split() {
    want=$1
    shift
    "$@" >out.txt 2>err.txt
    got=$?
    if [ "$got" -ne "$want" ]; then
        echo "FAIL (exit $got, expected $want): $*"
        sed 's/^/    out: /' out.txt
        sed 's/^/    err: /' err.txt
        failures=$((failures + 1))
    else
        echo "ok   (exit $got): $*"
    fi
}
expect_err() {
    if ! grep -Eq -- "$1" err.txt; then
        echo "FAIL: stderr lacks /$1/"
        sed 's/^/    /' err.txt
        failures=$((failures + 1))
    fi
}
# expect_silent: the last command printed nothing at all
expect_silent() {
    if [ -s out.txt ] || [ -s err.txt ]; then
        echo "FAIL: quiet=1 printed something"
        sed 's/^/    out: /' out.txt
        sed 's/^/    err: /' err.txt
        failures=$((failures + 1))
    fi
}
expect 0 "$vt" synth data=bad task=detect classes=3 train=8 val=4 imgsz=32 seed=1
printf '0 nan 0.5 0.2 0.2\n' >>bad/labels/train/00003.txt
printf '0 0.5 inf 0.2 0.2\n' >>bad/labels/train/00002.txt
printf '\377\330\377\340garbage' >bad/images/train/00008.jpg
cp bad/labels/train/00001.txt bad/labels/train/00008.txt
# a 1x1 PNG, and the header of a 20000x20000 one
printf '\211PNG\r\n\032\n\000\000\000\rIHDR\000\000\000\001\000\000\000\001\010\002\000\000\000\220wS\336\000\000\000\014IDATx\234c\370\317\300\000\000\003\001\001\000\311\376\222\357\000\000\000\000IEND\256B`\202' >bad/images/train/00010.png
printf '\211PNG\r\n\032\n\000\000\000\rIHDR\000\000N \000\000N \010\002\000\000\000l\022\321n\000\000\000\013IDATx\234c`\200\001\000\000\n\000\001\177\200t^\000\000\000\000IEND\256B`\202' >bad/images/train/00009.png
bad_args="imgsz=32 epochs=1 batch=4 workers=0 project=$work/runs"
expect_split 0 "$vt" train data=bad $bad_args name=off progress=off save=bad.vtm
expect_err '^data: bad \(policy=drop\): train 8 of 11 images used, .*; val 4 of 4 images used\.  2 boxes dropped: coord_range 2\.  .*truncated_jpeg 1, image_too_small 1.*\.  The problems:$'
expect_err '^  bad/labels/train/00002.txt:[0-9]+: coordinate 2 \(inf\) is outside 0..1 .*\[coord_range\]$'
expect_err '^  bad/labels/train/00003.txt:[0-9]+: coordinate 1 \(nan\) is outside 0..1 .*\[coord_range\]$'
expect_err '^  bad/images/train/00008.jpg: truncated JPEG \[truncated_jpeg\]$'
expect_err '^  bad/images/train/00009.png: PNG image too large \(20000x20000.*\[[a-z_]+\]$'
expect_err '^  bad/images/train/00010.png: 1x1 image, smaller than min_size=10 \[image_too_small\]$'
expect_err '^  all 5 problems: .*runs/detect/off/problems.txt$'
expect_out '^training det-n \('
expect_out '^final validation P [0-9.]+  R [0-9.]+  mAP50 [0-9.]+  mAP50-95 [0-9.]+$'
expect_out '^saved bad.vtm: the best weights'
expect_out '^run folder: .*runs/detect/off \(best weights'
expect_no '^data:|^ +epoch +loss|epoch 1/1|^ +1/1 '   # summary with problems: stderr; no bar, no table
# the problems in the summary are the ones of problems.txt, and of vt check
if [ "$(wc -l <runs/detect/off/problems.txt)" -ne 5 ]; then
    echo "FAIL: runs/detect/off/problems.txt does not list the 5 problems"
    failures=$((failures + 1))
fi
expect_split 0 "$vt" train data=bad $bad_args name=quiet quiet=1
expect_silent
[ -s runs/detect/quiet/problems.txt ] || { echo "FAIL: quiet=1 wrote no problems.txt"; failures=$((failures + 1)); }
expect 2 "$vt" train data=bad $bad_args quiet=1 progress=plain
expect_out 'quiet=1 prints nothing but errors; it cannot go with progress=plain'
expect 2 "$vt" train data=bad $bad_args quiet=maybe
expect_out 'quiet=maybe: expected 0 or 1'
# vt val: the summary of a dataset with problems on stderr; quiet=1 nothing
expect_split 0 "$vt" val model=bad.vtm data=bad
expect_err '^data: bad \(policy=drop\): .*The problems:$'
expect_err '^  bad/images/train/00010.png: 1x1 image'
expect_out '^val \(4 images\): loss'
expect_split 0 "$vt" val model=bad.vtm data=bad quiet=1
expect_silent
expect_split 3 "$vt" val model=no-such.vtm data=bad quiet=1
expect_err 'no-such.vtm'   # errors still print
# nc: 5 with 3 names, progress=off: said on stderr
expect 0 "$vt" synth data=ncd task=detect classes=3 train=8 val=4 imgsz=32 seed=1
sed 's/^nc: 3$/nc: 5/' ncd/data.yaml >ncd/d.yaml && mv ncd/d.yaml ncd/data.yaml
expect_split 0 "$vt" train data=ncd $bad_args save=0 progress=off
expect_err "^  ncd/data.yaml:[0-9]+: 'names' has 3 entries but 'nc' is 5; using the 3 names \[class_count\]$"
expect_out '^final validation P .*  mAP50 '
# a clean dataset: the summary on stdout; the library's notes ("vt: ...") on stderr with
# progress=off, silenced by quiet=1 (a 2-class model fine-tuned to 3 classes)
expect 0 "$vt" synth data=cls3 classes=3 train=2 val=1 imgsz=16 seed=1
expect_split 0 "$vt" train data=cls3 model=m.vtm imgsz=16 epochs=1 batch=4 save=0 progress=off
expect_out '^data: cls3 \(policy=drop\): train 6 of 6 images used; val 3 of 3 images used; no problems found$'
expect_out '^final validation top1 [0-9.]+  top5 [0-9.]+$'
expect_err '^vt: transferred [0-9]+/[0-9]+ tensors'
expect_split 0 "$vt" train data=cls3 model=m.vtm imgsz=16 epochs=1 batch=4 save=0 quiet=1
expect_silent
expect_split 0 "$vt" demo data=cls3 imgsz=16 epochs=1 batch=4 save=0 quiet=1
expect_silent

# interrupted: 4 (SIGINT while training; the weights so far are saved)
"$vt" train data=data imgsz=16 epochs=100000 batch=4 save=int.vtm progress=plain >int.txt 2>&1 &
pid=$!
i=0
while ! grep -q '^ *1/100000 ' int.txt 2>/dev/null && [ $i -lt 300 ]; do
    sleep 0.1
    i=$((i + 1))
done
kill -INT $pid
wait $pid
got=$?
if [ "$got" -ne 4 ] || ! grep -q 'interrupted' int.txt || [ ! -s int.vtm ]; then
    echo "FAIL (exit $got, expected 4, and int.vtm saved): vt train, then SIGINT"
    sed 's/^/    /' int.txt
    failures=$((failures + 1))
else
    echo "ok   (exit 4): vt train, then SIGINT"
fi

finish
