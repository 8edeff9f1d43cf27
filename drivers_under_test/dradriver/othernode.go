package dradriver

import (
	"context"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// StatusOtherNodeLoop is the status-other-node variant: it writes status.devices for every
// claim allocated to this driver on another node, as a per-node component holding
// arbitrary-node permissions could. A correct driver never does this.
func (o *Options) StatusOtherNodeLoop(ctx context.Context, client kubernetes.Interface) {
	logger := klog.FromContext(ctx)
	var mu sync.Mutex
	written := map[types.UID]bool{}
	handle := func(obj any) {
		claim, ok := obj.(*resourceapi.ResourceClaim)
		if !ok || claim.Status.Allocation == nil {
			return
		}
		var entries []DeviceStatus
		for _, r := range claim.Status.Allocation.Devices.Results {
			if r.Driver == o.DriverName && !o.OwnsPool(r.Pool) {
				entries = append(entries, DeviceStatus{Pool: r.Pool, Device: r.Device, Ready: true,
					Data: map[string]any{"node": o.NodeName}})
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if len(entries) == 0 || written[claim.UID] {
			return
		}
		if err := WriteStatus(ctx, client, o.DriverName, claim, entries); err != nil {
			logger.Error(err, "Writing status for another node's claim", "claim", klog.KObj(claim))
			return
		}
		written[claim.UID] = true
		logger.Info("Wrote status for another node's claim", "claim", klog.KObj(claim))
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	_, _ = factory.Resource().V1().ResourceClaims().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    handle,
		UpdateFunc: func(_, obj any) { handle(obj) },
	})
	factory.Start(ctx.Done())
	<-ctx.Done()
	factory.Shutdown()
}
