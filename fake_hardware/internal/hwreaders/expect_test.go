package hwreaders

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// expectation is what the node's hardware profile says, as the lab planned it.
type expectation struct {
	Profile   string     `json:"profile"`
	Functions []function `json:"functions"`
	NUMANodes []numaNode `json:"numaNodes"`
	Netdevs   []netdev   `json:"netdevs"`
	RDMA      []rdmaDev  `json:"rdma"`
}

type function struct {
	BDF    string `json:"bdf"`
	Vendor string `json:"vendor"` // 4 lower-case hex digits, as pci.ids and ghw write IDs
	Device string `json:"device"`
	Class  string `json:"class"` // class, subclass and programming interface: 6 hex digits
	NUMA   int    `json:"numa"`
	Driver string `json:"driver"`
	Parent string `json:"parent"` // the upstream bridge's address; empty below a host bridge
}

type numaNode struct {
	ID            int   `json:"id"`
	CPUs          []int `json:"cpus"`
	Cores         int   `json:"cores"`
	Caches        int   `json:"caches"`
	Distances     []int `json:"distances"`
	MemoryBytes   int64 `json:"memoryBytes"`
	PhysicalBytes int64 `json:"physicalBytes"`
}

type netdev struct {
	Name  string `json:"name"`
	MAC   string `json:"mac"`
	BDF   string `json:"bdf"`
	Speed string `json:"speed"`
}

// rdmaDev is an RDMA device present at boot, with the function and netdev it belongs to.
type rdmaDev struct {
	Name        string            `json:"name"` // mlx5_<n>
	BDF         string            `json:"bdf"`
	Netdev      string            `json:"netdev"`
	CharDevices map[string]string `json:"charDevices"` // /dev/infiniband/<node> -> "major:minor", rdma_cm's too
}

// node returns the expectation and a root for ghw.WithChroot laid out as a driver container
// sees a node: the emulated tree at /sys, the host's /proc (ghw reads huge page sizes there).
func node(t *testing.T) (expectation, string) {
	t.Helper()
	hwRoot, expectFile := os.Getenv("DRALAB_HW_ROOT"), os.Getenv("DRALAB_HW_EXPECT")
	if hwRoot == "" || expectFile == "" {
		t.Skip("DRALAB_HW_ROOT and DRALAB_HW_EXPECT are not set: no emulated node to read")
	}
	data, err := os.ReadFile(expectFile)
	if err != nil {
		t.Fatal(err)
	}
	var want expectation
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatalf("%s: %v", expectFile, err)
	}
	root := t.TempDir()
	for name, target := range map[string]string{"sys": filepath.Join(hwRoot, "sys"), "proc": "/proc"} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	return want, root
}
