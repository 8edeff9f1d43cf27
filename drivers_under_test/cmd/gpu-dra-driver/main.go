// Command gpu-dra-driver is dralab's reference DRA driver for GPUs, on the upstream
// kubeletplugin framework. It discovers GPUs in sysfs, publishes them in a ResourceSlice per
// node (withdrawing unhealthy or vanished ones), prepares claims with a CDI spec per claim,
// immediate device metadata (KEP-5304) and, with --report-status, status.devices (KEP-4817).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"dralab.dev/drivers/internal/dradriver"
)

func main() {
	klog.InitFlags(nil)
	opts := dradriver.RegisterFlags(flag.CommandLine, "gpu.dralab.dev", ownVariants)
	poll := flag.Duration("poll", 2*time.Second, "how often sysfs is checked for GPUs that vanish, return or change health")
	flag.Parse()
	if err := run(opts, *poll); err != nil {
		fmt.Fprintln(os.Stderr, "gpu-dra-driver:", err)
		os.Exit(1)
	}
}

func run(opts *dradriver.Options, poll time.Duration) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background())
	client, err := opts.Client()
	if err != nil {
		return err
	}
	d := &gpuDriver{opts: opts, client: client}
	// Discover once before registering, so a prepare call finds the GPUs.
	if _, err := d.devices(); err != nil {
		return fmt.Errorf("discover GPUs under %s: %w", opts.SysfsRoot, err)
	}
	helper, err := opts.Start(ctx, d, client)
	if err != nil {
		return err
	}
	defer helper.Stop()
	if opts.Variant.Is(dradriver.VariantStatusOtherNode) {
		go opts.StatusOtherNodeLoop(ctx, client)
	}
	opts.PublishLoop(ctx, helper, poll, d.devices)
	return nil
}
