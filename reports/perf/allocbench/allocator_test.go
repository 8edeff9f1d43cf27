package allocbench

import (
	"flag"
	"slices"
	"sync"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
)

var (
	nodes = flag.Int("nodes", 100, "nodes in the cluster, each with 8 devices of every driver")
	// Which variant runs first: alternating it between rounds keeps drift on a shared machine
	// from favouring one side of the ratio.
	first = flag.String("first", string(Literal), "variant benchmarked first: literal or derived")
)

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

// BenchmarkAllocator times one scheduling cycle of one pod (see Cluster.Schedule) per
// operation, with literal and with derived attributes. Besides ns/op it reports cpu-ns/op and,
// where the CPU's counters are exposed, instructions/op.
func BenchmarkAllocator(b *testing.B) {
	cluster := NewCluster(*nodes)
	scheduled(b, cluster) // both variants place, and alike, before anything is timed
	order := slices.Clone(Variants)
	if Variant(*first) == Derived {
		slices.Reverse(order)
	}
	for _, v := range order {
		b.Run("attributes="+string(v), func(b *testing.B) {
			claims := []*resourceapi.ResourceClaim{Claim(v)}
			cache := NewCELCache() // like the scheduler's, it outlives one cycle
			counters := StartCounters()
			for b.Loop() {
				if _, err := cluster.Schedule(b.Context(), cache, claims); err != nil {
					b.Fatal(err)
				}
			}
			cpu, instructions := counters.Stop()
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			if counters.Unavailable == "" {
				b.ReportMetric(float64(instructions)/float64(b.N), "instructions/op")
			} else {
				instructionsUnavailable.Do(func() { b.Logf("instructions/op not measured: %s", counters.Unavailable) })
			}
		})
	}
}
