#!/bin/bash
# r3 tuning job with a plain mpirun (Open MPI): a workstation, a cloud VM, or a cluster whose
# scheduler is driven by hand. Rank 0 searches, one evaluator rank per GPU replays candidates.
#
#   bash jobs/mpirun/tune.sh [path/to/tune.yaml]
#   GPUS_PER_NODE=2 OVERSUBSCRIBE=1 bash jobs/mpirun/tune.sh examples/demo/tune.yaml   (host backend)
#   NODES=4 GPUS_PER_NODE=4 HOSTFILE=hosts TIME_LIMIT=12h bash jobs/mpirun/tune.sh tune.yaml
#
# Run it again to continue a run that stopped: it resumes from the run database. See
# jobs/README.md.

set -euo pipefail

me=tune.sh
log() { printf 'r3 mpirun/%s: %s\n' "$me" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# ---- Settings: edit the defaults here, or set the variables in the environment --------------
# The tuning configuration; the script's first argument wins. Results go to its output.directory
# (default <tune.yaml dir>/r3-results).
TUNE_YAML=${1:-${TUNE_YAML:-tune.yaml}}
# Directory holding r3-mpi (e.g. /opt/r3/bin or build/bin); empty: r3-mpi is found on PATH.
R3_BIN=${R3_BIN:-}
# Nodes, and evaluators per node: one per GPU (default: the GPUs nvidia-smi lists here). With
# the host backend any number; a CPU-only machine must set it.
NODES=${NODES:-1}
GPUS_PER_NODE=${GPUS_PER_NODE:-}
# For NODES > 1: an Open MPI hostfile, first host with slots=GPUS_PER_NODE+1 (it also runs
# rank 0), every other host with slots=GPUS_PER_NODE.
HOSTFILE=${HOSTFILE:-}
# 1: let mpirun start more ranks than the machine has cores (small machines, CI).
OVERSUBSCRIBE=${OVERSUBSCRIBE:-0}
# The time the job may run (seconds, or a number with s, m, h or d); sets R3_JOB_END_TIME so that
# r3-mpi stops budget.job_end_margin before it. Empty: no limit beyond tune.yaml's budget.
TIME_LIMIT=${TIME_LIMIT:-}
# The launcher, and more options for it separated by spaces (e.g. "-x OPENAI_API_KEY").
MPIRUN=${MPIRUN:-mpirun}
MPIRUN_EXTRA=${MPIRUN_EXTRA:-}
# ----------------------------------------------------------------------------------------------

start=$(date +%s)
is_count() { [[ $1 =~ ^[0-9]+$ ]] && (( 10#$1 > 0 )); }

# A duration (90, 90s, 30m, 4h, 1d) in seconds.
duration_seconds() {
  [[ $1 =~ ^([0-9]+)([smhd]?)$ ]] || return 1
  local n=$(( 10#${BASH_REMATCH[1]} ))
  case ${BASH_REMATCH[2]} in
    m) n=$(( n * 60 )) ;;
    h) n=$(( n * 3600 )) ;;
    d) n=$(( n * 86400 )) ;;
  esac
  echo "$n"
}

[[ -f $TUNE_YAML ]] || die "tune.yaml not found: $TUNE_YAML (pass its path as the first argument or set TUNE_YAML)"
if [[ -n $R3_BIN ]]; then
  r3_mpi=$R3_BIN/r3-mpi
  [[ -x $r3_mpi ]] || die "r3-mpi not found: $r3_mpi is missing or not executable (R3_BIN=$R3_BIN)"
else
  r3_mpi=$(command -v r3-mpi) || die "r3-mpi is not on PATH; set R3_BIN to the directory that holds it"
fi
command -v "$MPIRUN" >/dev/null || die "$MPIRUN not found: install Open MPI or set MPIRUN"

if [[ -z $GPUS_PER_NODE ]] && command -v nvidia-smi >/dev/null; then
  GPUS_PER_NODE=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
fi
is_count "$NODES" || die "NODES='$NODES' is not a node count"
is_count "$GPUS_PER_NODE" ||
  die "GPUS_PER_NODE='$GPUS_PER_NODE': set it (no GPU found here; with the host backend, e.g. 2)"
(( NODES == 1 )) || [[ -n $HOSTFILE ]] || die "NODES=$NODES needs a HOSTFILE naming the nodes"
[[ -z $HOSTFILE || -f $HOSTFILE ]] || die "HOSTFILE not found: $HOSTFILE"

if [[ -n $TIME_LIMIT && -z ${R3_JOB_END_TIME:-} ]]; then
  limit=$(duration_seconds "$TIME_LIMIT") || die "TIME_LIMIT='$TIME_LIMIT': use seconds or a number with s, m, h or d"
  export R3_JOB_END_TIME=$(( start + limit ))
fi
# Open MPI refuses to start as root unless both are set; containers and CI often run as root.
if [[ $(id -u) == 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# Seconds since start on every log line show how long each generation takes.
export R3_LOG_TIME=${R3_LOG_TIME:-1}

evaluators=$(( NODES * GPUS_PER_NODE ))
# Ranks fill the hosts in order, so rank 0 runs on the first host beside its evaluators.
# Evaluators start compiler and sandbox processes: binding a rank to one core would starve them.
step=("$MPIRUN" -n $(( evaluators + 1 )) --bind-to none)
[[ $OVERSUBSCRIBE == 1 ]] && step+=(--oversubscribe)
if [[ -n $HOSTFILE ]]; then
  step+=(--hostfile "$HOSTFILE")
  # Ranks on other hosts get only the variables named with -x.
  for var in R3_JOB_END_TIME R3_LOG_TIME R3_LOG_LEVEL HDF5_USE_FILE_LOCKING; do
    [[ -n ${!var:-} ]] && step+=(-x "$var")
  done
fi
if [[ -n $MPIRUN_EXTRA ]]; then
  read -r -a extra <<<"$MPIRUN_EXTRA"
  step+=("${extra[@]}")
fi
step+=("$r3_mpi" "$TUNE_YAML" --resume-if-present)

log "$NODES node(s) x $GPUS_PER_NODE evaluator(s): rank 0 beside them on the first node"
log "the job ends at $([[ -n ${R3_JOB_END_TIME:-} ]] && date -d "@${R3_JOB_END_TIME%.*}" || echo '(no limit)')"
log "running: ${step[*]}"
exec "${step[@]}"
