package dradriver

import (
	"context"
	"fmt"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
)

// PublishLoop publishes the node's devices now and again whenever devices returns something
// different: hardware that disappears, returns or turns unhealthy shows up in the
// ResourceSlices within one interval.
func (o *Options) PublishLoop(ctx context.Context, helper *kubeletplugin.Helper, interval time.Duration,
	devices func() ([]resourceapi.Device, error)) {
	logger := klog.FromContext(ctx)
	l := o.newLayout()
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
		resources := l.resources(current)
		if err := helper.PublishResources(ctx, resources); err != nil {
			logger.Error(err, "Publishing ResourceSlices")
			return
		}
		for pool, p := range resources.Pools {
			for i, s := range p.Slices {
				names := make([]string, len(s.Devices))
				for j, d := range s.Devices {
					names[j] = d.Name
				}
				logger.Info("Published ResourceSlice", "pool", pool, "slice", i, "devices", names)
			}
		}
		first, last = false, current
	}, interval)
}

// PoolName is the name of this node's pool i: the node's own name when it has one pool.
func (o *Options) PoolName(i int) string {
	if o.Pools == 1 {
		return o.NodeName
	}
	return fmt.Sprintf("%s/pool-%d", o.NodeName, i)
}

// OwnsPool reports whether pool is one of the pools this driver publishes on its node.
func (o *Options) OwnsPool(pool string) bool {
	for i := range o.Pools {
		if o.PoolName(i) == pool {
			return true
		}
	}
	return false
}

// layout places the devices the driver publishes (at most --devices-per-node) in its pools
// (--pools) and their slices (--slices-per-pool). A device keeps the place it got when first
// seen, so its pool, part of its identity in allocations, never changes while the driver runs;
// new devices are dealt out in turn over the pools, then over each pool's slices.
type layout struct {
	o      *Options
	placed map[string]int // device name -> its turn
}

func (o *Options) newLayout() *layout { return &layout{o: o, placed: map[string]int{}} }

func (l *layout) resources(devices []resourceapi.Device) resourceslice.DriverResources {
	if n := l.o.DevicesPerNode; n > 0 && len(devices) > n {
		devices = devices[:n]
	}
	pools := map[string]resourceslice.Pool{}
	for i := range l.o.Pools {
		pools[l.o.PoolName(i)] = resourceslice.Pool{Slices: make([]resourceslice.Slice, l.o.SlicesPerPool)}
	}
	for _, d := range devices {
		turn, ok := l.placed[d.Name]
		if !ok {
			turn = len(l.placed)
			l.placed[d.Name] = turn
		}
		slice := &pools[l.o.PoolName(turn%l.o.Pools)].Slices[turn/l.o.Pools%l.o.SlicesPerPool]
		slice.Devices = append(slice.Devices, d)
	}
	return resourceslice.DriverResources{Pools: pools}
}
