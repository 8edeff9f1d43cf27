package hwreaders

import (
	"os"
	"testing"

	"github.com/jaypipes/ghw"
)

// BenchmarkGhwReadsTheWholeTree times what a driver does at start: ghw's PCI, topology and net
// views of the node at DRALAB_HW_ROOT (the FUSE-served tree or its plain files, to compare).
func BenchmarkGhwReadsTheWholeTree(b *testing.B) {
	root := os.Getenv("DRALAB_HW_ROOT")
	if root == "" {
		b.Skip("DRALAB_HW_ROOT is not set: the benchmark reads a lab node's tree")
	}
	for b.Loop() {
		if _, err := ghw.PCI(ghw.WithChroot(root)); err != nil {
			b.Fatal(err)
		}
		if _, err := ghw.Topology(ghw.WithChroot(root)); err != nil {
			b.Fatal(err)
		}
		if _, err := ghw.Network(ghw.WithChroot(root)); err != nil {
			b.Fatal(err)
		}
	}
}
