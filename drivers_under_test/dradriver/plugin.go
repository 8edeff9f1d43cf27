package dradriver

import (
	"context"
	"errors"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"
)

// Common is embedded by the reference drivers: the kubeletplugin.DRAPlugin methods they answer alike.
type Common struct{}

// HandleError logs background errors (slice publishing); a fatal one ends the process.
func (Common) HandleError(ctx context.Context, err error, msg string) {
	klog.FromContext(ctx).Error(err, msg)
	if !errors.Is(err, kubeletplugin.ErrRecoverable) {
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
}

// WatchHealthStatus: health shows in the ResourceSlice (unhealthy devices are withdrawn).
func (Common) WatchHealthStatus(context.Context, chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}
