#!/usr/bin/env bash
# Everything dfslab needs on a fresh Debian 12 machine (run as root): Debian's Ceph and
# benchmark tools, then a venv (with system site-packages, for Debian's python3-rados).
# Used by `make demo`, `make test` and .ci/run. Safe to run again: it skips what is there.
set -euo pipefail
cd "$(dirname "$0")/.."

# Usage: scripts/install-deps.sh [GROUP...]: the Debian packages of those groups of
# src/dfslab/debian-packages.txt (all of them without arguments), then the venv.
LIST=src/dfslab/debian-packages.txt
groups=("$@")
given=$#
[ ${#groups[@]} -gt 0 ] || mapfile -t groups < <(sed -n 's/^\([a-z]*\):.*/\1/p' "$LIST")
DEBS=()
for group in "${groups[@]}"; do
  line=$(grep "^$group:" "$LIST") || { echo "install-deps: no group $group in $LIST" >&2; exit 2; }
  read -r -a pkgs <<< "${line#*:}"
  DEBS+=("${pkgs[@]}")
done

if [ "$(id -u)" != 0 ]; then
  echo "install-deps: run as root (dfslab creates network namespaces and runs Ceph daemons)" >&2
  exit 1
fi

# The venv: Debian's python3-rados is built for /usr/bin/python3, so the venv is made from it with
# the system's site-packages. The test group (or no group: everything) adds the test extras.
extras=""
if [ "$given" = 0 ] || [[ " ${groups[*]} " == *" test "* ]]; then extras="[test]"; fi
stamp=.venv/.dfslab-installed
venv_ok() { grep -qx "home = /usr/bin" .venv/pyvenv.cfg 2>/dev/null && grep -qx "include-system-site-packages = true" .venv/pyvenv.cfg; }
pip_needed() {
  [ -f "$stamp" ] && [ ! pyproject.toml -nt "$stamp" ] && venv_ok || return 0
  [ -z "$extras" ] || grep -qxF "$extras" "$stamp" || return 0
  return 1
}
pip_phase() {
  local t=$SECONDS
  if ! venv_ok; then rm -rf .venv; /usr/bin/python3 -m venv --system-site-packages .venv; fi
  # Debian's pip 23.0 fetches whole wheels to resolve (no PEP 658 metadata): 301 s here against
  # 53 s after upgrading it first.
  .venv/bin/pip install -q --disable-pip-version-check --upgrade pip
  .venv/bin/pip install -q --disable-pip-version-check -e ".$extras"
  echo "${extras:-[]}" > "$stamp"
  echo "=== phase pip: $((SECONDS - t)) s"
}

t0=$SECONDS
missing=()
# One dpkg-query for all (a name dpkg does not know is missing too).
installed=" $({ dpkg-query -W -f='${Package} ${Status}\n' "${DEBS[@]}" 2>/dev/null || true; } | awk '/install ok installed$/ {print $1}' | tr '\n' ' ') "
for pkg in "${DEBS[@]}"; do
  [[ "$installed" == *" $pkg "* ]] || missing+=("$pkg")
done
# pip needs nothing apt installs (wheels only; python3-rados is found at run time through the
# system's site-packages), so where python3-venv is there already it runs beside apt: on a fresh
# machine the two took 49 s + 53 s one after the other.
pip_job=""
pip_log=$(mktemp /tmp/dfslab-pip-XXXXXX.log)
policy=/usr/sbin/policy-rc.d
own_policy=0
cleanup() {  # on any exit: no pip left running, no policy of ours left behind
  if [ -n "$pip_job" ] && kill -0 "$pip_job" 2>/dev/null; then
    kill $(ps -o pid= --ppid "$pip_job") "$pip_job" 2>/dev/null || true  # the job and the pip it runs
  fi
  if [ "$own_policy" = 1 ]; then rm -f "$policy"; fi
  rm -f "$pip_log"
}
trap cleanup EXIT
if pip_needed && [ ${#missing[@]} -gt 0 ] && /usr/bin/python3 -c "import ensurepip, venv" 2>/dev/null; then
  echo "install-deps: installing dfslab's Python packages into .venv beside apt"
  pip_phase >"$pip_log" 2>&1 &
  pip_job=$!
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  # Debian's ceph packages try to start systemd units; there is no systemd here and dfslab
  # runs daemons itself, so a failed unit start must not fail the install.
  # policy-rc.d: no package may start its service (docker.io's would start a dockerd that sets
  # the host's FORWARD policy to DROP; dfslab starts its own engine inside a namespace).
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy"; chmod +x "$policy"; own_policy=1
  fi
  # --force-unsafe-io: dpkg skips its fsync per file (as Debian's own container images do); a
  # crash mid-install means installing again, nothing worse.
  apt-get install -y -q --no-install-recommends -o Dpkg::Options::=--force-unsafe-io "${missing[@]}"
  if [ "$own_policy" = 1 ]; then rm -f "$policy"; own_policy=0; fi
fi
echo "=== phase apt: $((SECONDS - t0)) s"
if [ -n "$pip_job" ]; then
  wait "$pip_job" || { cat "$pip_log" >&2; echo "install-deps: pip failed (its output above)" >&2; exit 1; }
  pip_job=""
  cat "$pip_log"
elif pip_needed; then
  pip_phase
else
  echo "=== phase pip: 0 s"
fi
# The Kubernetes and Rook binaries (runtime kubernetes only) are scripts/build-kubernetes.sh's:
# `make install-deps` runs it, `make test` runs it beside the tests that do not need it.
.venv/bin/python -c "import rados, dfslab" && echo "install-deps: ok ($(ceph --version | cut -d' ' -f1-3))"
