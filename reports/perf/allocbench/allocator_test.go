package allocbench

import (
	"flag"
	"slices"
	"sync"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/structured"
)

var nodes = flag.Int("nodes", 100, "nodes in the cluster, each with 8 devices of every driver")

// scheduled places one pod's claim of each variant on every node of the cluster.
func scheduled(tb testing.TB, cluster *Cluster) map[Variant][][]resourceapi.AllocationResult {
	placed := map[Variant][][]resourceapi.AllocationResult{}
	for _, v := range Variants {
		results, err := cluster.Schedule(tb.Context(), NewCELCache(), []*resourceapi.ResourceClaim{Claim(v)})
		if err != nil {
			tb.Fatalf("%s: %v", v, err)
		}
		placed[v] = results
	}
	if err := CheckPlacements(cluster.Nodes, placed[Literal], placed[Derived]); err != nil {
		tb.Fatal(err)
	}
	return placed
}

func TestLiteralAndDerivedPlaceAlike(t *testing.T) {
	cluster := NewCluster(3)
	placed := scheduled(t, cluster)
	// nic-0 is on the other NUMA node than gpu-0: the constraint had to reject it.
	want := []string{
		"gpu scale-gpu.dralab.dev/node-2/gpu-0",
		"nic scale-nic.dralab.dev/node-2/nic-1",
		"cpu scale-cpu.dralab.dev/node-2/cpu-0",
	}
	if got := Placement(placed[Derived][2]); !slices.Equal(got, want) {
		t.Errorf("node-2: want %v, got %v", want, got)
	}
}

var instructionsUnavailable sync.Once

// reportUnavailable says once per process why no instruction counts are reported.
func reportUnavailable(b *testing.B, counters *Counters) bool {
	if counters.Unavailable == "" {
		return false
	}
	instructionsUnavailable.Do(func() { b.Logf("instructions not measured: %s", counters.Unavailable) })
	return true
}

// BenchmarkAllocator times one pod's scheduling cycle (Cluster.Schedule) per operation, with
// literal and with derived attributes: what each costs. Besides ns/op it reports the thread's
// cpu-ns/op and, where the CPU's counters are exposed, instructions/op.
func BenchmarkAllocator(b *testing.B) {
	cluster := NewCluster(*nodes)
	scheduled(b, cluster) // both variants place, and alike, before anything is timed
	for _, v := range Variants {
		b.Run("attributes="+string(v), func(b *testing.B) {
			claims := []*resourceapi.ResourceClaim{Claim(v)}
			cache := NewCELCache() // like the scheduler's, it outlives one cycle
			counters := OpenCounters()
			defer counters.Close()
			start := counters.Read()
			for b.Loop() {
				if _, err := cluster.Schedule(b.Context(), cache, claims); err != nil {
					b.Fatal(err)
				}
			}
			work := counters.Read().Sub(start)
			b.ReportMetric(float64(work.CPU.Nanoseconds())/float64(b.N), "cpu-ns/op")
			if !reportUnavailable(b, counters) {
				b.ReportMetric(float64(work.Instructions)/float64(b.N), "instructions/op")
			}
		})
	}
}

// BenchmarkDerivedOverLiteral measures the ratio itself. Each operation is one node's Filter in
// both variants back to back, alternating which goes first, so that load on a shared machine
// hits both alike; it reports the median over operations of derived/literal in thread CPU
// time, in wall time and, where counted, in instructions. A preemption or GC pause lands on
// single operations and drops out of the median; the extra garbage's cost shows in
// BenchmarkAllocator's B/op.
func BenchmarkDerivedOverLiteral(b *testing.B) {
	cluster := NewCluster(*nodes)
	scheduled(b, cluster)
	claims := [2][]*resourceapi.ResourceClaim{{Claim(Literal)}, {Claim(Derived)}}
	cache := NewCELCache() // one scheduler, one cache
	counters := OpenCounters()
	defer counters.Close()
	var allocators [2]structured.Allocator
	var cpu, wall, instructions []float64
	for i := 0; b.Loop(); i++ {
		node := cluster.Nodes[i%len(cluster.Nodes)]
		if i%len(cluster.Nodes) == 0 { // the next pod: PreFilter, untimed
			for v := range allocators {
				var err error
				if allocators[v], err = cluster.NewAllocator(b.Context(), cache); err != nil {
					b.Fatal(err)
				}
			}
		}
		var work [2]Sample
		var placed [2][]resourceapi.AllocationResult
		for k := range 2 {
			v := (i + k) % 2
			start := counters.Read()
			results, err := Allocate(b.Context(), allocators[v], node, claims[v])
			work[v] = counters.Read().Sub(start)
			if err != nil {
				b.Fatal(err)
			}
			placed[v] = results
		}
		if literal, derived := Placement(placed[0]), Placement(placed[1]); !slices.Equal(literal, derived) {
			b.Fatalf("node %s: literal placed %v, derived %v", node.Name, literal, derived)
		}
		cpu = append(cpu, float64(work[1].CPU)/float64(work[0].CPU))
		wall = append(wall, float64(work[1].Wall)/float64(work[0].Wall))
		instructions = append(instructions, float64(work[1].Instructions)/float64(work[0].Instructions))
	}
	b.ReportMetric(median(cpu), "cpu-derived/literal")
	b.ReportMetric(median(wall), "wall-derived/literal")
	if !reportUnavailable(b, counters) {
		b.ReportMetric(median(instructions), "instructions-derived/literal")
	}
}

func median(values []float64) float64 {
	slices.Sort(values)
	n := len(values)
	return (values[(n-1)/2] + values[n/2]) / 2
}
