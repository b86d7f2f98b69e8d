// Command etcd is the etcd server, built from the same module graph as the
// API server so the versions match (a plain `go install` of etcd trips on its
// replace directives).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
