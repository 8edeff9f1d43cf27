package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"dralab.dev/drivers_under_test/dradriver"
	"dralab.dev/drivers_under_test/dradriver/frameworktest"
	"dralab.dev/drivers_under_test/internal/cdi"
)

// The GPU driver's metadata variants, through the upstream framework's writes: each is
// compared with the correct driver and must differ in the one promise it breaks.

// throughFramework is the test driver with metadata (and more args) as variant ("": correct),
// started through the framework with claim, which it prepares.
func throughFramework(t *testing.T, claim func(d *gpuDriver) *resourceapi.ResourceClaim, variant string, more ...string) (*frameworktest.Node, *gpuDriver, *resourceapi.ResourceClaim) {
	t.Helper()
	args := append([]string{"--enable-device-metadata"}, more...)
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

// definedCDIDevices are the CDI device IDs (kind=name) the specs in dir define.
func definedCDIDevices(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	out := map[string]bool{}
	for _, file := range files {
		var spec cdi.Spec
		data, err := os.ReadFile(file)
		if err == nil {
			err = json.Unmarshal(data, &spec)
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, d := range spec.Devices {
			out[spec.QualifiedName(d.Name)] = true
		}
	}
	return out
}

// The variant's answer names the same CDI devices as the correct one, the driver's and with
// metadata the metadata's, each with a suffix no spec defines; the specs are the correct
// driver's. The claim is prepared again: that answer comes from the checkpoint, which the suffix
// must not reach.
func TestUnresolvableCDIIDsAreTheSpecsDevicesWithASuffix(t *testing.T) {
	for metadata, specs := range map[string]int{"--enable-device-metadata=true": 2, "--enable-device-metadata=false": 1} {
		answered := map[string][]string{}
		for _, variant := range []string{"", dradriver.VariantUnresolvableCDIID} {
			n, d, c := throughFramework(t, func(d *gpuDriver) *resourceapi.ResourceClaim { return testClaim(d.opts) }, variant, metadata)
			defined := definedCDIDevices(t, d.opts.CDIDir)
			if len(defined) != specs {
				t.Errorf("%s, variant %q: specs define %v, want %d devices", metadata, variant, defined, specs)
			}
			for _, dev := range n.Prepare(t, c)[string(c.UID)] {
				for _, id := range dev.CdiDeviceIds {
					base, suffixed := strings.CutSuffix(id, "-unresolvable")
					if suffixed != (variant != "") || !defined[base] {
						t.Errorf("%s, variant %q: answered CDI device %s; the specs define %v", metadata, variant, id, defined)
					}
					answered[variant] = append(answered[variant], base)
				}
			}
		}
		if len(answered[""]) != specs || !reflect.DeepEqual(answered[""], answered[dradriver.VariantUnresolvableCDIID]) {
			t.Errorf("%s: correct driver answered %v, the variant (suffix cut) %v", metadata, answered[""], answered[dradriver.VariantUnresolvableCDIID])
		}
	}
}

// Unprepare succeeds and drops the claim from the checkpoint; the variant leaves the claim's
// GPU spec, and only it: the metadata files and their specs go as with the correct driver.
func TestLeaveCDISpecLeavesOnlyTheDriversOwnSpec(t *testing.T) {
	for _, variant := range []string{"", dradriver.VariantLeaveCDISpec} {
		n, d, c := throughFramework(t, func(d *gpuDriver) *resourceapi.ResourceClaim { return testClaim(d.opts) }, variant)
		n.Unprepare(t, c)
		var want []string
		if variant != "" {
			want = []string{filepath.Join(d.opts.CDIDir, "gpu.dralab.dev_gpu_"+string(c.UID)+".json")}
		}
		if left, _ := filepath.Glob(filepath.Join(d.opts.CDIDir, "*")); !reflect.DeepEqual(left, want) {
			t.Errorf("variant %q: CDI dir holds %v after unprepare, want %v", variant, left, want)
		}
		if _, err := os.Stat(filepath.Dir(filepath.Dir(n.MetadataFile(c, "dev")))); !os.IsNotExist(err) {
			t.Errorf("variant %q: the claim's metadata dir after unprepare: %v", variant, err)
		}
		saved, err := dradriver.LoadCheckpoint[*preparedClaim](d.opts.PluginDataDir())
		if err != nil || len(saved.Claims) != 0 {
			t.Errorf("variant %q: checkpoint after unprepare %v (%v), want no claim", variant, saved.Claims, err)
		}
	}
}

// pci-bus-id-of-port publishes the address of the port above each GPU, which is not the GPU's own.
func TestPCIBusIDOfPortPublishesThePortsAddress(t *testing.T) {
	for _, variant := range []string{"", variantPCIBusIDOfPort} {
		args := []string{}
		if variant != "" {
			args = append(args, "--break="+variant)
		}
		d := newTestDriver(t, frameworktest.Dir(t), args...)
		gpus, err := d.discover()
		if err != nil || len(gpus) == 0 {
			t.Fatalf("discovered %v, %v", gpus, err)
		}
		published, _ := d.Devices()
		for i, g := range gpus {
			want := map[string]string{"": g.BDF, variantPCIBusIDOfPort: filepath.Base(filepath.Dir(g.Dir))}[variant]
			got := published[i].Attributes["resource.kubernetes.io/pciBusID"].StringValue
			if got == nil || *got != want || (variant != "" && want == g.BDF) {
				t.Errorf("variant %q: %s publishes pciBusID %v, want %s (its own address is %s)", variant, published[i].Name, got, want, g.BDF)
			}
		}
	}
}
