#!/usr/bin/env bash
# `make test`: the whole suite in timed phases, so that its budget (CI gives a run 90 minutes;
# the suite, installs included, must stay under 45) shows in every log.
#   build       the Kubernetes and Rook build (scripts/build-kubernetes.sh, ~10 min of CPU cold,
#               nothing once cached) runs in the background at the lowest CPU and I/O priority,
#               beside the phases that do not need it, instead of before them
#   unit        tests without a cluster, on both cores (pytest-xdist)
#   cluster     cluster tests on the local and docker runtimes, one at a time (they measure)
#   kubernetes  waits for the build, then the cluster tests on runtime kubernetes
# Then the 30 slowest tests of all phases and one closing line with the totals. Exit 0 only when
# every phase passed and left nothing behind (tests/leftovers.py).
#
# Usage: scripts/test-suite.sh [unit|quick|cluster|kubernetes|all] [PYTEST ARGS...]
#   quick: the unit tests and one small cluster end to end (tests/test_cluster.py)
set -uo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
shift || true
PYTEST=(.venv/bin/python -m pytest -ra -p no:cacheprovider "$@")
out=$(mktemp -d /tmp/dfslab-suite-XXXXXX)
start=$(date +%s)
status=0
build_pid=

elapsed() { local s=$(( $(date +%s) - $1 )); printf '%d:%02d' $((s / 60)) $((s % 60)); }

stop_build() {
  # The build runs in its own session (setsid): its process group is exactly what it started.
  if [ -n "$build_pid" ] && kill -0 "$build_pid" 2>/dev/null; then kill -- "-$build_pid" 2>/dev/null; fi
}
trap stop_build EXIT
trap 'exit 130' INT TERM

phase() {  # phase NAME PYTEST-ARGS...: one pytest run, its junit XML kept for the summary
  local name=$1; shift
  local t=$(date +%s)
  echo "=== phase $name: started at +$(elapsed "$start")"
  "${PYTEST[@]}" --junitxml="$out/$name.xml" "$@"
  local rc=$?
  echo "=== phase $name: $(elapsed "$t") (exit $rc; total $(elapsed "$start"))"
  [ $rc = 0 ] || status=1
}

start_build() {
  echo "=== phase build: started in the background at +$(elapsed "$start") (log: $out/build.log)"
  setsid nice -n 19 ionice -c 3 bash scripts/build-kubernetes.sh >"$out/build.log" 2>&1 &
  build_pid=$!
}

wait_build() {
  local t=$(date +%s)
  wait "$build_pid"
  local rc=$?
  build_pid=
  echo "=== phase build: waited $(elapsed "$t") for it (exit $rc); its log ends:"
  tail -n 3 "$out/build.log" | sed 's/^/    /'
  return $rc
}

case $what in
  unit)
    phase unit -n 2 -m "not cluster and not kubernetes" tests ;;
  quick)
    phase unit -n 2 -m "not cluster and not kubernetes" tests
    phase cluster tests/test_cluster.py ;;
  cluster)
    phase cluster -m "cluster and not kubernetes" tests ;;
  kubernetes)
    start_build
    if wait_build; then phase kubernetes -m kubernetes tests; else status=1; fi ;;
  all)
    start_build
    phase unit -n 2 -m "not cluster and not kubernetes" tests
    phase cluster -m "cluster and not kubernetes" tests
    if wait_build; then phase kubernetes -m kubernetes tests; else status=1; fi ;;
  *)
    echo "usage: scripts/test-suite.sh [unit|quick|cluster|kubernetes|all] [PYTEST ARGS...]" >&2; exit 2 ;;
esac

echo "=== the suite took $(elapsed "$start")"
.venv/bin/python scripts/suite_summary.py "$out"/*.xml || status=1  # its last line: the totals
exit $status
