#!/usr/bin/env bash
# Builds (or reuses) the control-plane binaries under ~/.cache, keyed by their inputs (this
# module's go.mod, go.sum and cmd/, and kwok's version), and prints the directory holding
# kube-apiserver, etcd, kube-controller-manager, kube-scheduler, kubelet and pause (the real
# node's, testenv/realnode), kueue (Kueue's manager, testenv/build_kueue.sh) and kwok
# (progress goes to stderr). The kubelet and Kueue are built here, in the same `go build` as
# the plane, against the same k8s.io modules: the packages they share compile once (the
# kubelet: 217 s beside the plane's build, 23 min alone; Kueue: 78 % of its source is
# the plane's). If KUBEBUILDER_ASSETS holds kube-apiserver and etcd, those two are used
# instead of building them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
K8S_VERSION=v1.35.4
KWOK_VERSION=v0.8.0
ETCD_VERSION=$(awk '$1=="go.etcd.io/etcd/server/v3"{print $2}' "$here/go.mod")
cache=${SPARKK8S_TESTENV_CACHE:-$HOME/.cache/sparkk8s-testenv}
# Modules live under ~/.cache too, so one cache directory carries a warm CI run.
export GOMODCACHE=${GOMODCACHE:-$HOME/.cache/go-mod}
export GOFLAGS=-mod=mod CGO_ENABLED=0

minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION \
 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor \
 -X k8s.io/component-base/version.gitTreeState=clean"
# The binaries are stripped (-s -w), so no package needs DWARF either: without it the plane
# and Kueue took 638 CPU-s from an empty build cache, with it 708.
gcflags=all=-dwarf=false
inputs=$(cd "$here" && { cat go.mod go.sum cmd/*/*.go; echo "$ldflags $gcflags"; } | md5sum | cut -c1-12)
out="$cache/k8s-$K8S_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION-$inputs"
mkdir -p "$out"

# One build at a time: test sessions started side by side would otherwise
# compile the same binaries at once on the same two cores.
exec 9>"$cache/.build.lock"
flock 9

# Every missing binary in one `go build` (its packages compile once, in parallel, and one
# binary links while others compile), with kwok's `go install` beside it in the background:
# one after another they left a core idle for most of a cold build (user + system CPU was
# 1.4 cores on average over 19.5 minutes of prerequisites).
want=() names=()
want_binary() { # name, import path
  [ -x "$out/$1" ] && return
  names+=("$1"); want+=("$2")
}

assets=${KUBEBUILDER_ASSETS:-}
if [ -n "$assets" ] && [ -x "$assets/kube-apiserver" ] && [ -x "$assets/etcd" ]; then
  # A directory of its own, so the version-keyed one never holds foreign binaries.
  result="$cache/assets-$(printf '%s' "$assets" | md5sum | cut -c1-12)"
else
  assets=""
  result="$out"
  want_binary kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
  want_binary etcd ./cmd/etcd
fi
want_binary kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
want_binary kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler
want_binary kubelet k8s.io/kubernetes/cmd/kubelet
want_binary pause ./cmd/pause
want_binary kueue sigs.k8s.io/kueue/cmd/kueue

kwok_pid=
if [ ! -x "$out/kwok" ]; then
  echo "building kwok $KWOK_VERSION" >&2
  (
    start=$SECONDS
    GOBIN="$out/kwok.tmp.$$" GOFLAGS= go install -trimpath -gcflags="$gcflags" -ldflags "-s -w" \
      "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
    mv "$out/kwok.tmp.$$/kwok" "$out/kwok" && rmdir "$out/kwok.tmp.$$"
    echo "built kwok in $((SECONDS - start))s" >&2
  ) &
  kwok_pid=$!
fi
if [ "${#want[@]}" -gt 0 ]; then
  echo "building ${names[*]}" >&2
  start=$SECONDS
  tmp="$out/build.tmp.$$"
  mkdir -p "$tmp"
  # Each binary is named after its package's last element, as the names above are.
  (cd "$here" && go build -trimpath -gcflags="$gcflags" -ldflags "$ldflags" -o "$tmp/" "${want[@]}")
  for name in "${names[@]}"; do mv "$tmp/$name" "$out/$name"; done
  rmdir "$tmp"
  echo "built ${names[*]} in $((SECONDS - start))s" >&2
fi
if [ -n "$kwok_pid" ]; then wait "$kwok_pid"; fi
if [ -n "$assets" ]; then
  mkdir -p "$result"
  ln -sfn "$assets/kube-apiserver" "$assets/etcd" "$result/"
  ln -sfn "$out/kube-controller-manager" "$out/kube-scheduler" "$out/kubelet" "$out/pause" \
    "$out/kueue" "$out/kwok" "$result/"
fi
echo "$result"
