// Package allocbench measures what KEP-6080 derived attributes cost the upstream structured
// allocator (PF-07): one pod's claim placed on every node of a cluster, once with a literal
// matchAttribute and once with derived attributes, in process and without a lab.
package allocbench

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
)

// Variant is how a claim asks for its devices to share a NUMA node.
type Variant string

const (
	// Literal matches on an attribute every driver publishes under the same name.
	Literal Variant = "literal"
	// Derived matches on a derived attribute that maps each driver's own name onto one.
	Derived Variant = "derived"
)

// Variants in the order the benchmark runs them by default.
var Variants = []Variant{Literal, Derived}

const (
	// DevicesPerDriver is what each driver publishes per node, as on an 8-GPU server.
	DevicesPerDriver = 8
	// Shared is the attribute all drivers publish, which literal claims match on
	// (suites/derived_attributes/scale.py's SHARED).
	Shared = "topology.dralab.dev/numa"
	// DerivedNUMA is the name the derived attributes give the NUMA node (topology.py's DERIVED_NUMA).
	DerivedNUMA = "derived.dralab.dev/numa"
)

// Driver is one DRA driver on every node, with its own name for a device's NUMA node.
type Driver struct {
	Name, Request string
	// Attribute is the driver's own name for the NUMA node of a device.
	Attribute string
	// Shift moves the driver's NUMA pattern: device i sits on NUMA node (i+Shift)%2.
	Shift int
}

// Drivers are a GPU and a NIC driver as in the DA scale harness (scale.py), plus a CPU driver:
// a pod wants one device of each on one NUMA node, the case KEP-6080 was made for. The NICs'
// NUMA nodes run against their indexes (as topology.py's do), so the allocator must reject the
// first NIC it tries on every node: constraints, and so derived attributes, are evaluated for
// more devices than the claim gets.
var Drivers = []Driver{
	{Name: "scale-gpu.dralab.dev", Request: "gpu", Attribute: "numa"},
	{Name: "scale-nic.dralab.dev", Request: "nic", Attribute: "numaNode", Shift: 1},
	{Name: "scale-cpu.dralab.dev", Request: "cpu", Attribute: "numaNodeID"},
}

// Features are the allocator features of the PF-04 lab's kube-scheduler: the 1.37 defaults plus
// DRADerivedAttributes (clusters/lab_configurations.py scale()). Both variants run with them, so
// both get the same allocator implementation and only the claims differ.
var Features = structured.Features{
	AdminAccess:             true, // DRAAdminAccess, GA
	PrioritizedList:         true, // DRAPrioritizedList, GA
	PartitionableDevices:    true, // DRAPartitionableDevices, beta
	DeviceTaints:            true, // DRADeviceTaints, GA
	DeviceBindingAndStatus:  true, // DRADeviceBindingConditions (beta) and DRAResourceClaimDeviceStatus (GA)
	ConsumableCapacity:      true, // DRAConsumableCapacity, beta
	FractionalCapacityRange: true, // DRAFractionalCapacityRange, beta
	DerivedAttributes:       true, // DRADerivedAttributes, alpha: what the lab turns on
}

// NUMA is the NUMA node of a driver's device i.
func (d Driver) NUMA(i int) int64 { return int64((i + d.Shift) % 2) }

// DeviceName is the name of a driver's device i, as in scale.py ("gpu-3").
func (d Driver) DeviceName(i int) string { return fmt.Sprintf("%s-%d", d.Request, i) }

// NodeName of node i.
func NodeName(i int) string { return fmt.Sprintf("node-%d", i) }

// Nodes returns n nodes; each has a slice of every driver (the pool named after the node).
func Nodes(n int) []*v1.Node {
	nodes := make([]*v1.Node, n)
	for i := range nodes {
		nodes[i] = &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: NodeName(i)}}
	}
	return nodes
}

// Slices returns one ResourceSlice per node and driver, each with DevicesPerDriver devices.
func Slices(nodes []*v1.Node) []*resourceapi.ResourceSlice {
	var slices []*resourceapi.ResourceSlice
	for _, node := range nodes {
		for _, d := range Drivers {
			devices := make([]resourceapi.Device, DevicesPerDriver)
			for i := range devices {
				devices[i] = resourceapi.Device{
					Name: d.DeviceName(i),
					Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
						resourceapi.QualifiedName(d.Attribute): {IntValue: ptr.To(d.NUMA(i))},
						Shared:                                 {IntValue: ptr.To(d.NUMA(i))},
					},
				}
			}
			slices = append(slices, &resourceapi.ResourceSlice{
				ObjectMeta: metav1.ObjectMeta{Name: d.Name + "-" + node.Name},
				Spec: resourceapi.ResourceSliceSpec{
					Driver:   d.Name,
					NodeName: ptr.To(node.Name),
					Pool:     resourceapi.ResourcePool{Name: node.Name, Generation: 1, ResourceSliceCount: 1},
					Devices:  devices,
				},
			})
		}
	}
	return slices
}

// Classes is the scheduler's view of the DeviceClasses: one per driver, selecting its devices
// (as suites/framework/slices.py publishing() creates them).
type Classes []*resourceapi.DeviceClass

// DeviceClasses returns the classes of all Drivers.
func DeviceClasses() Classes {
	classes := make(Classes, len(Drivers))
	for i, d := range Drivers {
		classes[i] = &resourceapi.DeviceClass{
			ObjectMeta: metav1.ObjectMeta{Name: d.Name},
			Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{
				{CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", d.Name)}},
			}},
		}
	}
	return classes
}

// List implements structured.DeviceClassLister.
func (c Classes) List() ([]*resourceapi.DeviceClass, error) { return c, nil }

// Get implements structured.DeviceClassLister.
func (c Classes) Get(name string) (*resourceapi.DeviceClass, error) {
	for _, class := range c {
		if class.Name == name {
			return class, nil
		}
	}
	return nil, apierrors.NewNotFound(resourceapi.Resource("deviceclasses"), name)
}

// Claim is one pod's claim: a device of every driver, all on one NUMA node (scale.py's claim(),
// with the CPU request added).
func Claim(variant Variant) *resourceapi.ResourceClaim {
	requests := make([]resourceapi.DeviceRequest, len(Drivers))
	names := make([]string, len(Drivers))
	for i, d := range Drivers {
		exactly := &resourceapi.ExactDeviceRequest{
			DeviceClassName: d.Name,
			AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
			Count:           1,
		}
		if variant == Derived {
			exactly.DerivedAttributes = []resourceapi.DeviceDerivedAttribute{{
				Name:       DerivedNUMA,
				Expression: fmt.Sprintf("device.attributes[%q].%s", d.Name, d.Attribute),
			}}
		}
		requests[i] = resourceapi.DeviceRequest{Name: d.Request, Exactly: exactly}
		names[i] = d.Request
	}
	match := resourceapi.FullyQualifiedName(Shared)
	if variant == Derived {
		match = DerivedNUMA
	}
	name := "pod-0-" + string(variant)
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests:    requests,
			Constraints: []resourceapi.DeviceConstraint{{Requests: names, MatchAttribute: &match}},
		}},
	}
}
