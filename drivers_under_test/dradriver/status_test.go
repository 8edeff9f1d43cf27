package dradriver

import (
	"context"
	"slices"
	"strings"
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
	if err := parse(t, args...).WriteClaimStatus(context.Background(), client, ClaimRef("ns", "claim"), entries); err != nil {
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
	kept := len(claim.Status.Devices) - len(out)
	if replaced := slices.Contains(args, "--break="+VariantReplaceStatus); kept != 1 && !replaced || kept != 0 && replaced {
		t.Errorf("args %v: the other driver's entries kept: %d of 1: %v", args, kept, claim.Status.Devices)
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

// A claim read before someone else updated it (a stale resourceVersion) is read again, not
// written over, and the caller's copy is left as it was.
func TestStatusFromAStaleClaimIsReadAgain(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(allocated())
	stale, err := client.ResourceV1().ResourceClaims("ns").Get(ctx, "claim", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other := stale.DeepCopy()
	other.Status.Devices = append(other.Status.Devices, resourceapi.AllocatedDeviceStatus{Driver: "third.dralab.dev", Pool: "node-1", Device: "x"})
	if _, err := client.ResourceV1().ResourceClaims("ns").UpdateStatus(ctx, other, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteStatus(ctx, client, "gpu.dralab.dev", stale, []DeviceStatus{{Pool: "node-1", Device: "gpu-0"}}); err != nil {
		t.Fatal(err)
	}
	got, err := client.ResourceV1().ResourceClaims("ns").Get(ctx, "claim", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var drivers []string
	for _, d := range got.Status.Devices {
		drivers = append(drivers, d.Driver)
	}
	if len(drivers) != 3 {
		t.Errorf("status.devices drivers %v: want the other two drivers' entries kept and gpu.dralab.dev's added", drivers)
	}
	if len(stale.Status.Devices) != 1 {
		t.Errorf("the caller's claim was modified: %v", stale.Status.Devices)
	}
}

func TestReplaceStatusDeletesTheOtherDriversEntries(t *testing.T) {
	if got := written(t, "--break="+VariantReplaceStatus); len(got) != 2 {
		t.Errorf("entries (device: Ready) %v, want the driver's two", got)
	}
}

func TestStatusAppliedServerSide(t *testing.T) {
	if got := written(t, "--status-write=apply"); len(got) != 2 || !got["gpu-0"] || !got["gpu-1"] {
		t.Errorf("entries (device: Ready) %v, want both Ready, applied beside the other driver's", got)
	}
}

func TestStatusWriteTakesUpdateOrApply(t *testing.T) {
	o := parse(t, "--status-write=patch")
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), `--status-write "patch"`) {
		t.Errorf("Validate: %v, want --status-write refused", err)
	}
}

// clobber-other-conditions keeps the other driver's entry under its (driver, pool, device) and
// gives it this driver's Ready condition.
func TestClobberOtherConditionsRewritesTheOtherDriversConditions(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(allocated())
	entries := []DeviceStatus{{Pool: "node-1", Device: "gpu-0", Ready: true}}
	if err := parse(t, "--break="+VariantClobberOtherConditions).WriteClaimStatus(ctx, client, ClaimRef("ns", "claim"), entries); err != nil {
		t.Fatal(err)
	}
	claim, err := client.ResourceV1().ResourceClaims("ns").Get(ctx, "claim", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range claim.Status.Devices {
		if d.Driver == "other.dralab.dev" {
			if d.Device != "gpu-9" || len(d.Conditions) != 1 || d.Conditions[0].Message != "configured by gpu.dralab.dev" {
				t.Errorf("the other driver's entry %+v: want gpu-9 with gpu.dralab.dev's Ready condition", d)
			}
			return
		}
	}
	t.Errorf("status.devices %v: the other driver's entry is gone", claim.Status.Devices)
}

// status-for-stale-allocation writes a later claim's entries again with those of the claim
// written before; the same claim written again gets no stale entry. (The fake client accepts
// what the API server refuses: an entry of a device the claim does not allocate.)
func TestStatusForStaleAllocationAddsTheEarlierClaimsEntries(t *testing.T) {
	ctx := context.Background()
	second := allocated()
	second.Name = "second"
	client := fake.NewClientset(allocated(), second)
	o := parse(t, "--break="+VariantStatusForStaleAllocation)
	write := func(name, device string) map[string]bool {
		t.Helper()
		if err := o.WriteClaimStatus(ctx, client, ClaimRef("ns", name), []DeviceStatus{{Pool: "node-1", Device: device}}); err != nil {
			t.Fatal(err)
		}
		claim, err := client.ResourceV1().ResourceClaims("ns").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, d := range claim.Status.Devices {
			out[d.Driver+"/"+d.Device] = true
		}
		return out
	}
	if got := write("claim", "gpu-0"); len(got) != 2 || !got["gpu.dralab.dev/gpu-0"] {
		t.Errorf("first claim's entries %v: want gpu-0 beside the other driver's", got)
	}
	if got := write("claim", "gpu-0"); len(got) != 2 {
		t.Errorf("the same claim again %v: want no stale entry", got)
	}
	if got := write("second", "gpu-1"); len(got) != 3 || !got["gpu.dralab.dev/gpu-0"] || !got["gpu.dralab.dev/gpu-1"] {
		t.Errorf("second claim's entries %v: want gpu-1 and the first claim's gpu-0", got)
	}
}
