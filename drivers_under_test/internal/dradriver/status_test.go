package dradriver

import (
	"context"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// allocated is a claim with devices gpu-0 and gpu-1 of this driver and gpu-9 of another, whose
// status entry the other driver has already written.
func allocated() *resourceapi.ResourceClaim {
	result := func(driver, device string) resourceapi.DeviceRequestAllocationResult {
		return resourceapi.DeviceRequestAllocationResult{Request: "dev", Driver: driver, Pool: "node-1", Device: device}
	}
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "claim"},
		Status: resourceapi.ResourceClaimStatus{
			Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
				result("gpu.dralab.dev", "gpu-0"), result("gpu.dralab.dev", "gpu-1"), result("other.dralab.dev", "gpu-9")}}},
			Devices: []resourceapi.AllocatedDeviceStatus{{Driver: "other.dralab.dev", Pool: "node-1", Device: "gpu-9"}},
		},
	}
}

// written writes status for both of the driver's devices with the options of args and returns
// the driver's entries by device, with whether each has a Ready condition.
func written(t *testing.T, args ...string) map[string]bool {
	t.Helper()
	client := fake.NewClientset(allocated())
	entries := []DeviceStatus{{Pool: "node-1", Device: "gpu-0", Ready: true}, {Pool: "node-1", Device: "gpu-1", Ready: true}}
	if err := parse(t, args...).WriteClaimStatus(context.Background(), client, "ns", "claim", entries); err != nil {
		t.Fatal(err)
	}
	claim, err := client.ResourceV1().ResourceClaims("ns").Get(context.Background(), "claim", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, d := range claim.Status.Devices {
		if d.Driver == "other.dralab.dev" {
			continue
		}
		out[d.Device] = len(d.Conditions) == 1 && d.Conditions[0].Type == "Ready" && d.Conditions[0].Status == metav1.ConditionTrue
	}
	if len(claim.Status.Devices)-len(out) != 1 {
		t.Errorf("the other driver's entry was not kept: %v", claim.Status.Devices)
	}
	return out
}

func TestStatusForEveryDeviceWithReadyByDefault(t *testing.T) {
	if got := written(t); len(got) != 2 || !got["gpu-0"] || !got["gpu-1"] {
		t.Errorf("entries (device: Ready) %v, want both Ready", got)
	}
}

func TestStatusForTheFirstDeviceOnly(t *testing.T) {
	if got := written(t, "--status-devices=first"); len(got) != 1 || !got["gpu-0"] {
		t.Errorf("entries (device: Ready) %v, want gpu-0 alone, Ready", got)
	}
}

func TestStatusWithoutReadyCondition(t *testing.T) {
	if got := written(t, "--ready-condition=false"); len(got) != 2 || got["gpu-0"] || got["gpu-1"] {
		t.Errorf("entries (device: Ready) %v, want both without a condition", got)
	}
}
