package main

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"sort"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"dralab.dev/drivers/internal/dradriver/frameworktest"
)

// The GPU driver's metadata variants, through the upstream framework's writes: each is
// compared with the correct driver and must differ in the one promise it breaks.

// throughFramework is the test driver with metadata as variant ("": correct), started through
// the framework with claim, which it prepares.
func throughFramework(t *testing.T, claim func(d *gpuDriver) *resourceapi.ResourceClaim, variant string) (*frameworktest.Node, *gpuDriver, *resourceapi.ResourceClaim) {
	t.Helper()
	args := []string{"--enable-device-metadata"}
	if variant != "" {
		args = append(args, "--break="+variant)
	}
	d := newTestDriver(t, frameworktest.Dir(t), args...)
	c := claim(d)
	n := frameworktest.Start(t, d.opts, d, c)
	n.Prepare(t, c)
	return n, d, c
}

// allocated is a claim in ns with the allocation results.
func allocated(results ...resourceapi.DeviceRequestAllocationResult) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "claim", UID: "3f2a-uid"},
		Status:     resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: results}}},
	}
}

type fileDevice struct {
	Driver     string                    `json:"driver"`
	Pool       string                    `json:"pool"`
	Name       string                    `json:"name"`
	Attributes map[string]map[string]any `json:"attributes"`
}

// devices are the devices of the first object of a metadata file; nil if there is no file.
func devices(t *testing.T, file string) []fileDevice {
	t.Helper()
	data, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return nil
	}
	var obj struct {
		Requests []struct {
			Devices []fileDevice `json:"devices"`
		} `json:"requests"`
	}
	if err == nil {
		err = json.NewDecoder(bytes.NewReader(data)).Decode(&obj)
	}
	if err != nil || len(obj.Requests) != 1 {
		t.Fatalf("%s: %v %s", file, err, data)
	}
	return obj.Requests[0].Devices
}

func names(devs []fileDevice) []string {
	var out []string
	for _, d := range devs {
		out = append(out, d.Driver+"/"+d.Pool+"/"+d.Name)
	}
	sort.Strings(out)
	return out
}

// The slice's attributes stay as they are; the extras are metadata-only.
func TestTooManyAttributesAreMetadataOnly(t *testing.T) {
	for _, variant := range []string{"", variantTooManyAttributes} {
		n, d, c := throughFramework(t, func(d *gpuDriver) *resourceapi.ResourceClaim { return testClaim(d.opts) }, variant)
		devs := devices(t, n.MetadataFile(c, "dev"))
		published, _ := d.Devices()
		slice := published[1].Attributes // gpu-1, the claim's
		want := map[string]int{"": len(slice), variantTooManyAttributes: maxMetadataAttributes + 1}[variant]
		if len(devs) != 1 || devs[0].Name != published[1].Name || len(devs[0].Attributes) != want {
			t.Fatalf("variant %q: devices %v, want %s with %d attributes", variant, devs, published[1].Name, want)
		}
		for name, value := range slice {
			inFile, _ := json.Marshal(devs[0].Attributes[string(name)])
			inSlice, _ := json.Marshal(value)
			if string(inFile) != string(inSlice) {
				t.Errorf("variant %q, attribute %s: file %s, slice %s", variant, name, inFile, inSlice)
			}
		}
	}
}

func TestOneFilePerClaimMergesTheRequestsFiles(t *testing.T) {
	twoRequests := func(d *gpuDriver) *resourceapi.ResourceClaim {
		pool := d.opts.PoolName(0)
		return allocated(resourceapi.DeviceRequestAllocationResult{Request: "req0", Driver: d.opts.DriverName, Pool: pool, Device: "gpu-0"},
			resourceapi.DeviceRequestAllocationResult{Request: "req1", Driver: d.opts.DriverName, Pool: pool, Device: "gpu-1"})
	}
	for variant, want := range map[string][2][]string{
		"":                     {{"gpu.dralab.dev/node-1/gpu-0"}, {"gpu.dralab.dev/node-1/gpu-1"}},
		variantOneFilePerClaim: {{"gpu.dralab.dev/node-1/gpu-0", "gpu.dralab.dev/node-1/gpu-1"}, nil},
	} {
		n, _, c := throughFramework(t, twoRequests, variant)
		for i, request := range []string{"req0", "req1"} {
			if got := names(devices(t, n.MetadataFile(c, request))); !reflect.DeepEqual(got, want[i]) {
				t.Errorf("variant %q, %s's file lists %v, want %v", variant, request, got, want[i])
			}
		}
	}
}

func TestOtherDriversDevicesAreListedInTheDriversFile(t *testing.T) {
	twoDrivers := func(d *gpuDriver) *resourceapi.ResourceClaim {
		pool := d.opts.PoolName(0)
		return allocated(resourceapi.DeviceRequestAllocationResult{Request: "dev", Driver: d.opts.DriverName, Pool: pool, Device: "gpu-1"},
			resourceapi.DeviceRequestAllocationResult{Request: "dev", Driver: "gpu-b.dralab.dev", Pool: pool, Device: "gpu-0"})
	}
	for variant, want := range map[string][]string{
		"":                  {"gpu.dralab.dev/node-1/gpu-1"},
		variantOtherDrivers: {"gpu.dralab.dev/node-1/gpu-0", "gpu.dralab.dev/node-1/gpu-1"},
	} {
		n, _, c := throughFramework(t, twoDrivers, variant)
		if got := names(devices(t, n.MetadataFile(c, "dev"))); !reflect.DeepEqual(got, want) {
			t.Errorf("variant %q: the file lists %v, want %v", variant, got, want)
		}
	}
}
