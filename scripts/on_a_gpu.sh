#!/usr/bin/env bash
# Every gpucheck command on a GPU machine (one H100/H200 is enough), from a fresh checkout, in
# 8 minutes at most: doctor (text, JSON, --deep), procs, watch, bench (sustained run; the copy
# matrix with two GPUs or more) next to a hand-written reference, fit --measure on a small
# model, explain on a kernel log, snapshot, and preflight where this gpucheck has it.
#
#   OUT=/tmp/gpu-run scripts/on_a_gpu.sh
#
# Writes each command's stdout and stderr to $OUT/outputs/NAME.out and NAME.err, one line per
# command to $OUT/summary.txt (its exit status and seconds), and all of it to
# $OUT/outputs.tar.gz (one file to fetch). Makes its own venv ($ON_A_GPU_VENV, default
# .venv-gpu in the checkout) with `pip install -e .`; torch from the package registry where it
# can be reached, else the torch parts are skipped with a line saying so. ON_A_GPU_PYTHON=PATH
# uses an interpreter that already has gpucheck (and torch) instead. Every command runs under
# `timeout`; a command that would outlast the budget (ON_A_GPU_BUDGET_S, 480) is cut short,
# and one that finds no time left is skipped with a line in the summary. Exit 0 when the run
# completed (each command's own verdict is in the summary), 2 on a usage error.
set -u

REPO=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$REPO/on-a-gpu-out}
BUDGET=${ON_A_GPU_BUDGET_S:-480}
VENV=${ON_A_GPU_VENV:-$REPO/.venv-gpu}
case $BUDGET in '' | *[!0-9]*)
    echo "on_a_gpu.sh: ON_A_GPU_BUDGET_S must be a whole number of seconds" >&2
    exit 2
    ;;
esac
mkdir -p "$OUT/outputs" || { echo "on_a_gpu.sh: cannot write to $OUT" >&2; exit 2; }
RAW=$OUT/outputs
SUMMARY=$OUT/summary.txt
: >"$SUMMARY"
START=$SECONDS

note() { echo "$*" | tee -a "$SUMMARY"; }

# step NAME SECONDS COMMAND...: run under timeout, cut to what is left of the budget.
step() {
    local name=$1 limit=$2
    shift 2
    local left=$((BUDGET - (SECONDS - START)))
    if ((left < 5)); then
        note "$name: skipped (the ${BUDGET} s budget is spent)"
        return 0
    fi
    ((limit > left)) && limit=$left
    local t0=$SECONDS rc=0
    timeout -k 5 "$limit" "$@" >"$RAW/$name.out" 2>"$RAW/$name.err" || rc=$?
    local verdict="exit $rc"
    ((rc == 124 || rc == 137)) && verdict="timed out after ${limit} s"
    note "$name: $verdict in $((SECONDS - t0)) s"
}

# --- the environment ---------------------------------------------------------------------
if [ -n "${ON_A_GPU_PYTHON:-}" ]; then
    PY=$ON_A_GPU_PYTHON
else
    PY=$VENV/bin/python
    if [ ! -x "$PY" ]; then
        step venv 60 python3 -m venv "$VENV"
    fi
    step install-gpucheck 120 "$PY" -m pip install -q -e "$REPO"
fi
if ! "$PY" -c "import gpucheck" 2>/dev/null; then
    note "gpucheck could not be installed in $PY: see $RAW/install-gpucheck.err"
    tar -czf "$OUT/outputs.tar.gz" -C "$OUT" outputs summary.txt
    exit 0
fi
if ! "$PY" -c "import torch" 2>/dev/null && [ -z "${ON_A_GPU_PYTHON:-}" ]; then
    step install-torch 200 "$PY" -m pip install -q torch
fi
TORCH=0
"$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null && TORCH=1
if ((TORCH == 0)); then
    note "torch with CUDA is not available in $PY: doctor --deep, bench, fit --measure and the bench reference run without it or are skipped"
fi
GC=("$PY" -m gpucheck)
"$PY" -c "import gpucheck, platform; print('gpucheck', gpucheck.__version__, 'python', platform.python_version())" >"$RAW/versions.out" 2>&1
nvidia-smi >"$RAW/nvidia-smi.out" 2>&1 || true

# --- the commands ------------------------------------------------------------------------
step doctor 60 "${GC[@]}" doctor
step doctor-json 60 "${GC[@]}" doctor --json -o "$RAW/doctor.json"
step doctor-deep 120 "${GC[@]}" doctor --deep --json -o "$RAW/doctor-deep.json"
step snapshot 60 "${GC[@]}" snapshot -o "$RAW/snapshot.json"
step procs 20 "${GC[@]}" procs
step procs-json 20 "${GC[@]}" procs --json
step watch 20 "${GC[@]}" watch --interval 1 --duration 5s --summary -o "$RAW/watch.csv"

# explain: this machine's own NVRM lines where the kernel log is readable, and a captured one.
cat >"$RAW/kernel-log-sample.txt" <<'EOF'
[ 4021.338571] NVRM: Xid (PCI:0000:18:00): 79, pid=2741, name=python, GPU has fallen off the bus.
[ 4021.338602] NVRM: GPU 0000:18:00.0: GPU has fallen off the bus.
EOF
step explain-sample 20 "${GC[@]}" explain "$RAW/kernel-log-sample.txt"
if dmesg 2>/dev/null | grep -E 'NVRM|nvidia' >"$RAW/kernel-log-here.txt" && [ -s "$RAW/kernel-log-here.txt" ]; then
    step explain-here 20 "${GC[@]}" explain "$RAW/kernel-log-here.txt"
else
    note "explain-here: skipped (no readable NVRM lines in this kernel log)"
fi

if ((TORCH == 1)); then
    step bench 150 "${GC[@]}" bench --duration 20 --json -o "$RAW/bench.json"
    step bench-vs-reference 90 "$PY" "$REPO/benchmarks/bench_vs_reference.py" --python "$PY" --device cuda --rounds 2
    cat >"$RAW/tiny_model.py" <<'EOF'
import torch


def make() -> torch.nn.Module:
    """A small MLP for `fit --measure`: 4 layers of 2048, about 12.6M parameters."""
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(2048, 2048), torch.nn.GELU()]
    return torch.nn.Sequential(*layers)
EOF
    step fit-measure 60 env PYTHONPATH="$RAW" "${GC[@]}" fit --torch-module tiny_model:make --input 2048 --batch 64 --measure --json
else
    step bench 90 "${GC[@]}" bench --quick --json -o "$RAW/bench.json"
    note "bench-vs-reference, fit-measure: skipped (no torch with CUDA)"
fi

if "${GC[@]}" preflight --help >/dev/null 2>&1; then
    step preflight 60 "${GC[@]}" preflight
else
    note "preflight: skipped (this gpucheck has no preflight command)"
fi

note "total: $((SECONDS - START)) s of ${BUDGET} s"
tar -czf "$OUT/outputs.tar.gz" -C "$OUT" outputs summary.txt
exit 0
