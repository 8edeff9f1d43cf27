package main

import (
	"fmt"

	"dralab.dev/drivers_under_test/internal/cdi"
	"dralab.dev/drivers_under_test/internal/sysfs"
)

const (
	cdiKind     = "dralab.dev/fake-gpu"
	cdiSpecName = "dralab.dev-fake-gpu.json"
)

// writeCDISpec writes the spec of one CDI device per GPU, named by its UUID.
func writeCDISpec(path string, gpus []sysfs.GPU) error {
	if len(gpus) == 0 {
		return nil // CDI rejects a spec without devices
	}
	spec := cdi.Spec{Version: cdi.Version, Kind: cdiKind}
	for _, g := range gpus {
		spec.Devices = append(spec.Devices, cdi.Device{
			Name:           g.UUID,
			ContainerEdits: cdi.Edits{Env: []string{fmt.Sprintf("DRALAB_CDI_GPU_%d=%s", g.Index, g.UUID)}},
		})
	}
	return cdi.Write(path, spec)
}
