package dradriver

import (
	"context"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// clobberConditions is the clobber-other-conditions variant's handling of another driver's
// entry: kept under its (driver, pool, device), its conditions replaced by this driver's Ready
// condition, as a driver does that sets the conditions of every entry it writes back.
func clobberConditions(driver string) othersEntry {
	return func(d resourceapi.AllocatedDeviceStatus) (resourceapi.AllocatedDeviceStatus, bool) {
		d.Conditions = readyConditions(driver)
		return d, true
	}
}

// statusMemory is the claim the status-for-stale-allocation variant last wrote status for, and
// the entries it wrote.
type statusMemory struct {
	mu      sync.Mutex
	claim   string
	entries []DeviceStatus
}

// remember keeps claim's entries and returns those remembered of another claim that are not
// among them: the stale ones.
func (m *statusMemory) remember(claim string, entries []DeviceStatus) []DeviceStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	var stale []DeviceStatus
	if m.claim != claim {
		ours := map[[2]string]bool{}
		for _, e := range entries {
			ours[[2]string{e.Pool, e.Device}] = true
		}
		for _, e := range m.entries {
			if !ours[[2]string{e.Pool, e.Device}] {
				stale = append(stale, e)
			}
		}
	}
	m.claim, m.entries = claim, entries
	return stale
}

// writeStaleEntries is the status-for-stale-allocation variant: once a claim's entries are
// written, it writes them again together with the entries of the claim it wrote status for
// before (devices of that claim's allocation, not this one's). The API server refuses such a
// write (an entry of an unallocated device); the variant logs the refusal and goes on, so the
// claim keeps its correct entries and its prepare succeeds: only the write itself is wrong.
func (o *Options) writeStaleEntries(ctx context.Context, client kubernetes.Interface, claim *resourceapi.ResourceClaim, entries []DeviceStatus) {
	key := string(claim.UID)
	if key == "" {
		key = claim.Namespace + "/" + claim.Name
	}
	stale := o.lastStatus.remember(key, entries)
	if len(stale) == 0 {
		return
	}
	all := append(append([]DeviceStatus{}, entries...), stale...)
	if err := WriteStatus(ctx, client, o.DriverName, ClaimRef(claim.Namespace, claim.Name), all); err != nil {
		klog.FromContext(ctx).Error(err, "Writing status with the entries of an earlier claim", "claim", klog.KObj(claim))
	}
}
