// Command pause is the real node's sandbox ("pause") container: it holds the pod's
// namespaces, reaps the zombies it inherits as the pod's PID 1, and exits on SIGTERM or
// SIGINT. There is no registry to pull Kubernetes' own pause image from, so containerd's
// sandbox_image is this binary, packed into an image by testenv/realnode/image.py.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for received := range signals {
		if received != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var status syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
