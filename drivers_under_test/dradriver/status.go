package dradriver

import (
	"context"
	"encoding/json"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	metaapply "k8s.io/client-go/applyconfigurations/meta/v1"
	resourceapply "k8s.io/client-go/applyconfigurations/resource/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// DeviceStatus is one status.devices entry (KEP-4817) this driver reports for a claim.
type DeviceStatus struct {
	Pool, Device string
	Ready        bool
	Data         map[string]any
	NetworkData  *resourceapi.NetworkDeviceData
}

// readyConditions are the conditions of an entry of driver's once its device is configured.
func readyConditions(driver string) []metav1.Condition {
	return []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "DeviceConfigured",
		Message: "configured by " + driver, LastTransitionTime: metav1.Now()}}
}

func (e DeviceStatus) entry(driver string) (resourceapi.AllocatedDeviceStatus, error) {
	out := resourceapi.AllocatedDeviceStatus{Driver: driver, Pool: e.Pool, Device: e.Device, NetworkData: e.NetworkData}
	if e.Ready {
		out.Conditions = readyConditions(driver)
	}
	if e.Data != nil {
		raw, err := json.Marshal(e.Data)
		if err != nil {
			return out, err
		}
		out.Data = &runtime.RawExtension{Raw: raw}
	}
	return out, nil
}

// WriteClaimStatus writes the status.devices entries the driver reports for a claim's devices
// on this node, as its options choose: for every device or only the first (--status-devices),
// with or without a Ready condition (--ready-condition), updated or applied (--status-write).
// claim is as for WriteStatus.
func (o *Options) WriteClaimStatus(ctx context.Context, client kubernetes.Interface, claim *resourceapi.ResourceClaim, entries []DeviceStatus) error {
	reported := o.reported(entries)
	var err error
	switch {
	case o.StatusWrite == StatusWriteApply:
		err = ApplyStatus(ctx, client, o.DriverName, claim, reported)
	case o.Variant.Is(VariantReplaceStatus):
		err = writeStatus(ctx, client, o.DriverName, claim, reported, dropEntry)
	case o.Variant.Is(VariantClobberOtherConditions):
		err = writeStatus(ctx, client, o.DriverName, claim, reported, clobberConditions(o.DriverName))
	default:
		err = WriteStatus(ctx, client, o.DriverName, claim, reported)
	}
	if err == nil && o.Variant.Is(VariantStatusForStaleAllocation) {
		o.writeStaleEntries(ctx, client, claim, reported)
	}
	return err
}

func (o *Options) reported(entries []DeviceStatus) []DeviceStatus {
	if o.StatusDevices == StatusDevicesFirst && len(entries) > 1 {
		entries = entries[:1]
	}
	out := make([]DeviceStatus, len(entries))
	for i, e := range entries {
		e.Ready = e.Ready && o.ReadyCondition
		out[i] = e
	}
	return out
}

// ClaimRef is a claim known by name only: WriteStatus reads it first.
func ClaimRef(namespace, name string) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
}

// WriteStatus replaces the driver's entries for these devices in a claim's status.devices and
// keeps every other entry. claim is the claim as last read (the one the framework read for
// prepare saves a request) or a ClaimRef; it is not modified. It reads, modifies and updates,
// reading again on conflict (ApplyStatus applies server-side instead).
func WriteStatus(ctx context.Context, client kubernetes.Interface, driver string, claim *resourceapi.ResourceClaim, entries []DeviceStatus) error {
	return writeStatus(ctx, client, driver, claim, entries, keepEntry)
}

// othersEntry is what a write does with an entry of another driver: the entry it writes in its
// place, and whether it writes one at all.
type othersEntry func(resourceapi.AllocatedDeviceStatus) (resourceapi.AllocatedDeviceStatus, bool)

// keepEntry keeps another driver's entry as it is, as a correct driver does.
func keepEntry(d resourceapi.AllocatedDeviceStatus) (resourceapi.AllocatedDeviceStatus, bool) {
	return d, true
}

// dropEntry deletes it: the replace-status variant.
func dropEntry(d resourceapi.AllocatedDeviceStatus) (resourceapi.AllocatedDeviceStatus, bool) {
	return d, false
}

// writeStatus is WriteStatus doing with other drivers' entries what others says.
func writeStatus(ctx context.Context, client kubernetes.Interface, driver string, claim *resourceapi.ResourceClaim, entries []DeviceStatus, others othersEntry) error {
	claims := client.ResourceV1().ResourceClaims(claim.Namespace)
	current := claim.DeepCopy()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if current == nil || current.ResourceVersion == "" {
			var err error
			if current, err = claims.Get(ctx, claim.Name, metav1.GetOptions{}); err != nil {
				return err
			}
		}
		ours := map[[2]string]bool{}
		for _, e := range entries {
			ours[[2]string{e.Pool, e.Device}] = true
		}
		var devices []resourceapi.AllocatedDeviceStatus
		for _, d := range current.Status.Devices {
			switch {
			case d.Driver != driver:
				if d, keep := others(d); keep {
					devices = append(devices, d)
				}
			case !ours[[2]string{d.Pool, d.Device}]:
				devices = append(devices, d)
			}
		}
		for _, e := range entries {
			entry, err := e.entry(driver)
			if err != nil {
				return err
			}
			devices = append(devices, entry)
		}
		current.Status.Devices = devices
		_, err := claims.UpdateStatus(ctx, current, metav1.UpdateOptions{FieldManager: driver})
		if err != nil {
			current = nil // read again before the next try
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("write status.devices of claim %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	return nil
}

// ApplyStatus sets the driver's entries of a claim's status.devices to these by server-side
// apply, as field manager `driver`: the server keeps the entries other managers own. claim
// names the claim (its namespace and name). v1.35-v1.37 refuse such an apply when the claim's
// opaque config parameters were not sent canonically (compact JSON, sorted keys): dralab's ST-09.
func ApplyStatus(ctx context.Context, client kubernetes.Interface, driver string, claim *resourceapi.ResourceClaim, entries []DeviceStatus) error {
	status := resourceapply.ResourceClaimStatus()
	for _, e := range entries {
		entry, err := e.entry(driver)
		if err != nil {
			return err
		}
		status.WithDevices(applied(entry))
	}
	_, err := client.ResourceV1().ResourceClaims(claim.Namespace).ApplyStatus(ctx,
		resourceapply.ResourceClaim(claim.Name, claim.Namespace).WithStatus(status), metav1.ApplyOptions{FieldManager: driver, Force: true})
	if err != nil {
		return fmt.Errorf("apply status.devices of claim %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	return nil
}

// applied is an entry as an apply configuration, with only the fields the entry sets.
func applied(e resourceapi.AllocatedDeviceStatus) *resourceapply.AllocatedDeviceStatusApplyConfiguration {
	out := resourceapply.AllocatedDeviceStatus().WithDriver(e.Driver).WithPool(e.Pool).WithDevice(e.Device)
	for _, c := range e.Conditions {
		out.WithConditions(metaapply.Condition().WithType(c.Type).WithStatus(c.Status).WithReason(c.Reason).
			WithMessage(c.Message).WithLastTransitionTime(c.LastTransitionTime))
	}
	if e.Data != nil {
		out.WithData(*e.Data)
	}
	if nd := e.NetworkData; nd != nil {
		data := resourceapply.NetworkDeviceData().WithIPs(nd.IPs...)
		if nd.InterfaceName != "" {
			data.WithInterfaceName(nd.InterfaceName)
		}
		if nd.HardwareAddress != "" {
			data.WithHardwareAddress(nd.HardwareAddress)
		}
		out.WithNetworkData(data)
	}
	return out
}
