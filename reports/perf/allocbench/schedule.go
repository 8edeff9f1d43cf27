package allocbench

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
)

// Cluster is what the scheduler sees: nodes, every driver's slices on each, the classes.
type Cluster struct {
	Nodes   []*v1.Node
	Slices  []*resourceapi.ResourceSlice
	Classes Classes
}

// NewCluster returns a cluster of n nodes, each with DevicesPerDriver devices of every driver.
func NewCluster(n int) *Cluster {
	nodes := Nodes(n)
	return &Cluster{Nodes: nodes, Slices: Slices(nodes), Classes: DeviceClasses()}
}

// NewCELCache returns a cache like the kube-scheduler's: it keeps the 10 most recent
// expressions across scheduling cycles (pkg/scheduler/.../dynamicresources).
func NewCELCache() *cel.Cache {
	return cel.NewCache(10, cel.Features{
		EnableConsumableCapacity: Features.ConsumableCapacity,
		EnableListTypeAttributes: Features.ListTypeAttributes,
	})
}

// NewAllocator is the DynamicResources plugin's PreFilter for one pod: an allocator over all slices.
func (c *Cluster) NewAllocator(ctx context.Context, cache *cel.Cache) (structured.Allocator, error) {
	return structured.NewAllocator(ctx, Features, structured.AllocatedState{}, c.Classes, c.Slices, cache)
}

// Allocate is the plugin's Filter on one node. It fails where the node has no placement for
// the claims, so that a benchmark cannot time a failing path.
func Allocate(ctx context.Context, allocator structured.Allocator, node *v1.Node, claims []*resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, error) {
	results, err := allocator.Allocate(ctx, node, claims)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", node.Name, err)
	}
	if len(results) != len(claims) {
		return nil, fmt.Errorf("node %s: the allocator found no placement for the claims", node.Name)
	}
	return results, nil
}

// Schedule does with one pod's claims what the plugin does in one scheduling cycle: PreFilter,
// then Filter on every node (the scheduler filters all nodes of a cluster this small). It
// returns each node's allocation.
func (c *Cluster) Schedule(ctx context.Context, cache *cel.Cache, claims []*resourceapi.ResourceClaim) ([][]resourceapi.AllocationResult, error) {
	allocator, err := c.NewAllocator(ctx, cache)
	if err != nil {
		return nil, err
	}
	placed := make([][]resourceapi.AllocationResult, len(c.Nodes))
	for i, node := range c.Nodes {
		if placed[i], err = Allocate(ctx, allocator, node, claims); err != nil {
			return nil, err
		}
	}
	return placed, nil
}

// Placement is one node's allocation as "request driver/pool/device" lines.
func Placement(results []resourceapi.AllocationResult) []string {
	var devices []string
	for _, result := range results {
		for _, d := range result.Devices.Results {
			devices = append(devices, fmt.Sprintf("%s %s/%s/%s", d.Request, d.Driver, d.Pool, d.Device))
		}
	}
	return devices
}

// CheckPlacements compares the variants' placements node by node: each must give every request
// one device, all on one NUMA node, and both variants must pick the same devices.
func CheckPlacements(nodes []*v1.Node, literal, derived [][]resourceapi.AllocationResult) error {
	numa := map[string]int64{} // "driver/device" -> NUMA node
	for _, d := range Drivers {
		for i := range DevicesPerDriver {
			numa[d.Name+"/"+d.DeviceName(i)] = d.NUMA(i)
		}
	}
	for i, node := range nodes {
		want, got := Placement(literal[i]), Placement(derived[i])
		if !slices.Equal(want, got) {
			return fmt.Errorf("node %s: literal placed %v, derived %v", node.Name, want, got)
		}
		seen := map[int64]bool{}
		for _, result := range literal[i] {
			for _, d := range result.Devices.Results {
				seen[numa[d.Driver+"/"+d.Device]] = true
			}
		}
		if len(want) != len(Drivers) || len(seen) != 1 {
			return fmt.Errorf("node %s: want one device per driver on one NUMA node, got %v", node.Name, want)
		}
	}
	return nil
}
