#!/bin/bash
# flux: --job-name=r3-record
# flux: -N 1
# flux: -t 30m
# flux: --output=r3-record-{{id}}.out
#
# Record the kernel launches of an (MPI) application under Flux into r3 captures.
#
#   flux batch jobs/flux/record.sh ./app arg...
#   KERNELS='stencil.*' RECORD_RANKS=0,3 NTASKS=8 flux batch -N 2 jobs/flux/record.sh ./app arg...
#
# The directives above are defaults; flux batch options override them. Bank and queue: add -B
# and -q directives above, or give them to flux batch. See jobs/README.md.

set -euo pipefail

me=record.sh
log() { printf 'r3 flux/%s: %s\n' "$me" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# ---- Settings: edit the defaults here, or set the variables in the environment --------------
# The application and its arguments: the script's arguments, else APP with APP_ARGS (split at
# spaces; arguments that contain spaces go after the script name instead).
APP=${APP:-}
APP_ARGS=${APP_ARGS:-}
# Kernels to record: a regex over mangled and demangled names and Kokkos labels.
KERNELS=${KERNELS:-.*}
# Capture file; each recorded rank writes it with .rankN before the extension.
CAPTURE=${CAPTURE:-r3-capture.h5}
# Ranks to record, e.g. 0 or 0,3. Set it empty (RECORD_RANKS=) to record every rank.
RECORD_RANKS=${RECORD_RANKS-0}
# Distinct launches to record per kernel.
LAUNCHES=${LAUNCHES:-1}
# Memory to capture: reachable (from arguments and globals) or all (every live allocation).
CAPTURE_MODE=${CAPTURE_MODE:-reachable}
# 1: load the Kokkos Tools connector, so KERNELS can name Kokkos labels.
KOKKOS=${KOKKOS:-0}
# Ranks of the application.
NTASKS=${NTASKS:-4}
# Directory holding r3 (e.g. /opt/r3/bin or build/bin); empty: r3 is found on PATH.
R3_BIN=${R3_BIN:-}
# More flux run options the application needs, separated by spaces (e.g. "-g 1 -N 2").
FLUX_RUN_EXTRA=${FLUX_RUN_EXTRA:-}
# ----------------------------------------------------------------------------------------------

if (( $# > 0 )); then
  app=("$@")
elif [[ -n $APP ]]; then
  read -r -a app_args <<<"$APP_ARGS"
  app=("$APP" "${app_args[@]}")
else
  die "no application: give it after the script name (flux batch record.sh ./app arg...) or set APP"
fi
command -v -- "${app[0]}" >/dev/null || die "application not found: ${app[0]}"
if [[ -n $R3_BIN ]]; then
  r3=$R3_BIN/r3
  [[ -x $r3 ]] || die "r3 not found: $r3 is missing or not executable (R3_BIN=$R3_BIN)"
else
  r3=$(command -v r3) || die "r3 is not on PATH; set R3_BIN to the directory that holds it"
fi
command -v flux >/dev/null || die "flux not found: submit this script with flux batch"
[[ $NTASKS =~ ^[1-9][0-9]*$ ]] || die "NTASKS='$NTASKS' is not a task count"

# Parallel file systems often refuse the locks HDF5 takes; each capture has a single writer.
export HDF5_USE_FILE_LOCKING=${HDF5_USE_FILE_LOCKING:-FALSE}

step=(flux run -n "$NTASKS")
if [[ -n $FLUX_RUN_EXTRA ]]; then
  read -r -a extra <<<"$FLUX_RUN_EXTRA"
  step+=("${extra[@]}")
fi
step+=("$r3" record -k "$KERNELS" -o "$CAPTURE" --launches "$LAUNCHES" --capture "$CAPTURE_MODE")
[[ -n $RECORD_RANKS ]] && step+=(--ranks "$RECORD_RANKS")
[[ $KOKKOS == 1 ]] && step+=(--kokkos)
step+=(-- "${app[@]}")

log "running: ${step[*]}"
exec "${step[@]}"
