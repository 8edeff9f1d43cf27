package dradriver

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
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

// duplicateSlices are the duplicate-device variant's: one more pool than the driver has, as two
// ResourceSlices that both list device. They select the node by a node selector rather than
// name it: the framework deletes the slices naming its node that it did not publish.
func (o *Options) duplicateSlices(device resourceapi.Device) []*resourceapi.ResourceSlice {
	pool := resourceapi.ResourcePool{Name: fmt.Sprintf("%s/pool-%d", o.NodeName, o.Pools), Generation: 1, ResourceSliceCount: 2}
	node := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
		{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{o.NodeName}}}}}}
	var out []*resourceapi.ResourceSlice
	for i := range 2 {
		out = append(out, &resourceapi.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s-duplicate-%d", o.NodeName, o.DriverName, i)},
			Spec: resourceapi.ResourceSliceSpec{Driver: o.DriverName, Pool: pool, NodeSelector: node,
				Devices: []resourceapi.Device{device}},
		})
	}
	return out
}

// PublishDuplicateDevice is the duplicate-device variant: it publishes a pool whose two slices
// repeat the first of devices, retrying until the API takes them, and returns what removes them
// when the driver stops (the kubelet removes only the slices that name its node). The framework
// cannot publish it: it checks device names per pool and then publishes no pool at all. The
// allocator does not allocate from such a pool, so the driver's own pools still serve claims.
func (o *Options) PublishDuplicateDevice(ctx context.Context, client kubernetes.Interface, devices []resourceapi.Device) (remove func()) {
	logger := klog.FromContext(ctx)
	if len(devices) == 0 {
		logger.Info("No device to publish twice", "variant", o.Variant.Describe())
		return func() {}
	}
	api := client.ResourceV1().ResourceSlices()
	slices := o.duplicateSlices(devices[0])
	deleteAll := func(ctx context.Context) error {
		for _, s := range slices {
			if err := api.Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		return nil
	}
	publish := func(ctx context.Context) error {
		// Slices left by an instance that did not stop cleanly are replaced.
		if err := deleteAll(ctx); err != nil {
			return err
		}
		for _, s := range slices {
			if _, err := api.Create(ctx, s, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		return nil
	}
	_ = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		if err := publish(ctx); err != nil {
			logger.Error(err, "Publishing a pool that repeats a device")
			return false, nil
		}
		logger.Info("Published a pool that repeats a device", "pool", slices[0].Spec.Pool.Name, "device", devices[0].Name)
		return true, nil
	})
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := deleteAll(ctx); err != nil {
			logger.Error(err, "Removing the pool that repeats a device")
		}
	}
}
