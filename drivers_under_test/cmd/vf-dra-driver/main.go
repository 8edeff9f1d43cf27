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
	"path/filepath"
	"time"

	"github.com/containerd/nri/pkg/api"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	"dralab.dev/drivers/internal/dradriver"
)

func main() {
	klog.InitFlags(nil)
	opts := dradriver.RegisterFlags(flag.CommandLine, "vf.dralab.dev", ownVariants)
	poll := flag.Duration("poll", 2*time.Second, "how often sysfs is checked for VFs that vanish or return")
	nriSocket := flag.String("nri-socket", api.DefaultSocketPath, "the container runtime's NRI socket")
	flag.Parse()
	var d *vfDriver
	newDriver := func(client kubernetes.Interface) (dradriver.Driver, error) {
		state, err := loadCheckpoint(filepath.Join(opts.PluginDataDir(), "prepared-claims.json"))
		if err != nil {
			return nil, fmt.Errorf("read checkpoint: %w", err)
		}
		d = &vfDriver{opts: opts, client: client, state: state, netns: map[types.UID]*os.File{}}
		return d, nil
	}
	started := func(ctx context.Context, helper *kubeletplugin.Helper) {
		d.helper = helper
		go runNRI(ctx, d, *nriSocket)
	}
	if err := opts.Run(*poll, newDriver, started); err != nil {
		fmt.Fprintln(os.Stderr, "vf-dra-driver:", err)
		os.Exit(1)
	}
}
