#!/usr/bin/env bash
# Builds what runtime kubernetes (local) needs and Debian does not package: kube-apiserver,
# kube-controller-manager, kube-scheduler and kubelet v1.34.4, and Rook: v1.12.11 (the last Rook
# that runs Ceph Pacific 16.2, Debian's Ceph) by default, v1.18.8 (Reef, Squid, Tentacle) for a
# newer release (`ceph: {release: reef}`). Everything comes from the Go module proxy.
# Output: $DFSLAB_K8S_CACHE (default ~/.cache/dfslab/kubernetes)/bin/{kube-*,kubelet,rook-VERSION}
# and rook/VERSION/ (Rook's manifests); a second run with the same versions does nothing, so CI on
# the same machine reuses the cold build (~10 min; a second Rook ~3 min more).
#
# Usage: build-kubernetes.sh                       Kubernetes and the default Rook
#        build-kubernetes.sh rook-VERSION          Kubernetes and that Rook (one of ENGINES)
#        build-kubernetes.sh all                   Kubernetes and every Rook of ENGINES (the test suite)
#        build-kubernetes.sh manifests [rook-VERSION]   Rook's manifests alone (`dfslab render`)
#
# Go: Kubernetes 1.34 needs Go >= 1.24. A `go` on PATH or in /usr/local/go that is recent enough
# is used; otherwise (Debian 12 has Go 1.19) the toolchain is fetched the way Go's own
# GOTOOLCHAIN switch does it: as the module golang.org/toolchain from the module proxy.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)

K8S_VERSION=v1.34.4
# Every engine build a release names (the `engine` of the filesystems' RELEASES, as
# rook-VERSION; tests/test_releases_unit.py checks the two lists agree), the default first.
ENGINES="rook-v1.12.11 rook-v1.18.8"
GO_TOOLCHAIN=go1.24.4
CACHE=${DFSLAB_K8S_CACHE:-$HOME/.cache/dfslab/kubernetes}
BIN=$CACHE/bin
export GOPATH=$CACHE/gopath GOMODCACHE=$CACHE/gopath/pkg/mod GOCACHE=$CACHE/gocache
export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0

case "${1:-}" in
  "") wanted=${ENGINES%% *} ;;
  all) wanted=$ENGINES ;;
  manifests) wanted=${2:-${ENGINES%% *}} ;;
  *) wanted=$1 ;;
esac
WANTED=""  # the Rook versions asked for
for engine in $wanted; do
  case " $ENGINES " in
    *" $engine "*) WANTED="$WANTED ${engine#rook-}" ;;
    *) echo "build-kubernetes: unknown argument $engine; usage: build-kubernetes.sh [ENGINE | all | manifests [ENGINE]]," \
            "ENGINE one of: $ENGINES" >&2; exit 2 ;;
  esac
done
WANTED=${WANTED# }
# Rook's manifests: the CRDs (their schemas validate what dfslab renders), RBAC, operator.
# Each file lands whole (copied beside, then renamed): crds.yaml, last, is what dfslab looks for.
copy_rook_manifests() {  # copy_rook_manifests MODULE-DIR VERSION
  local out=$CACHE/rook/$2
  mkdir -p "$out"
  for f in common.yaml operator.yaml crds.yaml; do
    cp "$1/deploy/examples/$f" "$out/.$f.partial"
    chmod u+w "$out/.$f.partial"
    mv "$out/.$f.partial" "$out/$f"
  done
}

# `build-kubernetes.sh manifests`: Rook's manifests alone, for `dfslab render` (a Kubernetes you
# run needs no build here). Downloading a module needs no recent Go: any go on this machine.
if [ "${1:-}" = manifests ]; then
  if [ -f "$CACHE/rook/$WANTED/crds.yaml" ]; then echo "build-kubernetes: Rook's manifests cached in $CACHE/rook/$WANTED"; exit 0; fi
  go=$(command -v go || ls /usr/local/go/bin/go /usr/lib/go-*/bin/go 2>/dev/null | head -1 || true)
  if [ -z "$go" ]; then
    echo "build-kubernetes: no Go at all; install Debian's golang-go first (scripts/install-deps.sh render does)" >&2
    exit 1
  fi
  echo "build-kubernetes: fetching Rook $WANTED's manifests from the module proxy"
  copy_rook_manifests "$(GOFLAGS= "$go" mod download -json "github.com/rook/rook@$WANTED" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')" "$WANTED"
  echo "build-kubernetes: ok ($CACHE/rook/$WANTED)"
  exit 0
fi

# Each Rook's stamp says its binary is built; it names dfslab's patches too, so a changed patch
# rebuilds that Rook (the manifests' own check is above: a cached build whose manifests were
# removed still gets them back from `manifests`).
rook_stamp() { echo "$CACHE/built-rook-$1-$(cat "$HERE/../native/rook/$1"/*.patch | sha256sum | cut -c1-8)"; }
missing=""
for version in $WANTED; do [ -f "$(rook_stamp "$version")" ] || missing="$missing $version"; done
if [ -x "$BIN/kubelet" ] && [ -z "$missing" ]; then
  echo "build-kubernetes: cached in $CACHE ($K8S_VERSION, Rook $WANTED)"
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

build_rook() {  # build_rook VERSION
  local version=$1 src=$CACHE/rook-src dir
  dir=$("$GO" mod download -json "github.com/rook/rook@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  # Rook's own module tree (its go.mod with its exclude and replace blocks, its go.sum), plus
  # dfslab's patches (native/rook/VERSION/*.patch, each saying why): this kernel has no device-mapper.
  rm -rf "$src"; cp -r "$dir" "$src"; chmod -R u+w "$src"
  for p in "$HERE/../native/rook/$version"/*.patch; do
    echo "build-kubernetes: applying $(basename "$p") to Rook $version"
    patch -s -d "$src" -p1 < "$p"
  done
  cd "$src"
  # From v1.13 Rook's API types are a module of their own (pkg/apis), replaced by its directory
  # in go.mod, which the module's zip leaves out: the proxy serves that module at the tag's own
  # commit as a pseudo-version (the tag's time and commit, from the download's .info).
  if grep -q 'github.com/rook/rook/pkg/apis => ./pkg/apis' go.mod; then
    local info=$GOMODCACHE/cache/download/github.com/rook/rook/@v/$version.info when commit
    when=$(sed -n 's/.*"Time":"\([^"]*\)".*/\1/p' "$info" | tr -d -- '-:TZ')
    commit=$(sed -n 's/.*"Hash":"\([0-9a-f]\{12\}\).*/\1/p' "$info")
    "$GO" mod edit -replace "github.com/rook/rook/pkg/apis=github.com/rook/rook/pkg/apis@v0.0.0-$when-$commit"
  fi
  # github.com/csi-addons is missing from the checksum database.
  echo "build-kubernetes: go build rook $version"
  GONOSUMDB=github.com/csi-addons "$GO" build -trimpath \
    -ldflags "-s -w -X github.com/rook/rook/pkg/version.Version=$version" \
    -o "$BIN/rook-$version.partial" ./cmd/rook
  mv "$BIN/rook-$version.partial" "$BIN/rook-$version"
  copy_rook_manifests "$dir" "$version"
  touch "$(rook_stamp "$version")"
}

[ -x "$BIN/kubelet" ] || build_kubernetes
for version in $missing; do build_rook "$version"; done
echo "build-kubernetes: ok ($BIN)"
