package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"dralab.dev/drivers_under_test/dradriver"
	"dralab.dev/drivers_under_test/internal/sysfs"
)

// newTestDriver is the GPU driver with two GPUs on node-1, its CDI dir and plugin data dir in a
// temporary directory, run with args.
func newTestDriver(t *testing.T, root string, args ...string) *gpuDriver {
	t.Helper()
	fs := flag.NewFlagSet("gpu-dra-driver", flag.ContinueOnError)
	c := newConfig(fs)
	if err := fs.Parse(append([]string{"--node-name=node-1", "--kubelet-root-dir=" + filepath.Join(root, "kubelet"),
		"--cdi-dir=" + filepath.Join(root, "cdi")}, args...)); err != nil {
		t.Fatal(err)
	}
	state, err := dradriver.LoadCheckpoint[*preparedClaim](c.opts.PluginDataDir())
	if err != nil {
		t.Fatal(err)
	}
	d := c.driver(nil, state)
	d.discover = twoGPUs(true)
	if _, err := d.Devices(); err != nil {
		t.Fatal(err)
	}
	return d
}

// twoGPUs are GPUs 0 and 1, GPU 1 as healthy as said.
func twoGPUs(healthy bool) func() ([]sysfs.GPU, error) {
	return func() ([]sysfs.GPU, error) {
		return []sysfs.GPU{{Index: 0, UUID: "GPU-0", BDF: "0000:01:00.0", Healthy: true}, {Index: 1, UUID: "GPU-1", BDF: "0000:02:00.0", Healthy: healthy}}, nil
	}
}

func testClaim(opts *dradriver.Options) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "claim", UID: "3f2a-uid"},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{{Request: "dev", Driver: opts.DriverName, Pool: opts.PoolName(0), Device: "gpu-1"}},
		}}},
	}
}

func prepareOne(t *testing.T, d *gpuDriver, claim *resourceapi.ResourceClaim) []kubeletplugin.Device {
	t.Helper()
	result, err := d.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{claim})
	if err != nil || result[claim.UID].Err != nil {
		t.Fatalf("prepare: %v, %v", err, result[claim.UID].Err)
	}
	return result[claim.UID].Devices
}

// A node reboot: the driver starts anew from its checkpoint, /var/run/cdi is empty, and the
// kubelet prepares the claim again.
func rebootAndPrepareAgain(t *testing.T, root string, claim *resourceapi.ResourceClaim, args ...string) (before, after []kubeletplugin.Device, spec string) {
	t.Helper()
	d := newTestDriver(t, root, args...)
	before = prepareOne(t, d, claim)
	spec = d.opts.CDIDir + "/gpu.dralab.dev_gpu_" + string(claim.UID) + ".json"
	if _, err := os.Stat(spec); err != nil {
		t.Fatalf("no CDI spec after the first prepare: %v", err)
	}
	if err := os.RemoveAll(d.opts.CDIDir); err != nil {
		t.Fatal(err)
	}
	after = prepareOne(t, newTestDriver(t, root, args...), claim)
	return before, after, spec
}

func TestAClaimPreparedAgainIsRestoredWithItsCDISpec(t *testing.T) {
	root := t.TempDir()
	claim := testClaim(newTestDriver(t, root).opts)
	before, after, spec := rebootAndPrepareAgain(t, root, claim)
	if !reflect.DeepEqual(before, after) {
		t.Errorf("restored %+v, prepared %+v", after, before)
	}
	if _, err := os.Stat(spec); err != nil {
		t.Errorf("the restored claim has no CDI spec: %v", err)
	}
	d := newTestDriver(t, root)
	result, err := d.UnprepareResourceClaims(context.Background(), []kubeletplugin.NamespacedObject{{UID: claim.UID}})
	if err != nil || result[claim.UID] != nil {
		t.Fatalf("unprepare: %v, %v", err, result[claim.UID])
	}
	if again := newTestDriver(t, root); len(again.state.Claims) != 0 {
		t.Errorf("unprepare left the claim in the checkpoint: %v", again.state.Claims)
	}
}

func TestRestoreWithoutCDIRestoresTheClaimWithoutItsSpec(t *testing.T) {
	root := t.TempDir()
	claim := testClaim(newTestDriver(t, root).opts)
	before, after, spec := rebootAndPrepareAgain(t, root, claim, "--break="+variantRestoreWithoutCDI)
	if !reflect.DeepEqual(before, after) {
		t.Errorf("restored %+v, prepared %+v", after, before)
	}
	if _, err := os.Stat(spec); !os.IsNotExist(err) {
		t.Errorf("the variant wrote the CDI spec of a restored claim: %v", err)
	}
}

func TestRestoreWithoutMetadataRestoresTheDevicesWithoutTheirMetadata(t *testing.T) {
	root := t.TempDir()
	claim := testClaim(newTestDriver(t, root).opts)
	before, after, spec := rebootAndPrepareAgain(t, root, claim, "--break="+variantRestoreWithoutMetadata)
	if len(after) != len(before) || len(after) == 0 {
		t.Fatalf("restored %+v, prepared %+v", after, before)
	}
	for i := range after {
		if before[i].Metadata == nil || after[i].Metadata != nil || after[i].DeviceName != before[i].DeviceName {
			t.Errorf("device %d: prepared %+v, restored %+v", i, before[i], after[i])
		}
	}
	if _, err := os.Stat(spec); err != nil {
		t.Errorf("the restored claim has no CDI spec: %v", err)
	}
}

// Prepares run at once (the framework does not serialize them): every claim gets its own CDI
// spec and ends up in the checkpoint the driver starts from next time.
func TestClaimsPreparedAtOnceAreAllCheckpointed(t *testing.T) {
	root := t.TempDir()
	d := newTestDriver(t, root)
	var claims []*resourceapi.ResourceClaim
	for i := range 8 {
		c := testClaim(d.opts)
		c.Name, c.UID = fmt.Sprintf("claim-%d", i), types.UID(fmt.Sprintf("uid-%d", i))
		claims = append(claims, c)
	}
	var wg sync.WaitGroup
	for _, c := range claims {
		wg.Go(func() { prepareOne(t, d, c) })
	}
	wg.Wait()
	again := newTestDriver(t, root)
	for _, c := range claims {
		if again.state.Claims[c.UID] == nil {
			t.Errorf("claim %s is not in the checkpoint", c.Name)
		}
		if _, err := os.Stat(filepath.Join(d.opts.CDIDir, "gpu.dralab.dev_gpu_"+string(c.UID)+".json")); err != nil {
			t.Errorf("claim %s: %v", c.Name, err)
		}
	}
}

// A fault of a prepared claim's GPU is reported unhealthy on the health stream and, unless kept,
// withdraws the GPU from the slice; the variant hides it in both.
func TestAFaultReachesTheHealthStreamAndTheSlice(t *testing.T) {
	for _, args := range [][]string{nil, {"--keep-unhealthy"}, {"--break=" + variantHidesFaults}} {
		d := newTestDriver(t, t.TempDir(), args...)
		prepareOne(t, d, testClaim(d.opts))
		d.discover = twoGPUs(false)
		report, err := d.healthReport()
		if err != nil || len(report.Devices) != 1 || report.Devices[0].DeviceName != "gpu-1" || report.Devices[0].PoolName != "node-1" {
			t.Fatalf("%v: report %+v, %v", args, report, err)
		}
		hidden := len(args) > 0 && args[0] == "--break="+variantHidesFaults
		if got := report.Devices[0].Health == kubeletplugin.HealthStatusUnhealthy; got == hidden {
			t.Errorf("%v: gpu-1 faulted, reported %s", args, report.Devices[0].Health)
		}
		devices, _ := d.Devices()
		if kept := len(devices) == 2; kept != (len(args) > 0) {
			t.Errorf("%v: gpu-1 faulted, the slice lists %d devices", args, len(devices))
		}
	}
}
