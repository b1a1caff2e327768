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

t0=$SECONDS
missing=()
for pkg in "${DEBS[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  # Debian's ceph packages try to start systemd units; there is no systemd here and dfslab
  # runs daemons itself, so a failed unit start must not fail the install.
  # policy-rc.d: no package may start its service (docker.io's would start a dockerd that sets
  # the host's FORWARD policy to DROP; dfslab starts its own engine inside a namespace).
  policy=/usr/sbin/policy-rc.d
  own_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy"; chmod +x "$policy"; own_policy=1
    trap 'rm -f "$policy"' EXIT
  fi
  apt-get install -y -q --no-install-recommends "${missing[@]}"
  if [ "$own_policy" = 1 ]; then rm -f "$policy"; trap - EXIT; fi
fi
echo "=== phase apt: $((SECONDS - t0)) s"
t0=$SECONDS

# Debian's python3-rados is built for /usr/bin/python3, so the venv must be made from it.
if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c "import rados" 2>/dev/null; then
  rm -rf .venv
  /usr/bin/python3 -m venv --system-site-packages .venv
fi
stamp=.venv/.dfslab-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e '.[test]'
  touch "$stamp"
fi
echo "=== phase pip: $((SECONDS - t0)) s"
# The Kubernetes and Rook binaries (runtime kubernetes only) are scripts/build-kubernetes.sh's:
# `make install-deps` runs it, `make test` runs it beside the tests that do not need it.
.venv/bin/python -c "import rados, dfslab" && echo "install-deps: ok ($(ceph --version | cut -d' ' -f1-3))"
