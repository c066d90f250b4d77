#!/bin/sh
# vt train / vt val tell the truth about the data: the data summary (problems by reason,
# file:line examples, problems.txt in the run folder), vt check and vt train agreeing on the
# same broken datasets, policy= for train and val, and batch=1 refused with its reason.
#
#   test_vt_data.sh VT
set -u
vt=$1 scratch_name=vt-data
. "$(dirname "$0")/vt_harness.sh"

# A 1x1 RGB PNG, written with printf (no image tools needed).
tiny_png() {
    printf '\211PNG\r\n\032\n\000\000\000\rIHDR\000\000\000\001\000\000\000\001\010\002\000\000\000\220wS\336\000\000\000\014IDATx\234c\370\317\300\000\000\003\001\001\000\311\376\222\357\000\000\000\000IEND\256B`\202' >"$1"
}

tr_args="imgsz=32 epochs=1 batch=4 workers=0 project=$work/runs"

# ---- bad labels: a garbage line, class -1, NaN coordinates, a 10,000-character line ----
expect 0 "$vt" synth data=det task=detect classes=3 train=8 val=4 imgsz=32 seed=1
printf 'garbage line here\n' >>det/labels/train/00000.txt
printf -- '-1 0.5 0.5 0.2 0.2\n' >>det/labels/train/00001.txt
printf '0 nan 0.5 0.2 0.2\n' >>det/labels/train/00003.txt
awk 'BEGIN { s = ""; for (i = 0; i < 10000; i++) s = s "x"; print s }' >>det/labels/train/00004.txt
expect 0 "$vt" check data=det
expect_out 'problems \(4\)'
expect 0 "$vt" train data=det $tr_args
expect_out '^data: det \(policy=drop\): train 8 of 8 images used; val 4 of 4 images used\.  4 boxes dropped: bad_line 2, class_range 1, coord_range 1\.'
expect_out '^  det/labels/train/00000.txt:[0-9]+: 3 columns, expected 5 .*\[bad_line\]$'
expect_out '^  det/labels/train/00001.txt:[0-9]+: class -1 is outside 0..2.*\[class_range\]$'
expect_out '^  all 4 problems: .*runs/detect/train/problems.txt$'
if [ "$(wc -l <runs/detect/train/problems.txt)" -ne 4 ] ||
    ! grep -q '00004.txt:[0-9]*: 1 columns' runs/detect/train/problems.txt; then
    echo "FAIL: runs/detect/train/problems.txt does not list the 4 problems"
    cat runs/detect/train/problems.txt
    failures=$((failures + 1))
fi
expect 0 "$vt" train data=det $tr_args save=0
expect_out "^  all 4 problems: save=0 writes no run folder; 'vt check data=det' lists them$"

# ---- policy= for train and val ----
expect 0 "$vt" train data=det $tr_args policy=skip save=det.vtm
expect_out 'train 4 of 8 images used, 4 skipped \(label problems\)'
expect 3 "$vt" train data=det $tr_args policy=fail
expect_out 'det/labels/train/00000.txt:[0-9]+: 3 columns.*\(policy=fail\)'
expect 2 "$vt" train data=det $tr_args policy=maybe
expect_out 'policy=maybe: valid values: drop, skip, fail'
expect 0 "$vt" val model=det.vtm data=det policy=skip split=train
expect_out 'train 4 of 8 images used, 4 skipped'
expect_out '^train \(4 images\): loss'
expect 3 "$vt" val model=det.vtm data=det policy=fail

# ---- check and train agree: nc vs names ----
expect 0 "$vt" synth data=nc task=detect classes=3 train=8 val=4 imgsz=32 seed=1
sed 's/^nc: 3$/nc: 5/' nc/data.yaml >nc/d.yaml && mv nc/d.yaml nc/data.yaml
expect 0 "$vt" check data=nc
expect_out "nc/data.yaml:[0-9]+: 'names' has 3 entries but 'nc' is 5; using the 3 names \[class_count\]"
expect 0 "$vt" train data=nc $tr_args save=0
expect_out "nc/data.yaml:[0-9]+: 'names' has 3 entries but 'nc' is 5; using the 3 names \[class_count\]"
expect 3 "$vt" check data=nc policy=fail
expect 3 "$vt" train data=nc $tr_args policy=fail

# ---- check and train agree: a class folder that is a symlink loop, a 1x1 image ----
expect 0 "$vt" synth data=cls classes=2 train=6 val=2 imgsz=16 seed=1
ln -s . cls/train/loop
loopmsg='cls/train/loop: class folder is a symbolic link back to cls/train \(a loop\); it has no images of its own \[empty_split\]'
expect 0 "$vt" check data=cls
expect_out "$loopmsg"
expect 0 "$vt" train data=cls imgsz=16 epochs=1 batch=4 save=0
expect_out "$loopmsg"
tiny_png cls/train/circle/tiny.png
tinymsg='cls/train/circle/tiny.png: 1x1 image, smaller than min_size=10 \[image_too_small\]'
expect 3 "$vt" check data=cls
expect_out "$tinymsg"
expect 0 "$vt" train data=cls imgsz=16 epochs=1 batch=4 save=0
expect_out "$tinymsg"
expect_out 'train 12 of 13 images used, 1 outside the size limits'
expect 0 "$vt" check data=cls min_size=1
expect_no 'tiny.png'
expect 0 "$vt" train data=cls imgsz=16 epochs=1 batch=4 save=0 min_size=1
expect_out 'train 13 of 13 images used'

# ---- batch=1: refused with the reason ----
expect 2 "$vt" train data=cls imgsz=16 epochs=1 batch=1 save=0
expect_out 'batch=1: training needs at least 2 images a batch \(batch normalization\)'
expect_no 'could be read'
expect 0 "$vt" train data=cls imgsz=16 epochs=1 batch=2 save=0

# ---- the dataset tools take task= and policy= (an instance set read as one) ----
expect 0 "$vt" synth data=inst task=instance classes=3 train=8 val=4 imgsz=32 seed=1
expect 0 "$vt" dataset stats data=inst task=instance policy=drop
expect_out '^dataset inst: instance segmentation, 3 classes'
expect 0 "$vt" dataset subset data=inst task=instance out=inst-sub fraction=0.5
expect_out '^wrote inst-sub/data.yaml'

finish
