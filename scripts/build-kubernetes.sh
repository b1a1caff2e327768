#!/usr/bin/env bash
# Builds what runtime kubernetes (local) needs and Debian does not package: kube-apiserver,
# kube-controller-manager, kube-scheduler and kubelet v1.34.4, and Rook v1.12.11 (the last Rook
# that runs Ceph Pacific 16.2, Debian's Ceph). Everything comes from the Go module proxy.
# Output: $DFSLAB_K8S_CACHE (default ~/.cache/dfslab/kubernetes)/{bin,rook}; a second run with
# the same versions does nothing, so CI on the same machine reuses the cold build (~10 min).
#
# Go: Kubernetes 1.34 needs Go >= 1.24. A `go` on PATH or in /usr/local/go that is recent enough
# is used; otherwise (Debian 12 has Go 1.19) the toolchain is fetched the way Go's own
# GOTOOLCHAIN switch does it: as the module golang.org/toolchain from the module proxy.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)

K8S_VERSION=v1.34.4
ROOK_VERSION=v1.12.11
GO_TOOLCHAIN=go1.24.4
CACHE=${DFSLAB_K8S_CACHE:-$HOME/.cache/dfslab/kubernetes}
BIN=$CACHE/bin
# The stamp names the patches too: a changed patch rebuilds Rook.
PATCHES=$(cat "$(dirname "$0")"/../native/rook/*.patch | sha256sum | cut -c1-8)
STAMP=$CACHE/built-$K8S_VERSION-rook-$ROOK_VERSION-$PATCHES
export GOPATH=$CACHE/gopath GOMODCACHE=$CACHE/gopath/pkg/mod GOCACHE=$CACHE/gocache
export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0

mkdir -p "$CACHE/rook"

# Rook's manifests: the CRDs (their schemas validate what dfslab renders), RBAC, operator.
# Each file lands whole (copied beside, then renamed): crds.yaml, last, is what dfslab looks for.
copy_rook_manifests() {
  for f in common.yaml operator.yaml crds.yaml; do
    cp "$1/deploy/examples/$f" "$CACHE/rook/.$f.partial"
    chmod u+w "$CACHE/rook/.$f.partial"
    mv "$CACHE/rook/.$f.partial" "$CACHE/rook/$f"
  done
}

# `build-kubernetes.sh manifests`: Rook's manifests alone, for `dfslab render` (a Kubernetes you
# run needs no build here). Downloading a module needs no recent Go: any go on this machine.
if [ "${1:-}" = manifests ]; then
  if [ -f "$CACHE/rook/crds.yaml" ]; then echo "build-kubernetes: Rook's manifests cached in $CACHE/rook"; exit 0; fi
  go=$(command -v go || ls /usr/local/go/bin/go /usr/lib/go-*/bin/go 2>/dev/null | head -1 || true)
  if [ -z "$go" ]; then
    echo "build-kubernetes: no Go at all; install Debian's golang-go first (scripts/install-deps.sh render does)" >&2
    exit 1
  fi
  echo "build-kubernetes: fetching Rook $ROOK_VERSION's manifests from the module proxy"
  copy_rook_manifests "$(GOFLAGS= "$go" mod download -json "github.com/rook/rook@$ROOK_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  echo "build-kubernetes: ok ($CACHE/rook)"
  exit 0
fi

# The build's stamp says the binaries are built (the manifests' own check is above: a cached
# build whose manifests were removed still gets them back from `manifests`).
if [ -f "$STAMP" ]; then
  echo "build-kubernetes: cached in $CACHE ($K8S_VERSION, Rook $ROOK_VERSION)"
  exit 0
fi
mkdir -p "$BIN"

go_minor() { "$1" version 2>/dev/null | sed -n 's/.*go1\.\([0-9]*\).*/\1/p'; }

find_go() {
  for candidate in "$(command -v go || true)" /usr/local/go/bin/go /usr/lib/go-*/bin/go; do
    [ -x "$candidate" ] || continue
    minor=$(go_minor "$candidate")
    if [ -n "$minor" ] && [ "$minor" -ge 24 ]; then echo "$candidate"; return; fi
  done
  local toolchain=$CACHE/go-$GO_TOOLCHAIN
  if [ ! -x "$toolchain/bin/go" ]; then
    local old
    old=$(command -v go || ls /usr/lib/go-*/bin/go 2>/dev/null | head -1 || true)
    if [ -z "$old" ]; then
      echo "build-kubernetes: no Go at all; install Debian's golang-go first (scripts/install-deps.sh does)" >&2
      exit 1
    fi
    echo "build-kubernetes: fetching Go toolchain $GO_TOOLCHAIN from the module proxy" >&2
    local dir
    dir=$("$old" mod download -json "golang.org/toolchain@v0.0.1-$GO_TOOLCHAIN.linux-amd64" \
          | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    rm -rf "$toolchain.tmp"
    cp -r "$dir" "$toolchain.tmp"
    chmod -R u+w "$toolchain.tmp"
    chmod +x "$toolchain.tmp"/bin/* "$toolchain.tmp"/pkg/tool/*/*   # module zips carry no modes
    mv "$toolchain.tmp" "$toolchain"
  fi
  echo "$toolchain/bin/go"
}

GO=$(find_go)
echo "build-kubernetes: using $($GO version)"

build_kubernetes() {
  local mod=$CACHE/k8s-module
  rm -rf "$mod"; mkdir -p "$mod"; cd "$mod"
  # Upstream's go.mod replaces its staging modules with ./staging paths, which `go install`
  # cannot follow; a wrapper module pins each of them to its published version instead.
  local upstream
  upstream=$("$GO" mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  local staging=v0.${K8S_VERSION#v1.}
  {
    echo "module dfslab.local/kubernetes-build"
    echo
    echo "go 1.24.0"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    sed -n 's|^[[:space:]]*\(k8s\.io/[a-z0-9/-]*\) => \./staging/src/.*$|\t\1 => \1 '"$staging"'|p' "$upstream"
    echo ")"
  } > go.mod
  cat > tools.go <<'EOF'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
EOF
  "$GO" mod tidy
  local v=k8s.io/component-base/version minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  local flags="-s -w -X $v.gitVersion=$K8S_VERSION -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean"
  for cmd in kube-scheduler kube-controller-manager kube-apiserver kubelet; do
    echo "build-kubernetes: go build $cmd $K8S_VERSION"
    "$GO" build -trimpath -ldflags "$flags" -o "$BIN/$cmd" "k8s.io/kubernetes/cmd/$cmd"
  done
}

build_rook() {
  local src=$CACHE/rook-src dir
  dir=$("$GO" mod download -json "github.com/rook/rook@$ROOK_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  # Rook's own module tree (its go.mod with its exclude and replace blocks, its go.sum), plus
  # dfslab's patches (native/rook/*.patch, each saying why): this kernel has no device-mapper.
  rm -rf "$src"; cp -r "$dir" "$src"; chmod -R u+w "$src"
  for p in "$HERE"/../native/rook/*.patch; do
    echo "build-kubernetes: applying $(basename "$p") to Rook"
    patch -s -d "$src" -p1 < "$p"
  done
  cd "$src"
  # github.com/csi-addons is missing from the checksum database.
  echo "build-kubernetes: go build rook $ROOK_VERSION"
  GONOSUMDB=github.com/csi-addons "$GO" build -trimpath \
    -ldflags "-s -w -X github.com/rook/rook/pkg/version.Version=$ROOK_VERSION" \
    -o "$BIN/rook.partial" ./cmd/rook
  mv "$BIN/rook.partial" "$BIN/rook"
  copy_rook_manifests "$dir"
}

[ -x "$BIN/kubelet" ] || build_kubernetes
[ -f "$STAMP" ] || build_rook
touch "$STAMP"
echo "build-kubernetes: ok ($BIN)"
