// Command etcd is etcd's server entry point, built through a wrapper module because
// etcd's own server module has local replace directives that `go install` refuses.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
