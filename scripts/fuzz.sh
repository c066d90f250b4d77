#!/usr/bin/env bash
# Fuzz the library's file readers with libFuzzer (tests/fuzz/fuzz.c): builds the library with
# clang, AddressSanitizer + UndefinedBehaviorSanitizer and coverage into build-fuzz/, writes a
# seed corpus per target, and runs each target for SECONDS (default 60).  Not part of the test
# suite (it needs clang's libFuzzer); a crash stops with the input saved as
# build-fuzz/crash-<target>-*, and the script exits 1.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]   (targets: see tests/fuzz/fuzz.c)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(catalog calib image estimate yaml labels seglabels coco masks model modelsec resume)
b=build-fuzz
san=-fsanitize=address,undefined
if [ ! -f $b/build.ninja ]; then
    CC=clang meson setup $b -Dcuda=disabled -Dtests=false -Dbench=false -Dexamples=false \
        -Dbuildtype=debugoptimized -Db_lundef=false \
        -Dc_args="$san -fsanitize=fuzzer-no-link -fno-sanitize-recover=all" \
        -Dc_link_args="$san" >/dev/null
fi
ninja -C $b libvisiontrain_objs.a >/dev/null
clang -g -O1 $san -fsanitize=fuzzer -fno-sanitize-recover=all -DVT_STATIC_DEFINE \
    -Iinclude -Ilib -I$b tests/fuzz/fuzz.c -o $b/fuzz \
    -Wl,--start-group $b/libvisiontrain_objs.a -Wl,--end-group \
    $(pkg-config --libs libpng libjpeg zlib yaml-0.1 json-c freetype2 libprotobuf-c 2>/dev/null ||
      echo -lpng16 -ljpeg -lz -lyaml -ljson-c) -lm -pthread -ldl \
    /usr/lib/x86_64-linux-gnu/blis-serial/libblis.a  # static: the library calls BLIS's context API

# seeds: one or two valid inputs per target, from the library's own formats
seeds=$b/seeds
rm -rf "$seeds" && mkdir -p "$seeds"/{catalog,calib,image,estimate,yaml,labels,seglabels,coco,masks,model,modelsec,resume}
printf '# my prices\nname,price_usd_h\nH100 SXM,2.10\n"T4",0.35\r\n' >"$seeds/catalog/prices.csv"
printf 'name,memory_gb,bandwidth_gbs,fp32_tflops,bf16_tflops,price_usd_h,tier\nMI300X,192,5300,163.4,1307,2.50,pro\n' >"$seeds/catalog/new.csv"
[ -f ../shared/data/gpu-catalog.csv ] && cp ../shared/data/gpu-catalog.csv "$seeds/catalog/" || true
cat >"$seeds/calib/cpu.txt" <<'CAL'
visiontrain-calibration 1
device cpu
device_index 0
gpu -
precision fp32
rate_flops 41000000000
bandwidth_bytes 9000000000
gemm_s0 24
layer_seconds 1.5e-05
step_seconds 5e-05
h2d_bytes 12000000000
scale 1.1
verified_max_batch 0
model cls-n
imgsz 32
row_seconds 8e-09
measured 32 0.05
measured 64 0.09
end
CAL
python3 - "$seeds" <<'PY'
import sys, zlib, struct
def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
raw = b"".join(b"\0" + bytes((x * 9 + y * 3) & 255 for x in range(12)) for y in range(10))
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 12, 10, 8, 0, 0, 0, 0)) + \
      chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
open(sys.argv[1] + "/image/gray.png", "wb").write(png)
# an 8x8 mask of classes 0/1 and the ignore value 255 (the "masks" target's image is 8x8)
raw = b"".join(b"\0" + bytes(255 if y == 7 else (x + y) % 2 for x in range(8)) for y in range(8))
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 8, 8, 8, 0, 0, 0, 0)) + \
      chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
open(sys.argv[1] + "/masks/mask.png", "wb").write(png)
PY
cp demo-data/train/circle/00000.png "$seeds/image/" 2>/dev/null || true
for py in python3 /usr/bin/python3; do # JPEG seeds need Pillow
    $py -c "from PIL import Image; Image.linear_gradient('L').resize((24, 16)).convert('RGB').save('$seeds/image/rgb.jpg', quality=80); Image.linear_gradient('L').resize((16, 16)).save('$seeds/image/gray-progressive.jpg', progressive=True)" 2>/dev/null && break
done
printf 'model=det-s\nepochs=100\nimgsz=640\nbatch=16\ntrain=5000\nval=500\nmosaic=1\n' >"$seeds/estimate/det.txt"
printf 'model=cls-n\nclasses=1000\nprecision=bf16\ngpu=H100 SXM\ngpus=8\nworkers=32\ndeadline_h=2\nbudget_usd=50\noptimizer=adamw\n' >"$seeds/estimate/cls.txt"
printf 'path: .\ntrain: images/train\nval: images/train\nnames: [a, b]\n' >"$seeds/yaml/list.yaml"
printf 'train: images/train\nval: images/train\nnc: 2\nnames:\n  0: a\n  1: b\n' >"$seeds/yaml/map.yaml"
printf '0 0.5 0.5 0.2 0.2\n1 0.25 0.25 0.1 0.3\n' >"$seeds/labels/a.txt"
printf '0 0.1 0.1 0.9 0.1 0.5 0.9\n1 0.2 0.2 0.4 0.2 0.4 0.4 0.2 0.4\n' >"$seeds/seglabels/a.txt"
cat >"$seeds/coco/a.json" <<'JSON'
{"images": [{"id": 1, "file_name": "a.png", "width": 8, "height": 8},
            {"id": 2, "file_name": "b.png", "width": 8, "height": 8}],
 "annotations": [{"id": 1, "image_id": 1, "category_id": 3, "bbox": [1, 1, 4, 4], "iscrowd": 0,
                  "segmentation": [[1, 1, 5, 1, 5, 5]]}],
 "categories": [{"id": 3, "name": "dog"}, {"id": 7, "name": "cat"}]}
JSON
# a small model file and a training checkpoint (one epoch on the dataset fuzz.c's "resume"
# target makes: RESUME_SYNTH), from the regular build's library when there is one; modelsec and
# resume get their sections as records (tag, u32 length, bytes), decompressed
rm -rf $b/seed-run && mkdir -p $b/seed-run
(cd $b/seed-run && VT_LIBRARY=$OLDPWD/build/libvisiontrain.so.0 PYTHONPATH=$OLDPWD/bindings/python \
    python3 -c "
import visiontrain as vt
vt.Model('cnn-small', 2, imgsz=16).save('../seed-model.vtm')
vt.synth_generate('cls', classes=2, train=8, val=2, imgsz=16)
with vt.Dataset('cls') as ds, vt.Model('cnn-small', 2, imgsz=16) as m:
    with vt.Trainer(m, ds, epochs=1, batch=4, imgsz=16, workers=0) as t:
        t.run()
") >/dev/null 2>&1 && cp $b/seed-model.vtm "$seeds/model/" || rm -f $b/seed-model.vtm
to_records() { # OUT.rec IN.vtm
python3 - "$1" "$2" <<'PY'
import os, struct, sys, zlib
src = sys.argv[2]
if not os.path.exists(src):
    open(sys.argv[1], "wb").write(b"META" + struct.pack("<I", 60) +
        b"arch=cnn-small\ntask=1\nnum_classes=2\nchannels=3\nimgsz=16\n".ljust(60, b"\n"))
    sys.exit(0)
d = open(src, "rb").read()
n, = struct.unpack_from("<I", d, 12)
off, out = 16, b""
for _ in range(n):
    tag, flags, raw, stored, crc = struct.unpack_from("<4sIQQI", d, off)
    body = d[off + 28: off + 28 + stored]
    if flags & 1:
        body = zlib.decompress(body)
    out += tag + struct.pack("<I", len(body)) + body
    off += 28 + stored
open(sys.argv[1], "wb").write(out)
PY
}
to_records "$seeds/modelsec/cnn-small.rec" $b/seed-model.vtm
to_records "$seeds/resume/last.rec" $b/seed-run/runs/classify/train/weights/last.vtm

rc=0
for t in "${targets[@]}"; do
    mkdir -p $b/corpus/$t
    echo "=== $t (${secs}s)"
    if ! VT_FUZZ=$t $b/fuzz -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 \
        -artifact_prefix=$b/crash-$t- -print_final_stats=1 $b/corpus/$t "$seeds/$t" \
        2>$b/fuzz-$t.log; then
        tail -40 $b/fuzz-$t.log
        rc=1
    else
        grep -E 'stat::number_of_executed_units|cov:' $b/fuzz-$t.log | tail -2
    fi
    rm -rf /tmp/vt-fuzz-$t-*
done
exit $rc
