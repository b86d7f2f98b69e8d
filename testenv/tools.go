//go:build tools

// Package testenv pins the control-plane commands so `go mod tidy` keeps their
// dependencies; the Makefile builds them with `go build <import path>`.
package testenv

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
