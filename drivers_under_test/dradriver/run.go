package dradriver

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"
)

// Driver is a reference DRA driver: the framework's plugin plus its device discovery.
type Driver interface {
	kubeletplugin.DRAPlugin
	// Devices discovers the node's devices as they belong in its ResourceSlice.
	Devices() ([]resourceapi.Device, error)
}

// Run runs a driver until SIGTERM or SIGINT: it builds the driver with the API client,
// discovers once (so the first prepare finds the devices), registers with the kubelet, calls
// started with the framework's helper, then publishes the slice every poll.
func (o *Options) Run(poll time.Duration, newDriver func(kubernetes.Interface) (Driver, error),
	started func(context.Context, *kubeletplugin.Helper)) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if o.Variant.Is(VariantCrashAtStart) {
		return fmt.Errorf("%s: cannot open the device control node /dev/dralab-ctl: no such device", o.Variant.Describe())
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background())
	serveMetrics(ctx, o.HTTPEndpoint)
	client, err := o.Client()
	if err != nil {
		return err
	}
	d, err := newDriver(client)
	if err != nil {
		return err
	}
	devices, err := d.Devices()
	if err != nil {
		return fmt.Errorf("discover devices under %s: %w", o.SysfsRoot, err)
	}
	helper, err := o.Start(ctx, d, client)
	if err != nil {
		return err
	}
	defer helper.Stop()
	if started != nil {
		started(ctx, helper)
	}
	if o.Variant.Is(VariantStatusOtherNode) {
		go o.StatusOtherNodeLoop(ctx, client)
	}
	if o.Variant.Is(VariantDuplicateDevice) {
		remove := o.PublishDuplicateDevice(ctx, client, devices)
		defer remove()
	}
	o.PublishLoop(ctx, helper, poll, o.discovery(devices, d.Devices))
	return nil
}

// discovery is what the publish loop looks for devices with: the driver's discovery, or for
// static-inventory the devices found at start.
func (o *Options) discovery(atStart []resourceapi.Device, discover func() ([]resourceapi.Device, error)) func() ([]resourceapi.Device, error) {
	if o.Variant.Is(VariantStaticInventory) {
		return func() ([]resourceapi.Device, error) { return atStart, nil }
	}
	return discover
}
