// Command gpu-dra-driver is dralab's reference DRA driver for GPUs, on the upstream
// kubeletplugin framework. It discovers GPUs in sysfs, publishes them in a ResourceSlice per
// node (withdrawing unhealthy or vanished ones), prepares claims with a CDI spec per claim,
// immediate device metadata (KEP-5304) and, with --report-status, status.devices (KEP-4817).
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"dralab.dev/drivers/internal/dradriver"
)

func main() {
	klog.InitFlags(nil)
	opts := dradriver.RegisterFlags(flag.CommandLine, "gpu.dralab.dev", ownVariants)
	poll := flag.Duration("poll", 2*time.Second, "how often sysfs is checked for GPUs that vanish, return or change health")
	flag.Parse()
	newDriver := func(client kubernetes.Interface) (dradriver.Driver, error) {
		return &gpuDriver{opts: opts, client: client}, nil
	}
	if err := opts.Run(*poll, newDriver, nil); err != nil {
		fmt.Fprintln(os.Stderr, "gpu-dra-driver:", err)
		os.Exit(1)
	}
}
