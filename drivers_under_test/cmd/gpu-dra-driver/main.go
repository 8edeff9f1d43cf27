// Command gpu-dra-driver is dralab's reference DRA driver for GPUs, on the upstream
// kubeletplugin framework. It discovers GPUs in sysfs (or, with --nvml-library, through NVML as
// NVIDIA's drivers do), publishes them in a ResourceSlice per node (withdrawing unhealthy or
// vanished ones), prepares claims with a CDI spec per claim and immediate device metadata
// (KEP-5304), keeps them in a checkpoint from which a claim prepared again is restored, and,
// with --report-status, writes status.devices (KEP-4817).
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"dralab.dev/drivers_under_test/dradriver"
	"dralab.dev/drivers_under_test/internal/sysfs"
)

// config is the driver's command line.
type config struct {
	opts           *dradriver.Options
	poll           time.Duration
	library        string
	hostDriverRoot string
	keepUnhealthy  bool
}

func newConfig(fs *flag.FlagSet) *config {
	c := &config{opts: dradriver.RegisterFlags(fs, "gpu.dralab.dev", ownVariants)}
	c.opts.HealthStream = true // WatchHealthStatus
	fs.DurationVar(&c.poll, "poll", 5*time.Second, "how often GPUs are looked for: ones that vanish, return or change health")
	fs.StringVar(&c.library, "nvml-library", "", "discover GPUs through this libnvidia-ml.so.1 instead of reading sysfs")
	fs.BoolVar(&c.keepUnhealthy, "keep-unhealthy", false, "keep unhealthy GPUs in the ResourceSlice: their health reaches the pods using them only through the health stream (KEP-4680)")
	fs.StringVar(&c.hostDriverRoot, "host-driver-root", "/", "with --nvml-library: the NVIDIA driver root as the node sees it, whose dev/ holds the GPUs' device nodes")
	return c
}

// driver is the GPU driver as configured, discovering GPUs in sysfs.
func (c *config) driver(client kubernetes.Interface, state *dradriver.Checkpoint[*preparedClaim]) *gpuDriver {
	return &gpuDriver{opts: c.opts, client: client, state: state, poll: c.poll,
		keepUnhealthy: c.keepUnhealthy || c.opts.Variant.Is(variantHidesFaults),
		discover:      func() ([]sysfs.GPU, error) { return sysfs.GPUs(c.opts.SysfsRoot) }}
}

func main() {
	klog.InitFlags(nil)
	c := newConfig(flag.CommandLine)
	flag.Parse()
	opts := c.opts
	newDriver := func(client kubernetes.Interface) (dradriver.Driver, error) {
		state, err := dradriver.LoadCheckpoint[*preparedClaim](opts.PluginDataDir())
		if err != nil {
			return nil, err
		}
		d := c.driver(client, state)
		if c.library != "" {
			n, err := newNVMLDiscovery(c.library, opts.SysfsRoot)
			if err != nil {
				return nil, err
			}
			d.discover, d.devRoot = n.GPUs, c.hostDriverRoot
		}
		return d, nil
	}
	if err := opts.Run(c.poll, newDriver, nil); err != nil {
		fmt.Fprintln(os.Stderr, "gpu-dra-driver:", err)
		os.Exit(1)
	}
}
