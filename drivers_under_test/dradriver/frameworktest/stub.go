package frameworktest

import (
	"context"
	"flag"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/utils/ptr"

	"dralab.dev/drivers_under_test/dradriver"
)

// Driver is the name the stub driver runs under.
const Driver = "gpu.dralab.dev"

// Stub prepares a device per allocation result, with one attribute, as the reference drivers do.
type Stub struct{ dradriver.Common }

func (Stub) PrepareResourceClaims(_ context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	out := map[types.UID]kubeletplugin.PrepareResult{}
	for _, c := range claims {
		var devices []kubeletplugin.Device
		for _, r := range c.Status.Allocation.Devices.Results {
			devices = append(devices, kubeletplugin.Device{Requests: []string{r.Request}, PoolName: r.Pool, DeviceName: r.Device,
				Metadata: &kubeletplugin.DeviceMetadata{Attributes: map[string]resourceapi.DeviceAttribute{"model": {StringValue: ptr.To("LATEST")}}}})
		}
		out[c.UID] = kubeletplugin.PrepareResult{Devices: devices}
	}
	return out, nil
}

func (Stub) UnprepareResourceClaims(_ context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	out := map[types.UID]error{}
	for _, c := range claims {
		out[c.UID] = nil
	}
	return out, nil
}

// StartStub is the stub driver on node-1 through the framework, with metadata and variant ("": correct).
func StartStub(t *testing.T, variant string, claims ...*resourceapi.ResourceClaim) (*Node, *dradriver.Options) {
	t.Helper()
	return StartDriver(t, Stub{}, variant, claims...)
}

// StartDriver is StartStub with another plugin than the stub.
func StartDriver(t *testing.T, plugin kubeletplugin.DRAPlugin, variant string, claims ...*resourceapi.ResourceClaim) (*Node, *dradriver.Options) {
	t.Helper()
	root := Dir(t)
	fs := flag.NewFlagSet("driver", flag.ContinueOnError)
	o := dradriver.RegisterFlags(fs, Driver, nil)
	args := []string{"--node-name=node-1", "--kubelet-root-dir=" + root + "/kubelet", "--cdi-dir=" + root + "/cdi",
		"--enable-device-metadata", "--metadata-versions=metadata.resource.k8s.io/v1beta1,metadata.resource.k8s.io/v1alpha1"}
	if variant != "" {
		args = append(args, "--break="+variant)
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return Start(t, o, plugin, claims...), o
}

// Claim is an allocated claim with a device gpu-<i> of node-1 for each request.
func Claim(name, uid string, requests ...string) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid)},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{}}}
	for i, r := range requests {
		c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results, resourceapi.DeviceRequestAllocationResult{
			Request: r, Driver: Driver, Pool: "node-1", Device: "gpu-" + string(rune('0'+i))})
	}
	return c
}
