package main

import (
	"k8s.io/apimachinery/pkg/types"

	"dralab.dev/drivers_under_test/dradriver"
	"dralab.dev/drivers_under_test/internal/netdev"
	"dralab.dev/drivers_under_test/internal/sysfs"
)

// preparedClaim is what prepare learned about a claim and the NRI hooks need later: the
// kubelet passes only the claim's identity to unprepare, and NRI knows only the pod.
type preparedClaim struct {
	Namespace string       `json:"namespace"`
	Name      string       `json:"name"`
	UID       types.UID    `json:"uid"`
	Pods      []types.UID  `json:"pods"` // status.reservedFor
	Devices   []preparedVF `json:"devices"`
	// Template: made from a ResourceClaimTemplate for its pod (variantTemplateNetworkData's trigger).
	Template bool `json:"template,omitempty"`
}

type preparedVF struct {
	Request string        `json:"request"`
	Pool    string        `json:"pool"`
	Device  string        `json:"device"`
	VF      sysfs.VF      `json:"vf"`
	Config  netdev.Config `json:"config"`
	// Attached is set while the VF is inside a pod: the interface as the kernel shows it there.
	Attached *netdev.Attached `json:"attached,omitempty"`
	PodUID   types.UID        `json:"podUID,omitempty"`
}

// checkpoint keeps the prepared claims across driver restarts, so a pod that started before a
// restart gets its VF back when it stops.
type checkpoint struct {
	*dradriver.Checkpoint[*preparedClaim]
}

func loadCheckpoint(dir string) (*checkpoint, error) {
	c, err := dradriver.LoadCheckpoint[*preparedClaim](dir)
	if err != nil {
		return nil, err
	}
	return &checkpoint{c}, nil
}

// attached are the devices that are inside pods now, by device name.
func (c *checkpoint) attached() map[string]bool {
	out := map[string]bool{}
	for _, claim := range c.Claims {
		for _, dev := range claim.Devices {
			if dev.Attached != nil {
				out[dev.Device] = true
			}
		}
	}
	return out
}

// podClaims are the prepared claims reserved for pod.
func (c *checkpoint) podClaims(pod types.UID) []*preparedClaim {
	var out []*preparedClaim
	for _, claim := range c.Claims {
		for _, p := range claim.Pods {
			if p == pod {
				out = append(out, claim)
				break
			}
		}
	}
	return out
}
