package dradriver

import (
	"fmt"
	"os"
	"path/filepath"

	"dralab.dev/drivers_under_test/internal/cdi"
)

func (o *Options) cdiSpecPath(class, claimUID string) string {
	return filepath.Join(o.CDIDir, fmt.Sprintf("%s_%s_%s.json", o.DriverName, class, claimUID))
}

// WriteClaimCDISpec writes one spec per claim, kind {driver}/{class}, with a device
// {claimUID}-{name} per device, and returns the CDI device IDs by device name. Names carry
// the claim UID so the runtime's spec cache never serves a stale device.
func (o *Options) WriteClaimCDISpec(class, claimUID string, devices map[string]cdi.Edits) (map[string]string, error) {
	spec := cdi.Spec{Version: cdi.Version, Kind: o.DriverName + "/" + class}
	ids := map[string]string{}
	for name, edits := range devices {
		spec.Devices = append(spec.Devices, cdi.Device{Name: claimUID + "-" + name, ContainerEdits: edits})
		ids[name] = spec.QualifiedName(claimUID + "-" + name)
	}
	return ids, cdi.Write(o.cdiSpecPath(class, claimUID), spec)
}

// RemoveClaimCDISpec removes the claim's spec; a spec that is already gone is fine (unprepare is
// idempotent). The leave-cdi-spec variant keeps it, and the driver drops the claim as unprepared.
func (o *Options) RemoveClaimCDISpec(class, claimUID string) error {
	if o.Variant.Is(VariantLeaveCDISpec) {
		return nil
	}
	if err := os.Remove(o.cdiSpecPath(class, claimUID)); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}
