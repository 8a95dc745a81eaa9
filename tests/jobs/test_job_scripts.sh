#!/bin/bash
# Checks the batch job scripts under jobs/ without a scheduler or MPI: srun, flux, mpirun, r3,
# r3-mpi and the other commands they call are replaced by stubs that record their arguments,
# the scripts run with the environment a scheduler would give them, and the recorded command
# lines are compared with the expected ones, exactly.
#
#   tests/jobs/test_job_scripts.sh REPO_ROOT
#
# Exit status 0 when every check passed; each failure is printed with what differed.
set -uo pipefail

ROOT=${1:?usage: test_job_scripts.sh REPO_ROOT}
ROOT=$(cd "$ROOT" && pwd) || exit 1
[[ -d $ROOT/jobs ]] || { echo "FAIL: $ROOT/jobs is not a directory"; exit 1; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/r3-job-scripts.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
STUBS=$TMP/stubs
failures=0
checks=0

# ---- stubs ----------------------------------------------------------------------------------
# A recording stub appends one line per call, "NAME ARG..." with each argument shell-quoted
# (printf %q), to $STUB_DIR/calls.log, and the variables the scripts export to env.log. Files in
# $STUB_DIR steer it: out/NAME.ARG1.ARG2... (the longest match) is printed, hold.NAME makes it
# wait until the file is removed, exit.NAME holds its exit status.
mkdir -p "$STUBS"
cat >"$STUBS/.recording-stub" <<'STUB'
#!/bin/bash
name=${0##*/}
line=$name
for arg in "$@"; do line+=" $(printf '%q' "$arg")"; done
printf '%s\n' "$line" >>"$STUB_DIR/calls.log"
for var in OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM R3_JOB_END_TIME R3_LOG_TIME \
           HDF5_USE_FILE_LOCKING SLURM_EXPORT_ENV SLURM_HOSTFILE; do
  [[ -n ${!var+set} ]] && printf '%s %s=%s\n' "$name" "$var" "${!var}" >>"$STUB_DIR/env.log"
done
if [[ -n ${SLURM_HOSTFILE:-} && -f $SLURM_HOSTFILE ]]; then
  cp "$SLURM_HOSTFILE" "$STUB_DIR/hostfile.$name"
fi
key=$name
out=
[[ -f $STUB_DIR/out/$key ]] && out=$STUB_DIR/out/$key
for arg in "$@"; do
  [[ $arg == */* || -z $arg ]] && break
  key+=.$arg
  [[ -f $STUB_DIR/out/$key ]] && out=$STUB_DIR/out/$key
done
[[ -n $out ]] && cat "$out"
for (( i = 0; i < 200; ++i )); do
  [[ -f $STUB_DIR/hold.$name ]] || break
  sleep 0.05
done
[[ -f $STUB_DIR/exit.$name ]] && exit "$(<"$STUB_DIR/exit.$name")"
exit 0
STUB
chmod +x "$STUBS/.recording-stub"
for name in srun scontrol squeue flux mpirun nvidia-smi r3 r3-mpi; do
  ln -s .recording-stub "$STUBS/$name"
done
# id -u answers $STUB_UID, so that both the root and the user case can be checked anywhere.
real_id=$(command -v id) || { echo "FAIL: id is not on PATH"; exit 1; }
# shellcheck disable=SC2016  # expanded by the stub, not here
printf '#!/bin/bash\n[[ $1 == -u ]] && { echo "${STUB_UID:-1000}"; exit 0; }\nexec %q "$@"\n' \
  "$real_id" >"$STUBS/id"
chmod +x "$STUBS/id"
# R3_BIN cases: a directory with its own r3 and r3-mpi, and an empty one.
mkdir -p "$TMP/r3 prefix/bin" "$TMP/empty-bin"
ln -s "$STUBS/.recording-stub" "$TMP/r3 prefix/bin/r3"
ln -s "$STUBS/.recording-stub" "$TMP/r3 prefix/bin/r3-mpi"
ALT_BIN="$TMP/r3 prefix/bin"

# ---- helpers --------------------------------------------------------------------------------
CASE='' CASE_DIR='' WORK='' STATE='' STATUS=0 case_ok=1 case_count=0

# new_case NAME: a fresh working directory (with tune.yaml and ./app) and stub state.
new_case() {
  finish_case
  CASE=$1
  case_count=$(( case_count + 1 ))
  CASE_DIR=$TMP/cases/$case_count
  WORK=$CASE_DIR/work
  STATE=$CASE_DIR/stub
  mkdir -p "$WORK" "$STATE/out"
  printf 'capture: app.h5\nkernels: [stencil2d]\n' >"$WORK/tune.yaml"
  printf '#!/bin/sh\nexit 0\n' >"$WORK/app"
  chmod +x "$WORK/app"
  case_ok=1
}

finish_case() {
  [[ -n $CASE ]] || return 0
  checks=$(( checks + 1 ))
  if (( case_ok )); then
    printf 'ok    %s\n' "$CASE"
  else
    failures=$(( failures + 1 ))
    printf '      output of the script:\n'
    sed 's/^/        | /' "$CASE_DIR/output" 2>/dev/null
  fi
  CASE=
}

fail() {
  (( case_ok )) && printf 'FAIL  %s\n' "$CASE"
  case_ok=0
  printf '      %s\n' "$@"
}

# job_command SCRIPT [VAR=VALUE...] -- [ARG...]: the command line that runs SCRIPT as the
# scheduler would: in $WORK, with only the given environment and the stubs first on PATH.
job_command() {
  local script=$1
  shift
  JOB=(env -i PATH="$STUBS:$PATH" HOME="$WORK" TMPDIR="$CASE_DIR" STUB_DIR="$STATE")
  while (( $# )) && [[ $1 != -- ]]; do JOB+=("$1"); shift; done
  (( $# )) && shift
  JOB+=(bash "$ROOT/$script" "$@")
}

# run_job SCRIPT [VAR=VALUE...] -- [ARG...]: runs it to the end; STATUS is its exit status.
run_job() {
  job_command "$@"
  (cd "$WORK" && "${JOB[@]}") >"$CASE_DIR/output" 2>&1
  STATUS=$?
}

# cmd NAME ARG...: the line a stub records for this call.
cmd() {
  local line=$1 arg
  shift
  for arg in "$@"; do line+=" $(printf '%q' "$arg")"; done
  printf '%s' "$line"
}

expect_status() {  # expect_status 0 | nonzero
  if [[ $1 == nonzero ]]; then
    (( STATUS != 0 )) || fail "exit status 0, expected a failure"
  elif (( STATUS != $1 )); then
    fail "exit status $STATUS, expected $1"
  fi
}

# expect_calls LINE...: the stubs were called exactly so, in this order (none for no LINE).
expect_calls() {
  local want got
  want=$( (( $# )) && printf '%s\n' "$@")
  got=$(cat "$STATE/calls.log" 2>/dev/null)
  [[ $want == "$got" ]] && return 0
  fail "recorded commands differ (- expected, + recorded):"
  diff -u <([[ -n $want ]] && printf '%s\n' "$want") <([[ -n $got ]] && printf '%s\n' "$got") |
    tail -n +3 | grep '^[-+]' | sed 's/^/        /'
}

expect_output() {  # expect_output TEXT: the script printed TEXT
  grep -qF -- "$1" "$CASE_DIR/output" || fail "output lacks: $1"
}

expect_env() {  # expect_env NAME VAR=VALUE: stub NAME ran with VAR=VALUE
  grep -qFx -- "$1 $2" "$STATE/env.log" 2>/dev/null || fail "$1 did not run with $2"
}

expect_no_env() {  # expect_no_env NAME VAR: stub NAME ran without VAR
  ! grep -q "^$1 $2=" "$STATE/env.log" 2>/dev/null || fail "$1 ran with $2 set"
}

# expect_env_near NAME VAR LOW HIGH: stub NAME ran with LOW <= VAR <= HIGH.
expect_env_near() {
  local value
  value=$(sed -n "s/^$1 $2=//p" "$STATE/env.log" 2>/dev/null | head -n 1)
  if [[ ! $value =~ ^[0-9]+$ ]] || (( value < $3 || value > $4 )); then
    fail "$1 ran with $2='$value', expected $3..$4"
  fi
}

wait_for_call() {  # wait_for_call PATTERN: until a recorded line matches (10 s at most)
  local i
  for (( i = 0; i < 200; ++i )); do
    grep -q -- "$1" "$STATE/calls.log" 2>/dev/null && return 0
    sleep 0.05
  done
  fail "no call matching '$1' within 10 s"
  return 1
}

# ---- (a) syntax and permissions -------------------------------------------------------------
mapfile -t scripts < <(cd "$ROOT" && find jobs -type f \( -name '*.sh' -o -name '*.sbatch' \) | sort)
for script in jobs/slurm/record.sbatch jobs/slurm/tune.sbatch jobs/flux/record.sh \
              jobs/flux/tune.sh jobs/mpirun/record.sh jobs/mpirun/tune.sh; do
  [[ -f $ROOT/$script ]] || { echo "FAIL  $script is missing"; failures=$(( failures + 1 )); }
done
for script in "${scripts[@]}"; do
  checks=$(( checks + 1 ))
  if ! err=$(bash -n "$ROOT/$script" 2>&1); then
    printf 'FAIL  bash -n %s\n' "$script"
    while IFS= read -r line; do printf '        %s\n' "$line"; done <<<"$err"
    failures=$(( failures + 1 ))
  elif [[ ! -x $ROOT/$script ]]; then
    printf 'FAIL  %s is not executable\n' "$script"
    failures=$(( failures + 1 ))
  else
    printf 'ok    bash -n %s\n' "$script"
  fi
done

now=$(date +%s)
R3_MPI=$STUBS/r3-mpi
R3=$STUBS/r3

# ---- Slurm: tune.sbatch ---------------------------------------------------------------------
SLURM_ENV=(SLURM_JOB_ID=4242 SLURM_JOB_NUM_NODES=2 SLURM_NNODES=2 SLURM_GPUS_ON_NODE=4
           SLURM_NTASKS=10 SLURM_JOB_END_TIME=$(( now + 36000 )))
# What tune.sbatch runs in that allocation: 9 ranks, 5 on the first node (rank 0 and 4 evaluators).
SRUN_TUNE_2X4=$(cmd srun --nodes=2 --gpus-per-node=4 --ntasks=9 --ntasks-per-node=5 \
  --distribution=block,NoPack --gpu-bind=none --kill-on-bad-exit=1 "$R3_MPI" tune.yaml --resume-if-present)

new_case "slurm/tune: 2 nodes x 4 GPUs, rank 0 beside the evaluators"
run_job jobs/slurm/tune.sbatch "${SLURM_ENV[@]}" --
expect_status 0
expect_calls "$SRUN_TUNE_2X4"
expect_env srun SLURM_EXPORT_ENV=ALL
expect_env srun R3_LOG_TIME=1

new_case "slurm/tune: settings from the environment, tune.yaml as argument, R3_BIN"
mkdir -p "$WORK/my conf" && cp "$WORK/tune.yaml" "$WORK/my conf/tune.yaml"
run_job jobs/slurm/tune.sbatch SLURM_JOB_ID=4242 SLURM_JOB_NUM_NODES=4 SLURM_GPUS_PER_NODE=a100:8 \
  SLURM_JOB_END_TIME=$(( now + 36000 )) NODES=3 CPUS_PER_TASK=8 SRUN_MPI=pmix \
  SRUN_EXTRA="--mem=0 --exclusive" R3_BIN="$ALT_BIN" -- "my conf/tune.yaml"
expect_status 0
expect_calls "$(cmd srun --nodes=3 --gpus-per-node=8 --ntasks=25 --ntasks-per-node=9 \
  --distribution=block,NoPack --gpu-bind=none --kill-on-bad-exit=1 --cpus-per-task=8 --mpi=pmix \
  --mem=0 --exclusive "$ALT_BIN/r3-mpi" "my conf/tune.yaml" --resume-if-present)"

new_case "slurm/tune: R3_MASTER_ON_GPU_NODE=0 gives rank 0 the first node"
printf 'gpu1\ngpu2\ngpu3\n' >"$STATE/out/scontrol.show.hostnames"
run_job jobs/slurm/tune.sbatch "${SLURM_ENV[@]}" SLURM_JOB_NUM_NODES=3 SLURM_GPUS_ON_NODE=2 \
  SLURM_JOB_NODELIST='gpu[1-3]' R3_MASTER_ON_GPU_NODE=0 --
expect_status 0
expect_calls "$(cmd scontrol show hostnames 'gpu[1-3]')" \
  "$(cmd srun --nodes=3 --gpus-per-node=2 --ntasks=5 --distribution=arbitrary --gpu-bind=none \
    --kill-on-bad-exit=1 "$R3_MPI" tune.yaml --resume-if-present)"
[[ $(cat "$STATE/hostfile.srun" 2>/dev/null) == $'gpu1\ngpu2\ngpu2\ngpu3\ngpu3' ]] ||
  fail "SLURM_HOSTFILE should list gpu1 once and gpu2, gpu3 twice; it held: $(tr '\n' ' ' <"$STATE/hostfile.srun" 2>/dev/null)"

new_case "slurm/tune: a run that stops near the time limit requeues the job"
run_job jobs/slurm/tune.sbatch "${SLURM_ENV[@]}" SLURM_JOB_END_TIME=$(( now + 60 )) --
expect_status 0
expect_calls "$SRUN_TUNE_2X4" "$(cmd scontrol requeue 4242)"
expect_output "requeueing job 4242"

new_case "slurm/tune: no requeue after R3_MAX_REQUEUES restarts"
run_job jobs/slurm/tune.sbatch "${SLURM_ENV[@]}" SLURM_JOB_END_TIME=$(( now + 60 )) \
  SLURM_RESTART_COUNT=3 R3_MAX_REQUEUES=3 --
expect_status 0
expect_calls "$SRUN_TUNE_2X4"
expect_output "not requeueing"

new_case "slurm/tune: a failed r3-mpi is not requeued and its status is kept"
echo 3 >"$STATE/exit.srun"
run_job jobs/slurm/tune.sbatch "${SLURM_ENV[@]}" SLURM_JOB_END_TIME=$(( now + 60 )) --
expect_status 3
expect_calls "$SRUN_TUNE_2X4"

new_case "slurm/tune: the --signal USR1 while r3-mpi runs requeues the job"
touch "$STATE/hold.srun"
job_command jobs/slurm/tune.sbatch "${SLURM_ENV[@]}" --
(cd "$WORK" && exec "${JOB[@]}") >"$CASE_DIR/output" 2>&1 &
pid=$!
if wait_for_call '^srun '; then
  kill -USR1 "$pid"
  wait_for_call '^scontrol requeue'
fi
rm -f "$STATE/hold.srun"
wait "$pid"
STATUS=$?
expect_status 0
expect_calls "$SRUN_TUNE_2X4" "$(cmd scontrol requeue 4242)"

new_case "slurm/tune: without SLURM_JOB_END_TIME the end time comes from squeue"
echo 2031-01-02T03:04:05 >"$STATE/out/squeue.-h.-j.4242.-o.%e"
run_job jobs/slurm/tune.sbatch SLURM_JOB_ID=4242 SLURM_JOB_NUM_NODES=1 SLURM_GPUS_ON_NODE=1 --
expect_status 0
expect_calls "$(cmd squeue -h -j 4242 -o %e)" \
  "$(cmd srun --nodes=1 --gpus-per-node=1 --ntasks=2 --ntasks-per-node=2 --distribution=block,NoPack \
    --gpu-bind=none --kill-on-bad-exit=1 "$R3_MPI" tune.yaml --resume-if-present)"
expect_env srun "R3_JOB_END_TIME=$(date -d 2031-01-02T03:04:05 +%s)"

# ---- Slurm: record.sbatch -------------------------------------------------------------------
new_case "slurm/record: -k, -o, --ranks and the application with its arguments"
run_job jobs/slurm/record.sbatch SLURM_JOB_ID=77 SLURM_NTASKS=8 KERNELS='stencil.*' \
  CAPTURE=caps/heat.h5 RECORD_RANKS=0,3 LAUNCHES=2 -- ./app --steps 10 'two words'
expect_status 0
expect_calls "$(cmd srun --ntasks=8 "$R3" record -k 'stencil.*' -o caps/heat.h5 --launches 2 \
  --capture reachable --ranks 0,3 -- ./app --steps 10 'two words')"
expect_env srun SLURM_EXPORT_ENV=ALL

new_case "slurm/record: APP and APP_ARGS, every rank, Kokkos, R3_BIN"
run_job jobs/slurm/record.sbatch SLURM_NTASKS=4 APP=./app APP_ARGS="512  10" RECORD_RANKS= \
  KOKKOS=1 CAPTURE_MODE=all SRUN_MPI=pmix R3_BIN="$ALT_BIN" --
expect_status 0
expect_calls "$(cmd srun --ntasks=4 --mpi=pmix "$ALT_BIN/r3" record -k '.*' -o r3-capture.h5 \
  --launches 1 --capture all --kokkos -- ./app 512 10)"

new_case "slurm/record: no application is an error"
run_job jobs/slurm/record.sbatch SLURM_NTASKS=4 --
expect_status nonzero
expect_output "no application"
expect_calls

# ---- Flux -----------------------------------------------------------------------------------
new_case "flux/tune: TIME_LIMIT sets R3_JOB_END_TIME"
before=$(date +%s)
run_job jobs/flux/tune.sh NODES=2 GPUS_PER_NODE=4 TIME_LIMIT=2h -- tune.yaml
after=$(date +%s)
expect_status 0
expect_calls "$(cmd flux run -N 2 -n 9 --exclusive "$R3_MPI" tune.yaml --resume-if-present)"
expect_env_near flux R3_JOB_END_TIME $(( before + 7200 )) $(( after + 7200 ))

new_case "flux/tune: nodes, GPUs and time left from Flux"
echo '2 8' >"$STATE/out/flux.resource.list"
echo 3600 >"$STATE/out/flux.job.timeleft"
before=$(date +%s)
run_job jobs/flux/tune.sh CORES_PER_TASK=4 FLUX_RUN_EXTRA="-o mpi=openmpi@5" --
after=$(date +%s)
expect_status 0
expect_calls "$(cmd flux resource list -s up -no '{nnodes} {ngpus}')" "$(cmd flux job timeleft)" \
  "$(cmd flux run -N 2 -n 9 --exclusive -c 4 -o mpi=openmpi@5 "$R3_MPI" tune.yaml --resume-if-present)"
expect_env_near flux R3_JOB_END_TIME $(( before + 3600 )) $(( after + 3600 ))

new_case "flux/tune: a given R3_JOB_END_TIME is kept"
run_job jobs/flux/tune.sh NODES=1 GPUS_PER_NODE=2 TIME_LIMIT=1h R3_JOB_END_TIME=1900000000 --
expect_status 0
expect_calls "$(cmd flux run -N 1 -n 3 --exclusive "$R3_MPI" tune.yaml --resume-if-present)"
expect_env flux R3_JOB_END_TIME=1900000000

new_case "flux/record: -k, -o, --ranks and the application with its arguments"
run_job jobs/flux/record.sh NTASKS=8 KERNELS=spmv CAPTURE=spmv.h5 RECORD_RANKS=1 \
  FLUX_RUN_EXTRA="-g 1" -- ./app -n 'a b'
expect_status 0
expect_calls "$(cmd flux run -n 8 -g 1 "$R3" record -k spmv -o spmv.h5 --launches 1 \
  --capture reachable --ranks 1 -- ./app -n 'a b')"

# ---- mpirun ---------------------------------------------------------------------------------
new_case "mpirun/tune: as root, oversubscribed"
run_job jobs/mpirun/tune.sh STUB_UID=0 GPUS_PER_NODE=2 OVERSUBSCRIBE=1 -- tune.yaml
expect_status 0
expect_calls "$(cmd mpirun -n 3 --bind-to none --oversubscribe "$R3_MPI" tune.yaml --resume-if-present)"
expect_env mpirun OMPI_ALLOW_RUN_AS_ROOT=1
expect_env mpirun OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

new_case "mpirun/tune: as a user, GPUs from nvidia-smi, TIME_LIMIT"
printf 'GPU 0: H100 (UUID: a)\nGPU 1: H100 (UUID: b)\nGPU 2: H100 (UUID: c)\n' >"$STATE/out/nvidia-smi.-L"
before=$(date +%s)
run_job jobs/mpirun/tune.sh STUB_UID=1000 TIME_LIMIT=30m --
after=$(date +%s)
expect_status 0
expect_calls "$(cmd nvidia-smi -L)" \
  "$(cmd mpirun -n 4 --bind-to none "$R3_MPI" tune.yaml --resume-if-present)"
expect_no_env mpirun OMPI_ALLOW_RUN_AS_ROOT
expect_no_env mpirun OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
expect_env_near mpirun R3_JOB_END_TIME $(( before + 1800 )) $(( after + 1800 ))

new_case "mpirun/tune: several nodes through a hostfile"
printf 'node1 slots=5\nnode2 slots=4\n' >"$WORK/hosts"
run_job jobs/mpirun/tune.sh NODES=2 GPUS_PER_NODE=4 HOSTFILE=hosts MPIRUN_EXTRA="-x OPENAI_API_KEY" --
expect_status 0
expect_calls "$(cmd mpirun -n 9 --bind-to none --hostfile hosts -x R3_LOG_TIME -x OPENAI_API_KEY \
  "$R3_MPI" tune.yaml --resume-if-present)"

new_case "mpirun/tune: NODES > 1 without a hostfile is an error"
run_job jobs/mpirun/tune.sh NODES=2 GPUS_PER_NODE=4 --
expect_status nonzero
expect_output "HOSTFILE"
expect_calls

new_case "mpirun/record: as root, the application with its arguments"
run_job jobs/mpirun/record.sh STUB_UID=0 NTASKS=2 OVERSUBSCRIBE=1 KERNELS='k[12]' \
  CAPTURE=out.h5 RECORD_RANKS=0 -- ./app 512 10
expect_status 0
expect_calls "$(cmd mpirun -n 2 --oversubscribe "$R3" record -k 'k[12]' -o out.h5 --launches 1 \
  --capture reachable --ranks 0 -- ./app 512 10)"
expect_env mpirun OMPI_ALLOW_RUN_AS_ROOT=1
expect_env mpirun OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

new_case "mpirun/record: as a user the root variables stay unset"
run_job jobs/mpirun/record.sh STUB_UID=1000 NTASKS=1 -- ./app
expect_status 0
expect_calls "$(cmd mpirun -n 1 "$R3" record -k '.*' -o r3-capture.h5 --launches 1 \
  --capture reachable --ranks 0 -- ./app)"
expect_no_env mpirun OMPI_ALLOW_RUN_AS_ROOT

# ---- failures: a missing tune.yaml or r3-mpi stops the job before anything is launched --------
for script in jobs/slurm/tune.sbatch jobs/flux/tune.sh jobs/mpirun/tune.sh; do
  new_case "$script: a missing tune.yaml is an error"
  run_job "$script" "${SLURM_ENV[@]}" NODES=1 GPUS_PER_NODE=1 STUB_UID=1000 -- conf/missing.yaml
  expect_status nonzero
  expect_output "conf/missing.yaml"
  expect_calls

  new_case "$script: TUNE_YAML naming a missing file is an error"
  run_job "$script" "${SLURM_ENV[@]}" NODES=1 GPUS_PER_NODE=1 STUB_UID=1000 TUNE_YAML=nothere.yaml --
  expect_status nonzero
  expect_output "nothere.yaml"
  expect_calls

  new_case "$script: a missing r3-mpi is an error"
  run_job "$script" "${SLURM_ENV[@]}" NODES=1 GPUS_PER_NODE=1 STUB_UID=1000 R3_BIN="$TMP/empty-bin" --
  expect_status nonzero
  expect_output "$TMP/empty-bin/r3-mpi"
  expect_calls
done
for script in jobs/slurm/record.sbatch jobs/flux/record.sh jobs/mpirun/record.sh; do
  new_case "$script: a missing r3 is an error"
  run_job "$script" SLURM_NTASKS=1 STUB_UID=1000 R3_BIN="$TMP/empty-bin" -- ./app
  expect_status nonzero
  expect_output "$TMP/empty-bin/r3"
  expect_calls
done
finish_case

echo
if (( failures )); then
  echo "$failures of $checks checks FAILED"
  exit 1
fi
echo "all $checks checks passed"
