#!/bin/sh
# vt train device=0,1,...: the launcher of one process (rank) per GPU, on a machine without
# GPUs.  The list's checks; no launch inside a rank (WORLD_SIZE etc. set); a real launch whose
# ranks fail on the missing GPUs; and, with stand-in ranks (VT_TEST_SPAWN_EXEC, a test-only
# hook of the launcher), each rank's environment, a failing rank stopping the others (SIGTERM,
# then SIGKILL after 30 s), SIGTERM / SIGINT forwarded, and ranks dying with a killed launcher.
#
#   test_vt_spawn.sh VT
set -u
vt=$1 scratch_name=vt-spawn
. "$(dirname "$0")/vt_harness.sh"

# fail CASE WHAT: a failed check, named.
fail() {
    echo "FAIL [$1]: $2"
    [ -f out.txt ] && sed 's/^/    /' out.txt
    failures=$((failures + 1))
}

# gone PID: the process has ended (a zombie counts: it runs no more).
gone() {
    [ ! -e "/proc/$1" ] || grep -q '^[0-9]* (.*) Z' "/proc/$1/stat" 2>/dev/null
}

# The stand-in rank: records its variables, arguments and pid in ranks/, then plays the part
# RANK_PLAY (inherited through the launcher) gives it.
mkdir ranks
cat >ranks/rank.sh <<'EOF'
#!/bin/sh
d=$(dirname "$0")
env | grep -E '^(RANK|WORLD_SIZE|LOCAL_RANK|LOCAL_WORLD_SIZE|MASTER_ADDR|MASTER_PORT)=' |
    LC_ALL=C sort >"$d/rank$RANK.env"
echo "$*" >"$d/rank$RANK.args"
echo $$ >"$d/rank$RANK.tmp" && mv "$d/rank$RANK.tmp" "$d/rank$RANK.pid"
case ${RANK_PLAY:-}:$RANK in
ok:*) exit 0 ;;
fail:1 | stubborn:1) sleep 1; exit 3 ;;
kill:1) sleep 1; kill -KILL $$ ;;
stubborn:0) trap '' TERM; exec sleep 300 ;;
*) exec sleep 300 ;;
esac
EOF
chmod +x ranks/rank.sh
fake=$work/ranks/rank.sh

# ranks_started: how many stand-in ranks wrote their pid.
ranks_started() {
    set -- ranks/rank[0-9]*.pid
    [ -e "$1" ] && echo $# || echo 0
}

# all_ranks_gone CASE: every stand-in rank that started has ended.
all_ranks_gone() {
    for f in ranks/rank[0-9]*.pid; do
        [ -e "$f" ] || continue
        pid=$(cat "$f")
        gone "$pid" || { fail "$1" "rank pid $pid ($f) still running"; kill -KILL "$pid"; }
    done
}

# launch CASE PLAY ARGS...: run vt train with stand-in ranks in the background (pid in lpid),
# after clearing ranks/.
launch() {
    play=$2
    shift 2
    rm -f ranks/rank[0-9]*.*
    RANK_PLAY=$play VT_TEST_SPAWN_EXEC=$fake "$vt" train data=$work/nodata model=cls-n "$@" \
        >out.txt 2>&1 &
    lpid=$!
}

# finish_launch CASE SECONDS: wait up to SECONDS for the launcher; rc its exit status (999 if
# it was still running: then it and its ranks are killed), took the seconds it took.
finish_launch() {
    t0=$(date +%s) took=0
    while ! gone "$lpid" && [ "$took" -le "$2" ]; do
        sleep 0.2
        took=$(($(date +%s) - t0))
    done
    if gone "$lpid"; then
        wait "$lpid"
        rc=$?
    else
        fail "$1" "the launcher did not end within $2 s"
        kill -KILL "$lpid"
        wait "$lpid"
        rc=999
    fi
}

# wait_ranks N: until N stand-in ranks have started (at most 10 s).
wait_ranks() {
    i=0
    while [ "$(ranks_started)" -lt "$1" ] && [ $i -lt 50 ]; do
        sleep 0.2
        i=$((i + 1))
    done
}

# ---- the list's checks: usage errors before any rank starts --------------------------------
for bad in 0,0 cpu,0 0,x 0, 0,64 1,2,1; do
    rm -f ranks/rank[0-9]*.*
    expect 2 env VT_TEST_SPAWN_EXEC="$fake" "$vt" train data=$work/nodata device=$bad
    case $bad in
    0,0 | 1,2,1) expect_out "device=$bad: GPU [0-9]+ is listed twice" ;;
    *) expect_out "device=$bad: '[^']*' is not a GPU index" ;;
    esac
    expect_no 'ranks, one per GPU'
    [ "$(ranks_started)" -eq 0 ] || fail "device=$bad" "a rank was started"
done

# ---- inside a rank already (any launcher's world size set): no launch ----------------------
"$vt" synth data=single classes=3 train=8 val=4 imgsz=32 >/dev/null 2>&1 ||
    fail synth "vt synth data=single failed"
for var in WORLD_SIZE OMPI_COMM_WORLD_SIZE PMI_SIZE PMIX_SIZE; do
    rm -f ranks/rank[0-9]*.*
    env "$var=1" VT_TEST_SPAWN_EXEC="$fake" timeout 120 "$vt" train data=single model=cls-n \
        epochs=1 imgsz=32 device=0,1 >out.txt 2>&1
    rc=$?
    if [ $rc -eq 0 ] || [ $rc -eq 124 ]; then fail "$var=1 device=0,1" "exit $rc, expected a failure"
    else echo "ok   (exit $rc): $var=1 vt train ... device=0,1 (one process)"; fi
    expect_no 'ranks, one per GPU'
    expect_out 'device|GPU'
    [ "$(ranks_started)" -eq 0 ] || fail "$var=1 device=0,1" "a rank was started"
done

# ---- a real launch: two ranks of vt itself, on the GPUs this machine lacks -----------------
data=$work/spawn-data-$$
"$vt" synth data="$data" classes=3 train=8 val=4 imgsz=32 >/dev/null 2>&1 ||
    fail synth "vt synth data=$data failed"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
timeout 120 "$vt" train data="$data" model=cls-n epochs=1 imgsz=32 device=0,1 >out.txt 2>&1
rc=$?
grep -Eq '^vt train: 2 ranks, one per GPU \(device=0,1\), rendezvous 127\.0\.0\.1:[0-9]+$' out.txt ||
    fail "real device=0,1" "no launcher line for 2 ranks"
if [ "${gpus:-0}" -ge 2 ]; then
    echo "note: $gpus GPUs here; the real launch may succeed (exit $rc): not checked"
elif [ $rc -eq 0 ] || [ $rc -eq 124 ]; then
    fail "real device=0,1" "exit $rc, expected the ranks to fail without GPUs"
else
    echo "ok   (exit $rc): vt train data=... device=0,1 without GPUs"
    grep -v -e 'ranks, one per GPU' -e 'rank [0-9] failed' out.txt | grep -Eq 'device|GPU' ||
        fail "real device=0,1" "no message from the ranks about the device or GPU"
    grep -Eq '^vt train: rank [01] failed \((exit code [0-9]+|killed by signal [0-9]+)\)' out.txt ||
        fail "real device=0,1" "no 'rank R failed' line"
fi
sleep 0.5
if pgrep -f "$data" >/dev/null; then
    fail "real device=0,1" "vt processes left running: $(pgrep -af "$data")"
    for pid in $(pgrep -f "$data"); do kill -KILL "$pid"; done
fi

# ---- stand-in ranks: the environment of each, all exiting 0 --------------------------------
launch "ok device=0,1,2" ok epochs=1 device=0,1,2
finish_launch "ok device=0,1,2" 30
[ $rc -eq 0 ] || fail "ok device=0,1,2" "exit $rc, expected 0"
port=$(sed -n 's/^vt train: 3 ranks, one per GPU (device=0,1,2), rendezvous 127\.0\.0\.1:\([0-9]*\)$/\1/p' out.txt)
[ -n "$port" ] || fail "ok device=0,1,2" "no launcher line for 3 ranks"
for r in 0 1 2; do
    printf 'LOCAL_RANK=%s\nLOCAL_WORLD_SIZE=3\nMASTER_ADDR=127.0.0.1\nMASTER_PORT=%s\nRANK=%s\nWORLD_SIZE=3\n' \
        $r "$port" $r >want.env
    cmp -s want.env ranks/rank$r.env ||
        fail "ok device=0,1,2" "rank $r's variables: $(tr '\n' ' ' <ranks/rank$r.env 2>&1)"
    [ "$(cat ranks/rank$r.args 2>&1)" = "train data=$work/nodata model=cls-n epochs=1 device=0,1,2" ] ||
        fail "ok device=0,1,2" "rank $r's arguments: $(cat ranks/rank$r.args 2>&1)"
done
[ -z "$(grep -e 'failed' out.txt)" ] || fail "ok device=0,1,2" "a failure line"
echo "ok   (exit $rc): 3 stand-in ranks, each with its variables (port $port)"

# ---- a rank fails: the others are stopped, its exit code is the launcher's -----------------
launch "rank 1 exits 3" fail device=0,1
wait_ranks 2
finish_launch "rank 1 exits 3" 35
[ $rc -eq 3 ] || fail "rank 1 exits 3" "exit $rc, expected 3"
grep -q '^vt train: rank 1 failed (exit code 3); stopped the other ranks$' out.txt ||
    fail "rank 1 exits 3" "no line 'rank 1 failed (exit code 3); stopped the other ranks'"
all_ranks_gone "rank 1 exits 3"
echo "ok   (exit $rc, ${took}s): rank 1 exits 3, rank 0 stopped"

launch "rank 1 killed" kill device=0,1
wait_ranks 2
finish_launch "rank 1 killed" 35
[ $rc -eq 137 ] || fail "rank 1 killed" "exit $rc, expected 137 (128 + SIGKILL)"
grep -q '^vt train: rank 1 failed (killed by signal 9); stopped the other ranks$' out.txt ||
    fail "rank 1 killed" "no line 'rank 1 failed (killed by signal 9)'"
all_ranks_gone "rank 1 killed"
echo "ok   (exit $rc, ${took}s): rank 1 killed by SIGKILL, rank 0 stopped"

# a rank that ignores SIGTERM gets SIGKILL 30 s later
launch "rank 0 ignores SIGTERM" stubborn device=0,1
wait_ranks 2
finish_launch "rank 0 ignores SIGTERM" 45
[ $rc -eq 3 ] || fail "rank 0 ignores SIGTERM" "exit $rc, expected 3"
[ "$took" -ge 29 ] || fail "rank 0 ignores SIGTERM" "ended after ${took}s, before the 30 s"
grep -q 'still running 30 s after SIGTERM: killed' out.txt ||
    fail "rank 0 ignores SIGTERM" "no line about the SIGKILL"
all_ranks_gone "rank 0 ignores SIGTERM"
echo "ok   (exit $rc, ${took}s): rank 0 ignored SIGTERM, killed after 30 s"

# ---- signals to the launcher reach the ranks -----------------------------------------------
launch "SIGTERM to the launcher" sleep device=0,1
wait_ranks 2
kill -TERM "$lpid"
finish_launch "SIGTERM to the launcher" 35
[ $rc -eq 143 ] || fail "SIGTERM to the launcher" "exit $rc, expected 143 (the ranks' 128 + SIGTERM)"
all_ranks_gone "SIGTERM to the launcher"
echo "ok   (exit $rc, ${took}s): SIGTERM forwarded to both ranks"

# SIGINT: a background job of sh starts with SIGINT ignored, which its ranks would inherit;
# env --default-signal (coreutils 8.31) restores it
if env --default-signal=INT true 2>/dev/null; then
    rm -f ranks/rank[0-9]*.*
    RANK_PLAY=sleep VT_TEST_SPAWN_EXEC=$fake env --default-signal=INT "$vt" train \
        data=$work/nodata device=0,1 >out.txt 2>&1 &
    lpid=$!
    wait_ranks 2
    kill -INT "$lpid"
    finish_launch "SIGINT to the launcher" 35
    [ $rc -eq 130 ] || fail "SIGINT to the launcher" "exit $rc, expected 130 (the ranks' 128 + SIGINT)"
    all_ranks_gone "SIGINT to the launcher"
    echo "ok   (exit $rc, ${took}s): SIGINT forwarded to both ranks"
else
    echo "skip: SIGINT forwarding (no env --default-signal)"
fi

# the launcher killed outright: its ranks die with it
launch "launcher killed" sleep device=0,1
wait_ranks 2
kill -KILL "$lpid"
wait "$lpid" 2>/dev/null
sleep 1
all_ranks_gone "launcher killed"
echo "ok: the launcher killed with SIGKILL, its ranks ended"

finish
