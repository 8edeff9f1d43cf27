// Command vf-dra-driver is dralab's reference DRA driver for SR-IOV virtual functions, on the
// upstream kubeletplugin framework with an NRI plugin (containerd/nri stub) in the same
// process. Prepare records the claim's config and returns the VFs without metadata; when the
// pod sandbox runs, the NRI hook moves each VF into the pod's network namespace, configures it
// and publishes what the pod sees: deferred metadata (KEP-5304) and status.devices
// networkData (KEP-4817). When the sandbox stops, the VF goes back to the node.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/containerd/nri/pkg/api"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	"dralab.dev/drivers_under_test/dradriver"
)

// config is the driver's command line.
type config struct {
	opts      *dradriver.Options
	poll      time.Duration
	nriSocket string
	fields    networkFields
	topology  bool
}

func newConfig(fs *flag.FlagSet) *config {
	c := &config{opts: dradriver.RegisterFlags(fs, "vf.dralab.dev", ownVariants)}
	fs.DurationVar(&c.poll, "poll", 5*time.Second, "how often sysfs is checked for VFs that vanish or return (as the GPU driver looks for GPUs)")
	fs.StringVar(&c.nriSocket, "nri-socket", api.DefaultSocketPath, "the container runtime's NRI socket")
	fs.BoolVar(&c.topology, "standard-topology", false, "also publish the standard pcieRoot and numaNode attributes, as upstream's deviceattribute helpers read them from sysfs")
	_ = c.fields.Set(strings.Join(allNetworkFields, ","))
	fs.Var(&c.fields, "network-data-fields", "comma-separated networkData fields to report, each optional in the API: "+
		strings.Join(allNetworkFields, ", "))
	return c
}

func main() {
	klog.InitFlags(nil)
	c := newConfig(flag.CommandLine)
	flag.Parse()
	opts := c.opts
	var d *vfDriver
	newDriver := func(client kubernetes.Interface) (dradriver.Driver, error) {
		state, err := loadCheckpoint(opts.PluginDataDir())
		if err != nil {
			return nil, fmt.Errorf("read checkpoint: %w", err)
		}
		d = &vfDriver{opts: opts, fields: c.fields, topology: c.topology, client: client, state: state, netns: map[types.UID]*os.File{}}
		return d, nil
	}
	started := func(ctx context.Context, helper *kubeletplugin.Helper) {
		d.helper = helper
		go runNRI(ctx, d, c.nriSocket)
	}
	if err := opts.Run(c.poll, newDriver, started); err != nil {
		fmt.Fprintln(os.Stderr, "vf-dra-driver:", err)
		os.Exit(1)
	}
}
