//go:build tools

// Package testenv pins the control-plane commands and Kueue's manager so `go mod tidy` keeps
// their dependencies; testenv/build.sh builds them with `go build <import path>`.
package testenv

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "sigs.k8s.io/kueue/cmd/kueue"
)
