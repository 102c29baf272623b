#!/usr/bin/env bash
# One prepared run on a machine with an NVIDIA GPU: records what envdoctor's probes and smoke test
# see there, at the default size and at a large one. Installs nothing; finishes in under 3 minutes.
#
#   scripts/device_check.sh [OUT_DIR]      (default: $OUT, else ./device-check-<time>)
#   PYTHON=/path/to/python scripts/device_check.sh   (an interpreter with envdoctor's deps and torch)
#
# Writes to OUT_DIR: nvidia-smi.txt, snapshot-default.json (a fixture candidate: copy it to
# fixtures/linux-<gpu>-....json, replacing this machine's paths with generic ones and filling
# "sources"), check-default.json and .txt (the report of that snapshot),
# check-live.json (a live `envdoctor check --format json`), check-4096.json (smoke test at 4096),
# and summary.txt (exit codes and seconds of every step). Exit 0 when every step ran; envdoctor's
# own exit 1 ("problems found") is a result, not a failure of this script.
set -uo pipefail
cd "$(dirname "$0")/.."

out="${1:-${OUT:-device-check-$(date +%Y%m%d-%H%M%S)}}"
mkdir -p "$out"
py="${PYTHON:-}"
if [ -z "$py" ]; then
  if [ -x .venv/bin/python ]; then py=.venv/bin/python; else py=python3; fi
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # envdoctor from this checkout, not installed
limit=50   # seconds per envdoctor run: 3 runs + nvidia-smi stay under 3 minutes
summary="$out/summary.txt"
: >"$summary"
failed=0

step() {  # step NAME ACCEPTED_CODES COMMAND... : run with a time limit, log code and seconds
  local name=$1 accepted=$2 started code
  shift 2
  started=$(date +%s)
  timeout --kill-after=5 "$((limit + 10))" "$@" >"$out/$name.stdout" 2>"$out/$name.stderr"
  code=$?
  echo "$name exit=$code seconds=$(($(date +%s) - started))" >>"$summary"
  case " $accepted " in *" $code "*) ;; *) failed=1 ;; esac
  [ -s "$out/$name.stdout" ] || rm -f "$out/$name.stdout"
  [ -s "$out/$name.stderr" ] || rm -f "$out/$name.stderr"
}

{
  echo "python: $py ($("$py" -c 'import sys; print(sys.version.split()[0])' 2>&1))"
  echo "torch: $("$py" -c 'import torch; print(torch.__version__, torch.version.cuda)' 2>/dev/null)"
  echo "envdoctor: $("$py" -m envdoctor --version 2>&1 | tail -1)"
} >>"$summary"
if ! "$py" -c 'import envdoctor.cli.root, torch' 2>"$out/imports.stderr"; then
  echo "cannot run: $py lacks envdoctor's dependencies or torch (this script installs nothing)" >>"$summary"
  tail -3 "$out/imports.stderr" >>"$summary"
  cat "$summary"
  exit 2
fi

ed=("$py" -m envdoctor)
if command -v nvidia-smi >/dev/null; then
  step nvidia-smi "0" nvidia-smi
  [ -f "$out/nvidia-smi.stdout" ] && mv "$out/nvidia-smi.stdout" "$out/nvidia-smi.txt"
fi
step snapshot-default "0" "${ed[@]}" snapshot --timeout "$limit" -o "$out/snapshot-default.json" \
  --description "scripts/device_check.sh: envdoctor snapshot with the default smoke size"
if [ -f "$out/snapshot-default.json" ]; then
  step check-default-json "0 1" "${ed[@]}" check --from "$out/snapshot-default.json" --format json \
    -o "$out/check-default.json"
  step check-default-txt "0 1" "${ed[@]}" check --from "$out/snapshot-default.json" \
    -o "$out/check-default.txt"
fi
step check-live "0 1" "${ed[@]}" check --format json --timeout "$limit" -o "$out/check-live.json"
step check-4096 "0 1" "${ed[@]}" check --format json --timeout "$limit" --smoke-size 4096 \
  -o "$out/check-4096.json"

cat "$summary"
[ -f "$out/check-default.txt" ] && cat "$out/check-default.txt"
exit "$failed"
