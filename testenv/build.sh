#!/usr/bin/env bash
# Builds (or reuses) the control-plane binaries under ~/.cache, keyed by versions.
# Prints the directory holding kube-apiserver, etcd, kube-controller-manager,
# kube-scheduler and kwok. Honours KUBEBUILDER_ASSETS for apiserver and etcd.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
K8S_VERSION=v1.35.4
KWOK_VERSION=v0.8.0
ETCD_VERSION=$(awk '$1=="go.etcd.io/etcd/server/v3"{print $2}' "$here/go.mod")
cache=${SPARKK8S_TESTENV_CACHE:-$HOME/.cache/sparkk8s-testenv}
out="$cache/k8s-$K8S_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION"
mkdir -p "$out"
export GOFLAGS=-mod=mod CGO_ENABLED=0

minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION \
 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor \
 -X k8s.io/component-base/version.gitTreeState=clean"

build() { # name, import path
  local name=$1 pkg=$2
  if [ -n "${KUBEBUILDER_ASSETS:-}" ] && [ -x "$KUBEBUILDER_ASSETS/$name" ]; then
    ln -sf "$KUBEBUILDER_ASSETS/$name" "$out/$name"; return
  fi
  [ -x "$out/$name" ] && return
  echo "building $name ($pkg)" >&2
  local start=$SECONDS
  (cd "$here" && go build -trimpath -ldflags "$ldflags" -o "$out/$name.tmp" "$pkg")
  mv "$out/$name.tmp" "$out/$name"
  echo "built $name in $((SECONDS - start))s" >&2
}

build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build etcd ./cmd/etcd
build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
build kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler
if [ ! -x "$out/kwok" ]; then
  echo "building kwok $KWOK_VERSION" >&2
  start=$SECONDS
  GOBIN="$out" GOFLAGS= go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  echo "built kwok in $((SECONDS - start))s" >&2
fi
echo "$out"
