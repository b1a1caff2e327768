#!/usr/bin/env bash
# `make test`: the whole suite in timed phases, so that its budget (CI gives a run 90 minutes;
# `make demo` and the suite, installs included, should stay under 60) shows in every log. docs/testing.md says why
# the phases are laid out so:
#   build        the Kubernetes and Rooks build (scripts/build-kubernetes.sh all, ~7 min of CPU cold,
#                nothing once cached), in the background at the lowest CPU and I/O priority
#   roots        the releases' roots (dfslab releases build --all, ~2 min cold), likewise
#   unit         tests without a cluster, on both cores (pytest-xdist), a file's tests in one worker:
#                a file's tests share a cluster name, and dfslab finds a cluster's processes by it
#   cluster-a    the cluster tests that use the docker engine or compare the root namespace's
#                links before and after (test_docker, test_crash_cleanup, test_cluster), or make a
#                loop device (test_blockdev): alone
#   kubernetes   once the build is there, in the background: the cluster tests on runtime
#                kubernetes, beside
#   cluster-b    the other cluster tests on the local runtime
# Every pytest session checks its own processes and clusters; the machine (namespaces, links,
# mounts, loop devices) is checked once around all the phases (tests/leftovers.py). Then the
# 30 slowest tests, the time of each module and one closing line with the totals.
#
# Usage: scripts/test-suite.sh [all|unit|quick|clusters|cluster|kubernetes] [PYTEST ARGS...]
#   quick: the unit tests and one small cluster end to end (tests/test_cluster.py)
#   clusters: every cluster test laid out as in `all` (cluster-a, then kubernetes beside cluster-b)
#   cluster, kubernetes: the local/docker cluster tests alone, the Kubernetes ones alone
set -uo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
shift || true
PYTEST=(.venv/bin/python -m pytest -ra -p no:cacheprovider "$@")
# test_blockdev makes a loop device: not beside the Kubernetes phase, whose pods make theirs.
SERIAL_A=(tests/test_cluster.py tests/test_crash_cleanup.py tests/test_docker.py tests/test_blockdev.py)
out=$(mktemp -d /tmp/dfslab-suite-XXXXXX)
start=$(date +%s)
export DFSLAB_SUITE_MACHINE_CHECK=outside

elapsed() { local s=$(( $(date +%s) - $1 )); printf '%d:%02d' $((s / 60)) $((s % 60)); }

background=()
stop_background() {
  # Each background job runs in its own session (setsid): its process group is what it started.
  local pid
  for pid in "${background[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then kill -- "-$pid" 2>/dev/null; fi
  done
}
trap stop_background EXIT
trap 'exit 130' INT TERM

phase() {  # phase NAME PYTEST-ARGS...: one pytest session; its junit XML and exit code kept
  local name=$1; shift
  local t=$(date +%s)
  echo "=== phase $name: started at +$(elapsed "$start")"
  "${PYTEST[@]}" --junitxml="$out/$name.xml" "$@"
  local rc=$?
  echo "$rc" >"$out/$name.rc"
  echo "=== phase $name: $(elapsed "$t") (exit $rc; at +$(elapsed "$start"))"
}

start_build() {
  echo "=== phase build: started in the background at +$(elapsed "$start") (log: $out/build.log)"
  setsid bash -c 'nice -n 19 ionice -c 3 bash scripts/build-kubernetes.sh all >"$1/build.log" 2>&1; echo $? >"$1/build.rc"' \
    build "$out" &
  background+=($!)
}

start_roots() {
  # The releases' roots (tests/test_releases.py's clusters run from them: ~2 min of mmdebstrap cold,
  # nothing once cached) built beside the first phases, as the Kubernetes build is, not inside
  # cluster-b. A test that gets there first waits on the root's lock; one that finds it failed
  # builds it itself, so the outcome is the tests' (roots.status, not a phase's .rc).
  echo "=== phase roots: started in the background at +$(elapsed "$start") (log: $out/roots.log)"
  setsid bash -c 'nice -n 19 ionice -c 3 .venv/bin/dfslab releases build --all >"$1/roots.log" 2>&1; echo $? >"$1/roots.status"' \
    roots "$out" &
  background+=($!)
}

kubernetes_phase() {  # waits for the build, then the kubernetes phase (or its failure)
  local t=$(date +%s)
  while [ ! -f "$out/build.rc" ]; do sleep 1; done
  echo "=== phase build: done at +$(elapsed "$start"), waited $(elapsed "$t") for it (exit $(cat "$out/build.rc")); its log ends:"
  tail -n 3 "$out/build.log" | sed 's/^/    /'
  if [ "$(cat "$out/build.rc")" = 0 ]; then
    phase kubernetes -m kubernetes tests
  else
    echo 1 >"$out/kubernetes.rc"
  fi
}

unit_phase() { phase unit -n 2 --dist loadfile -m "not cluster and not kubernetes" tests; }

cluster_phases() {  # cluster-a alone, then the kubernetes phase beside cluster-b, as `make test` runs them
  phase cluster-a -m "cluster and not kubernetes and not unsettled" "${SERIAL_A[@]}"
  echo "=== phase kubernetes: runs beside cluster-b; its output follows when it ends (log: $out/kubernetes.log)"
  setsid bash -c "$(declare -f elapsed phase kubernetes_phase); $(declare -p PYTEST out start); kubernetes_phase" \
    >"$out/kubernetes.log" 2>&1 &
  local kube=$!
  background+=("$kube")
  phase cluster-b -m "cluster and not kubernetes and not unsettled" "${SERIAL_A[@]/#/--ignore=}" tests
  wait "$kube"
  cat "$out/kubernetes.log"
}

.venv/bin/python tests/leftovers.py snapshot "$out/machine.json"
case $what in
  unit)
    unit_phase ;;
  quick)
    unit_phase
    phase cluster tests/test_cluster.py ;;
  cluster)
    phase cluster -m "cluster and not kubernetes and not unsettled" tests ;;
  kubernetes)
    start_build
    kubernetes_phase ;;
  all)
    start_build
    start_roots
    unit_phase
    cluster_phases ;;
  clusters)
    start_build
    start_roots
    cluster_phases ;;
  *)
    echo "usage: scripts/test-suite.sh [all|unit|quick|clusters|cluster|kubernetes] [PYTEST ARGS...]" >&2; exit 2 ;;
esac

status=0
for rc in "$out"/*.rc; do [ "$(cat "$rc")" = 0 ] || status=1; done
.venv/bin/python tests/leftovers.py check "$out/machine.json" || status=1
echo "=== the suite took $(elapsed "$start")"
.venv/bin/python scripts/suite_summary.py "$out"/*.xml || status=1  # its last line: the totals
exit $status
