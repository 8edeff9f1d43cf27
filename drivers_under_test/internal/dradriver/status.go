package dradriver

import (
	"context"
	"encoding/json"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	metav1apply "k8s.io/client-go/applyconfigurations/meta/v1"
	resourceapply "k8s.io/client-go/applyconfigurations/resource/v1"
	"k8s.io/client-go/kubernetes"
)

// DeviceStatus is one status.devices entry (KEP-4817) this driver reports for a claim.
type DeviceStatus struct {
	Pool, Device string
	Ready        bool
	Data         map[string]any
	NetworkData  *resourceapi.NetworkDeviceData
}

// ApplyStatus server-side applies the driver's entries of a claim's status.devices. The field
// manager is the driver name, so entries of other drivers on the same claim are kept.
func ApplyStatus(ctx context.Context, client kubernetes.Interface, driver, namespace, claim string, entries []DeviceStatus) error {
	status := resourceapply.ResourceClaimStatus()
	for _, e := range entries {
		entry := resourceapply.AllocatedDeviceStatus().WithDriver(driver).WithPool(e.Pool).WithDevice(e.Device)
		if e.Ready {
			entry.WithConditions(metav1apply.Condition().WithType("Ready").WithStatus(metav1.ConditionTrue).
				WithReason("DeviceConfigured").WithMessage("prepared by " + driver).
				WithLastTransitionTime(metav1.Now()))
		}
		if e.Data != nil {
			raw, err := json.Marshal(e.Data)
			if err != nil {
				return err
			}
			entry.WithData(runtime.RawExtension{Raw: raw})
		}
		if nd := e.NetworkData; nd != nil {
			entry.WithNetworkData(resourceapply.NetworkDeviceData().WithInterfaceName(nd.InterfaceName).
				WithIPs(nd.IPs...).WithHardwareAddress(nd.HardwareAddress))
		}
		status.WithDevices(entry)
	}
	_, err := client.ResourceV1().ResourceClaims(namespace).ApplyStatus(ctx,
		resourceapply.ResourceClaim(claim, namespace).WithStatus(status),
		metav1.ApplyOptions{FieldManager: driver, Force: true})
	if err != nil {
		return fmt.Errorf("apply status.devices of claim %s/%s: %w", namespace, claim, err)
	}
	return nil
}
