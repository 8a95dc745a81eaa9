#!/bin/bash
# Record the kernel launches of an (MPI) application with a plain mpirun (Open MPI).
#
#   bash jobs/mpirun/record.sh ./app arg...
#   KERNELS='stencil.*' RECORD_RANKS=0,3 NTASKS=8 bash jobs/mpirun/record.sh ./app arg...
#
# See jobs/README.md.

set -euo pipefail

me=record.sh
log() { printf 'r3 mpirun/%s: %s\n' "$me" "$*" >&2; }
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
# An Open MPI hostfile for runs over several nodes; empty: this machine.
HOSTFILE=${HOSTFILE:-}
# 1: let mpirun start more ranks than the machine has cores (small machines, CI).
OVERSUBSCRIBE=${OVERSUBSCRIBE:-0}
# The launcher, and more options for it separated by spaces (e.g. "--map-by ppr:4:node").
MPIRUN=${MPIRUN:-mpirun}
MPIRUN_EXTRA=${MPIRUN_EXTRA:-}
# ----------------------------------------------------------------------------------------------

if (( $# > 0 )); then
  app=("$@")
elif [[ -n $APP ]]; then
  read -r -a app_args <<<"$APP_ARGS"
  app=("$APP" "${app_args[@]}")
else
  die "no application: give it after the script name (bash record.sh ./app arg...) or set APP"
fi
command -v -- "${app[0]}" >/dev/null || die "application not found: ${app[0]}"
if [[ -n $R3_BIN ]]; then
  r3=$R3_BIN/r3
  [[ -x $r3 ]] || die "r3 not found: $r3 is missing or not executable (R3_BIN=$R3_BIN)"
else
  r3=$(command -v r3) || die "r3 is not on PATH; set R3_BIN to the directory that holds it"
fi
command -v "$MPIRUN" >/dev/null || die "$MPIRUN not found: install Open MPI or set MPIRUN"
[[ $NTASKS =~ ^[1-9][0-9]*$ ]] || die "NTASKS='$NTASKS' is not a task count"
[[ -z $HOSTFILE || -f $HOSTFILE ]] || die "HOSTFILE not found: $HOSTFILE"

# Open MPI refuses to start as root unless both are set; containers and CI often run as root.
if [[ $(id -u) == 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

step=("$MPIRUN" -n "$NTASKS")
[[ $OVERSUBSCRIBE == 1 ]] && step+=(--oversubscribe)
[[ -n $HOSTFILE ]] && step+=(--hostfile "$HOSTFILE")
if [[ -n $MPIRUN_EXTRA ]]; then
  read -r -a extra <<<"$MPIRUN_EXTRA"
  step+=("${extra[@]}")
fi
step+=("$r3" record -k "$KERNELS" -o "$CAPTURE" --launches "$LAUNCHES" --capture "$CAPTURE_MODE")
[[ -n $RECORD_RANKS ]] && step+=(--ranks "$RECORD_RANKS")
[[ $KOKKOS == 1 ]] && step+=(--kokkos)
step+=(-- "${app[@]}")

log "running: ${step[*]}"
exec "${step[@]}"
