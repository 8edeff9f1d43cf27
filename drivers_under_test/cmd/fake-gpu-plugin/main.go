// Command fake-gpu-plugin is a classic Kubernetes device plugin (API v1beta1) that advertises
// the node's emulated GPUs, found in sysfs, as an extended resource. It is the reference
// driver the device plugin conformance suite runs against; --break selects a broken variant.
package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"dralab.dev/drivers_under_test/internal/variant"
)

func main() {
	klog.InitFlags(nil)
	sysfsRoot := flag.String("sysfs-root", "/sys", "sysfs tree to discover GPUs in")
	hostSysfsRoot := flag.String("host-sysfs-root", "", "where the node has --sysfs-root, for the mounts handed to containers (default: --sysfs-root)")
	hostDevRoot := flag.String("host-dev-root", "/dev", "where the node has the GPUs' device nodes (nvidia<index>), for the device nodes handed to containers")
	pluginDir := flag.String("device-plugin-dir", "/var/lib/kubelet/device-plugins", "kubelet's device plugin directory, holding kubelet.sock and this plugin's socket")
	cdiDir := flag.String("cdi-dir", "/var/run/cdi", "directory for the CDI spec of the GPUs")
	resource := flag.String("resource-name", "dralab.dev/fake-gpu", "extended resource to advertise")
	poll := flag.Duration("poll", time.Second, "interval of the sysfs health poll")
	v := variant.Flag(flag.CommandLine, variants)
	flag.Parse()
	if *hostSysfsRoot == "" {
		*hostSysfsRoot = *sysfsRoot
	}

	p := &plugin{
		sysfsRoot:     *sysfsRoot,
		hostSysfsRoot: *hostSysfsRoot,
		hostDevRoot:   *hostDevRoot,
		pluginDir:     *pluginDir,
		cdiDir:        *cdiDir,
		resource:      *resource,
		poll:          *poll,
		watch:         time.Second,
		variant:       v,
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	err := p.run(ctx)
	stop()
	if err != nil {
		klog.ErrorS(err, "fake-gpu-plugin failed")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
}
