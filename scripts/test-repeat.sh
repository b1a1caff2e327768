#!/usr/bin/env bash
# `make test-repeat N=3`: the flake hunt. Every cluster test (local, docker, kubernetes) N times
# in a row on this machine, laid out as `make test` lays them out (the Kubernetes phase beside the
# local cluster tests: the load under which CI's flakes showed), each round's output kept, and at
# the end which tests failed in which round. A test that fails in one round of N is a flake to explain at its cause (docs/testing.md),
# never to hide behind a longer timeout or a retry.
set -uo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
logs=$(mktemp -d /tmp/dfslab-repeat-XXXXXX)
failed=0
for round in $(seq 1 "$rounds"); do
  echo "=== round $round of $rounds (log: $logs/round-$round.log)"
  bash scripts/test-suite.sh clusters 2>&1 | tee "$logs/round-$round.log"
  rc=${PIPESTATUS[0]}
  # Ctrl-C ends the hunt, not the round: the round's suite cleans up and exits 130 on it (not
  # killed by the signal, so this shell would otherwise go on to the next round).
  if [ "$rc" = 130 ]; then echo "=== interrupted in round $round (logs: $logs)"; exit 130; fi
  if [ "$rc" != 0 ]; then failed=$((failed + 1)); fi
done
echo "=== failures by round"
for round in $(seq 1 "$rounds"); do
  grep -E '^(FAILED|ERROR) |left [0-9]+ thing' "$logs/round-$round.log" | sed "s/^/round $round: /"
done
echo "rounds: $((rounds - failed)) passed, $failed failed"
[ "$failed" = 0 ]
