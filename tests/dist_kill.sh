#!/bin/sh
# A rank killed with SIGKILL in the middle of a distributed run: 2 ranks of `vt train` (a
# checkpoint every epoch) under mpirun; once rank 0 has written weights/last.vtm, kill -9 rank 1
# (then, in a second job, rank 0).  The job must end within LIMIT seconds with a non-zero
# status and mpirun's message naming the killed rank; nothing may have called MPI_Abort or
# aborted; and the last.vtm on disk must load (`vt val`: the container's CRCs), the old one or
# the new one, never a torn file (the writer renames a complete temporary file over it).
#
#   dist_kill.sh VT SCRATCH_DIR
# Then a whole 2-rank run: its summary lines are printed once (rank 0) and save= loads.
# exit 0 pass, 1 fail, 77 skipped (no mpirun).
set -u
vt=$1 scratch=$2
LIMIT=60
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found"; exit 77; }
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
data=$scratch/shapes
"$vt" synth data="$data" classes=3 train=20 val=4 imgsz=32 >/dev/null || { echo "FAIL: synth"; exit 1; }

# the pid of rank $2 among the children of mpirun $1, "" when not (yet) there
rank_pid() {
    for st in /proc/[0-9]*/stat; do
        p=${st#/proc/}
        p=${p%/stat}
        # stat: pid (comm) state ppid ...: the parent is its 4th field, $7 here (a command
        # name with spaces shifts the fields: the environment check below rejects such a match)
        set -- "$1" "$2" "$p" $(cat "$st" 2>/dev/null)
        [ "${7:-}" = "$1" ] || continue
        if tr '\0' '\n' <"/proc/$3/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2"; then
            echo "$3"
            return
        fi
    done
}

for victim in 1 0; do
    run=$scratch/kill$victim
    log=$scratch/kill$victim.log
    ckpt=$run/classify/job/weights/last.vtm
    mpirun --oversubscribe --allow-run-as-root --bind-to none -np 2 \
        "$vt" train data="$data" model=cls-n epochs=1000 imgsz=32 batch=8 workers=0 val=0 \
        plots=0 progress=plain project="$run" name=job >"$log" 2>&1 &
    mp=$!
    # the first checkpoint, then a little more training (the kill lands between or during saves)
    i=0
    while [ ! -f "$ckpt" ] && [ $i -lt 1200 ] && kill -0 $mp 2>/dev/null; do
        sleep 0.1
        i=$((i + 1))
    done
    if [ ! -f "$ckpt" ]; then
        fail "rank $victim: no checkpoint $ckpt after 120 s"
        kill -9 $mp 2>/dev/null
        wait $mp
        cat "$log"
        continue
    fi
    sleep 1.5
    pid=$(rank_pid $mp $victim)
    if [ -z "$pid" ]; then
        fail "rank $victim: no process of that rank under mpirun $mp"
        kill -9 $mp 2>/dev/null
        wait $mp
        continue
    fi
    t0=$(date +%s.%N)
    kill -9 "$pid"
    i=0
    while kill -0 $mp 2>/dev/null && [ $i -lt $((LIMIT * 10)) ]; do
        sleep 0.1
        i=$((i + 1))
    done
    if kill -0 $mp 2>/dev/null; then
        fail "rank $victim killed: the job still runs after $LIMIT s"
        kill -9 $mp 2>/dev/null
    fi
    wait $mp
    rc=$?
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    [ $rc -ne 0 ] || fail "rank $victim killed: mpirun returned 0"
    grep -q "rank $victim .*signal 9" "$log" ||
        fail "rank $victim killed: mpirun's message does not name the rank and signal 9"
    if grep -Eq 'MPI_ABORT|Aborted|core dumped|Assertion' "$log"; then
        fail "rank $victim killed: something aborted:"
        grep -E 'MPI_ABORT|Aborted|core dumped|Assertion' "$log"
    fi
    if "$vt" val model="$ckpt" data="$data" workers=0 >"$scratch/val$victim.log" 2>&1; then
        ok=loads
    else
        ok="does NOT load"
        fail "rank $victim killed: $ckpt does not load:"
        cat "$scratch/val$victim.log"
    fi
    epochs=$(grep -c '^ *[0-9]*/1000 ' "$log")
    echo "kill -9 rank $victim after $epochs epochs: mpirun ended in $secs s (status $rc), the" \
         "checkpoint $ok; mpirun said: $(grep "rank $victim .*signal" "$log" | head -1)"
done
# a whole 2-rank run through the CLI: rank 0 alone prints the run's lines and writes save=
two=$scratch/two.log
if mpirun --oversubscribe --allow-run-as-root --bind-to none -np 2 \
    "$vt" train data="$data" model=cls-n epochs=2 imgsz=32 batch=8 workers=0 plots=0 \
    progress=off project="$scratch/two" name=job save="$scratch/two.vtm" >"$two" 2>&1; then
    before=$fails
    for line in "training cls-n" "done in" "final validation" "saved " "run folder: .*(best"; do
        n=$(grep -c "^$line" "$two")
        [ "$n" = 1 ] || fail "2-rank vt train: $n lines '$line...', want rank 0's alone"
    done
    "$vt" val model="$scratch/two.vtm" data="$data" workers=0 >/dev/null 2>&1 ||
        fail "2-rank vt train: save=$scratch/two.vtm does not load"
    [ $fails -eq $before ] && echo "2-rank vt train: one summary, save= written by rank 0"
else
    fail "2-rank vt train failed:"
    cat "$two"
fi
[ $fails -eq 0 ] && echo "dist_kill: ok" && exit 0
echo "dist_kill: $fails failures"
exit 1
