package dradriver

import (
	"context"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
)

// PublishLoop publishes the node's pool (named after the node) now and again whenever devices
// returns something different: hardware that disappears, returns or turns unhealthy shows up
// in the ResourceSlice within one interval.
func (o *Options) PublishLoop(ctx context.Context, helper *kubeletplugin.Helper, interval time.Duration,
	devices func() ([]resourceapi.Device, error)) {
	logger := klog.FromContext(ctx)
	var last []resourceapi.Device
	first := true
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		current, err := devices()
		if err != nil {
			logger.Error(err, "Discovering devices")
			return
		}
		if !first && apiequality.Semantic.DeepEqual(current, last) {
			return
		}
		pools := map[string]resourceslice.Pool{o.NodeName: {Slices: []resourceslice.Slice{{Devices: current}}}}
		if err := helper.PublishResources(ctx, resourceslice.DriverResources{Pools: pools}); err != nil {
			logger.Error(err, "Publishing ResourceSlice")
			return
		}
		names := make([]string, len(current))
		for i, d := range current {
			names[i] = d.Name
		}
		logger.Info("Published ResourceSlice", "pool", o.NodeName, "devices", names)
		first, last = false, current
	}, interval)
}
