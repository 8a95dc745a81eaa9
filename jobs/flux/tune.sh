#!/bin/bash
# flux: --job-name=r3-tune
# flux: -N 1
# flux: -t 4h
# flux: --output=r3-tune-{{id}}.out
#
# r3 tuning job for Flux: rank 0 searches, one evaluator rank per GPU replays candidates.
#
#   flux batch jobs/flux/tune.sh [path/to/tune.yaml]
#   flux batch -N 4 -t 12h -q pbatch -B PROJECT jobs/flux/tune.sh path/to/tune.yaml
#   NODES=1 GPUS_PER_NODE=4 bash jobs/flux/tune.sh tune.yaml   (inside an allocation, e.g. flux alloc)
#
# The directives above are defaults; flux batch options override them. -N without -n gives
# whole nodes, GPUs included. Bank and queue: add -B and -q directives above, or give them to
# flux batch. To continue a run after the time limit, submit the script again (or chain jobs
# with --dependency=afterany:JOBID): it resumes from the run database. See jobs/README.md.

set -euo pipefail

me=tune.sh
log() { printf 'r3 flux/%s: %s\n' "$me" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# ---- Settings: edit the defaults here, or set the variables in the environment --------------
# The tuning configuration; the script's first argument wins. Results go to its output.directory
# (default <tune.yaml dir>/r3-results).
TUNE_YAML=${1:-${TUNE_YAML:-tune.yaml}}
# Directory holding r3-mpi (e.g. /opt/r3/bin or build/bin); empty: r3-mpi is found on PATH.
R3_BIN=${R3_BIN:-}
# Nodes and GPUs per node to use; default: the instance's (flux resource list).
NODES=${NODES:-}
GPUS_PER_NODE=${GPUS_PER_NODE:-}
# The time limit this job was given (-t above; seconds, or a number with s, m, h or d). When set,
# the job's end (R3_JOB_END_TIME) is computed from it; else Flux is asked (flux job timeleft).
TIME_LIMIT=${TIME_LIMIT:-}
# Cores per task (flux run -c); empty: Flux's default of one.
CORES_PER_TASK=${CORES_PER_TASK:-}
# More flux run options, separated by spaces (e.g. "-o mpi=openmpi@5").
FLUX_RUN_EXTRA=${FLUX_RUN_EXTRA:-}
# ----------------------------------------------------------------------------------------------

start=$(date +%s)
is_count() { [[ $1 =~ ^[0-9]+$ ]] && (( 10#$1 > 0 )); }

# A Flux Standard Duration (90, 90s, 30m, 4h, 1d) in seconds.
fsd_seconds() {
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
command -v flux >/dev/null || die "flux not found: submit this script with flux batch"

if [[ -z $NODES || -z $GPUS_PER_NODE ]]; then
  read -r nnodes ngpus < <(flux resource list -s up -no '{nnodes} {ngpus}' 2>/dev/null || true) || true
  if is_count "${nnodes:-}"; then
    NODES=${NODES:-$nnodes}
    if [[ -z $GPUS_PER_NODE ]] && is_count "${ngpus:-}"; then
      GPUS_PER_NODE=$(( ngpus / nnodes ))
    fi
  fi
fi
is_count "$NODES" || die "NODES='$NODES': set it, or run inside a Flux instance (flux batch)"
is_count "$GPUS_PER_NODE" || die "GPUS_PER_NODE='$GPUS_PER_NODE': set it (the instance shows no GPUs)"

# Flux has no SLURM_JOB_END_TIME; r3-mpi reads R3_JOB_END_TIME instead.
if [[ -z ${R3_JOB_END_TIME:-} ]]; then
  if [[ -n $TIME_LIMIT ]]; then
    limit=$(fsd_seconds "$TIME_LIMIT") || die "TIME_LIMIT='$TIME_LIMIT': use seconds or a number with s, m, h or d"
    export R3_JOB_END_TIME=$(( start + limit ))
  else
    left=$(flux job timeleft 2>/dev/null || true)
    # An unlimited job reports UINT_MAX or more.
    if [[ $left =~ ^[0-9]+$ ]] && (( left < 4294967295 )); then
      export R3_JOB_END_TIME=$(( $(date +%s) + left ))
    else
      log "warning: the job's end time is unknown; r3-mpi stops only at its own budget"
    fi
  fi
fi
# Seconds since start on every log line show how long each generation takes.
export R3_LOG_TIME=${R3_LOG_TIME:-1}
# Parallel file systems often refuse the locks HDF5 takes; each r3 file has a single writer.
export HDF5_USE_FILE_LOCKING=${HDF5_USE_FILE_LOCKING:-FALSE}

evaluators=$(( NODES * GPUS_PER_NODE ))
# Flux spreads the tasks evenly over the nodes, so rank 0, the one extra task, runs on the first
# node beside its evaluators. --exclusive gives the step whole nodes: every task sees all GPUs
# of its node, and an evaluator picks the one of its node-local rank.
step=(flux run -N "$NODES" -n $(( evaluators + 1 )) --exclusive)
[[ -n $CORES_PER_TASK ]] && step+=(-c "$CORES_PER_TASK")
if [[ -n $FLUX_RUN_EXTRA ]]; then
  read -r -a extra <<<"$FLUX_RUN_EXTRA"
  step+=("${extra[@]}")
fi
step+=("$r3_mpi" "$TUNE_YAML" --resume-if-present)

log "$NODES node(s) x $GPUS_PER_NODE GPU(s): $evaluators evaluator(s), rank 0 beside them on the first node"
log "the job ends at $([[ -n ${R3_JOB_END_TIME:-} ]] && date -d "@${R3_JOB_END_TIME%.*}" || echo '(unknown)')"
log "running: ${step[*]}"
exec "${step[@]}"
