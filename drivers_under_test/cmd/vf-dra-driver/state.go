package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"

	"dralab.dev/drivers/internal/netdev"
	"dralab.dev/drivers/internal/sysfs"
)

// preparedClaim is what prepare learned about a claim and the NRI hooks need later: the
// kubelet passes only the claim's identity to unprepare, and NRI knows only the pod.
type preparedClaim struct {
	Namespace string       `json:"namespace"`
	Name      string       `json:"name"`
	UID       types.UID    `json:"uid"`
	Pods      []types.UID  `json:"pods"` // status.reservedFor
	Devices   []preparedVF `json:"devices"`
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
	path   string
	Claims map[types.UID]*preparedClaim `json:"claims"`
}

func loadCheckpoint(path string) (*checkpoint, error) {
	c := &checkpoint{path: path, Claims: map[types.UID]*preparedClaim{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	} else if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, c); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *checkpoint) save() error {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(c.path), 0o755); err != nil {
		return err
	}
	tmp := c.path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, c.path)
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
