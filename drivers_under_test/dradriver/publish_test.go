package dradriver

import (
	"fmt"
	"reflect"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/dynamic-resource-allocation/resourceslice"
)

func devices(names ...string) []resourceapi.Device {
	out := make([]resourceapi.Device, len(names))
	for i, n := range names {
		out[i] = resourceapi.Device{Name: n}
	}
	return out
}

// shape is pool -> its slices' device names.
func shape(r resourceslice.DriverResources) map[string][][]string {
	out := map[string][][]string{}
	for pool, p := range r.Pools {
		for _, s := range p.Slices {
			var names []string
			for _, d := range s.Devices {
				names = append(names, d.Name)
			}
			out[pool] = append(out[pool], names)
		}
	}
	return out
}

func TestOnePoolNamedAfterTheNodeByDefault(t *testing.T) {
	o := parse(t)
	got := shape(o.newLayout().resources(devices("gpu-0", "gpu-1")))
	if want := map[string][][]string{"node-1": {{"gpu-0", "gpu-1"}}}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if !o.OwnsPool("node-1") || o.OwnsPool("node-10") || o.OwnsPool("node-1/pool-0") {
		t.Error("OwnsPool: only the node's own pool")
	}
}

func TestSeveralPoolsAndSlicesShareTheDevicesOut(t *testing.T) {
	o := parse(t, "--pools=2", "--slices-per-pool=2")
	got := shape(o.newLayout().resources(devices("a", "b", "c", "d", "e")))
	want := map[string][][]string{"node-1/pool-0": {{"a", "e"}, {"c"}}, "node-1/pool-1": {{"b"}, {"d"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for _, pool := range []string{"node-1/pool-0", "node-1/pool-1"} {
		if !o.OwnsPool(pool) {
			t.Errorf("OwnsPool(%s) = false", pool)
		}
	}
	if o.OwnsPool("node-1") || o.OwnsPool("node-1/pool-2") || o.OwnsPool("node-2/pool-0") {
		t.Error("OwnsPool accepts a pool the driver does not publish")
	}
}

// A device's pool is part of its identity in an allocation: it must not move when another
// device is withdrawn (unhealthy) or returns.
func TestADeviceKeepsItsPoolWhenOthersComeAndGo(t *testing.T) {
	l := parse(t, "--pools=2").newLayout()
	l.resources(devices("a", "b", "c", "d"))
	got := shape(l.resources(devices("b", "c", "d")))
	if want := map[string][][]string{"node-1/pool-0": {{"c"}}, "node-1/pool-1": {{"b", "d"}}}; !reflect.DeepEqual(got, want) {
		t.Errorf("a withdrawn: got %v, want %v", got, want)
	}
	got = shape(l.resources(devices("a", "b", "c", "d", "new")))
	if want := map[string][][]string{"node-1/pool-0": {{"a", "c", "new"}}, "node-1/pool-1": {{"b", "d"}}}; !reflect.DeepEqual(got, want) {
		t.Errorf("a back, one new: got %v, want %v", got, want)
	}
}

func TestDevicesPerNodeKeepsTheFirstDiscovered(t *testing.T) {
	l := parse(t, "--devices-per-node=1").newLayout()
	var names []string
	for i := range 8 {
		names = append(names, fmt.Sprintf("gpu-%d", i))
	}
	if got, want := shape(l.resources(devices(names...))), map[string][][]string{"node-1": {{"gpu-0"}}}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	// Once gpu-0 is withdrawn the node's one device is the next healthy one.
	if got, want := shape(l.resources(devices(names[1:]...))), map[string][][]string{"node-1": {{"gpu-1"}}}; !reflect.DeepEqual(got, want) {
		t.Errorf("gpu-0 withdrawn: got %v, want %v", got, want)
	}
}

// The variant's pool repeats a device across its two slices; the driver's own pools stay as
// they are, and the slices go when the driver stops. A slice left by an earlier instance is replaced.
func TestDuplicateDevicePublishesAPoolThatRepeatsADevice(t *testing.T) {
	o := parse(t, "--break="+VariantDuplicateDevice)
	api := fake.NewClientset(&resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "node-1-gpu.dralab.dev-duplicate-1"}})
	remove := o.PublishDuplicateDevice(t.Context(), api, devices("gpu-0", "gpu-1"))
	list, err := api.ResourceV1().ResourceSlices().List(t.Context(), metav1.ListOptions{})
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("slices %v (%v), want two", list, err)
	}
	for _, s := range list.Items {
		if s.Spec.Driver != "gpu.dralab.dev" || s.Spec.Pool != (resourceapi.ResourcePool{Name: "node-1/pool-1", Generation: 1, ResourceSliceCount: 2}) ||
			len(s.Spec.Devices) != 1 || s.Spec.Devices[0].Name != "gpu-0" {
			t.Errorf("slice %s: %+v, want pool node-1/pool-1 of two slices, each with gpu-0", s.Name, s.Spec)
		}
		term := s.Spec.NodeSelector.NodeSelectorTerms[0].MatchFields[0]
		if s.Spec.NodeName != nil || term.Key != "metadata.name" || !reflect.DeepEqual(term.Values, []string{"node-1"}) {
			t.Errorf("slice %s selects node %v %v, want node-1 by a node selector", s.Name, s.Spec.NodeName, term)
		}
	}
	own := shape(o.newLayout().resources(devices("gpu-0", "gpu-1")))
	if !reflect.DeepEqual(own, map[string][][]string{"node-1": {{"gpu-0", "gpu-1"}}}) || o.OwnsPool("node-1/pool-1") {
		t.Errorf("the driver's own pools changed: %v", own)
	}
	remove()
	if list, _ := api.ResourceV1().ResourceSlices().List(t.Context(), metav1.ListOptions{}); len(list.Items) != 0 {
		t.Errorf("after stopping: %d slices", len(list.Items))
	}
}
