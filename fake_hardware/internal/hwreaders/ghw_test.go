package hwreaders

import (
	"slices"
	"testing"

	"github.com/jaypipes/ghw"
	"github.com/jaypipes/ghw/pkg/util"
	"github.com/jaypipes/pcidb"
)

func TestGhwPCISeesEveryFunctionWithItsIDsNamesDriverAndNUMANode(t *testing.T) {
	want, root := node(t)
	info, err := ghw.PCI(ghw.WithChroot(root))
	if err != nil {
		t.Fatal(err)
	}
	db, err := pcidb.New() // the names lspci prints, from the same pci.ids ghw reads
	if err != nil {
		t.Fatal(err)
	}
	numa := len(want.NUMANodes) > 1 // ghw gives a device's NUMA node only on NUMA machines, as the kernel does
	for _, fn := range want.Functions {
		dev := info.GetDevice(fn.BDF)
		if dev == nil {
			t.Errorf("%s: ghw does not see it", fn.BDF)
			continue
		}
		product := util.UNKNOWN
		if p, ok := db.Products[fn.Vendor+fn.Device]; ok {
			product = p.Name
		} else {
			t.Logf("%s: %s:%s is not in this machine's pci.ids", fn.BDF, fn.Vendor, fn.Device)
		}
		checks := []struct{ what, got, want string }{
			{"vendor", dev.Vendor.ID, fn.Vendor},
			{"device", dev.Product.ID, fn.Device},
			{"class", dev.Class.ID + dev.Subclass.ID + dev.ProgrammingInterface.ID, fn.Class},
			{"vendor name", dev.Vendor.Name, db.Vendors[fn.Vendor].Name},
			{"product name", dev.Product.Name, product},
			{"driver", dev.Driver, fn.Driver},
			{"parent", dev.ParentAddress, fn.Parent},
		}
		for _, c := range checks {
			if c.got != c.want {
				t.Errorf("%s: %s %q, want %q", fn.BDF, c.what, c.got, c.want)
			}
		}
		if dev.Vendor.Name == util.UNKNOWN {
			t.Errorf("%s: ghw does not know vendor %s", fn.BDF, fn.Vendor)
		}
		switch {
		case !numa && dev.Node != nil:
			t.Errorf("%s: NUMA node %d on a machine with one node", fn.BDF, dev.Node.ID)
		case numa && (dev.Node == nil || dev.Node.ID != fn.NUMA):
			t.Errorf("%s: NUMA node %v, want %d", fn.BDF, dev.Node, fn.NUMA)
		}
	}
	if len(info.Devices) != len(want.Functions) {
		t.Errorf("ghw sees %d PCI functions, the profile has %d", len(info.Devices), len(want.Functions))
	}
	t.Logf("%s: ghw pci sees %d of %d functions", want.Profile, len(info.Devices), len(want.Functions))
}

func TestGhwTopologySeesEveryNUMANodeWithItsCoresCachesDistancesAndMemory(t *testing.T) {
	want, root := node(t)
	topo, err := ghw.Topology(ghw.WithChroot(root))
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, w := range want.NUMANodes {
		i := slices.IndexFunc(topo.Nodes, func(n *ghw.TopologyNode) bool { return n.ID == w.ID })
		if i < 0 {
			t.Errorf("node %d: ghw does not see it", w.ID)
			continue
		}
		n := topo.Nodes[i]
		var cpus []int
		for _, core := range n.Cores {
			cpus = append(cpus, core.LogicalProcessors...)
		}
		slices.Sort(cpus)
		if len(n.Cores) != w.Cores || !slices.Equal(cpus, w.CPUs) {
			t.Errorf("node %d: %d cores with CPUs %v, want %d cores with %v", w.ID, len(n.Cores), cpus, w.Cores, w.CPUs)
		}
		if len(n.Caches) != w.Caches {
			t.Errorf("node %d: %d caches, want %d", w.ID, len(n.Caches), w.Caches)
		}
		if !slices.Equal(n.Distances, w.Distances) {
			t.Errorf("node %d: distances %v, want %v", w.ID, n.Distances, w.Distances)
		}
		if n.Memory == nil || n.Memory.TotalUsableBytes != w.MemoryBytes || n.Memory.TotalPhysicalBytes != w.PhysicalBytes {
			t.Errorf("node %d: memory %+v, want %d usable and %d physical bytes", w.ID, n.Memory, w.MemoryBytes, w.PhysicalBytes)
			continue
		}
		seen++
	}
	if len(topo.Nodes) != len(want.NUMANodes) {
		t.Errorf("ghw sees %d NUMA nodes, the profile has %d", len(topo.Nodes), len(want.NUMANodes))
	}
	t.Logf("%s: ghw topology sees %d of %d NUMA nodes whole", want.Profile, seen, len(want.NUMANodes))
}

func TestGhwNetSeesEveryNetdevWithItsMACPCIAddressAndSpeed(t *testing.T) {
	want, root := node(t)
	info, err := ghw.Network(ghw.WithChroot(root), ghw.WithDisableTools()) // ethtool would ask the host's kernel
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, w := range want.Netdevs {
		i := slices.IndexFunc(info.NICs, func(n *ghw.NIC) bool { return n.Name == w.Name })
		if i < 0 {
			t.Errorf("%s: ghw does not see it", w.Name)
			continue
		}
		nic := info.NICs[i]
		address := ""
		if nic.PCIAddress != nil {
			address = *nic.PCIAddress
		}
		if nic.MACAddress != w.MAC || address != w.BDF || nic.Speed != w.Speed || nic.IsVirtual {
			t.Errorf("%s: MAC %q, PCI address %q, speed %q, virtual %v; want %q, %q, %q, not virtual",
				w.Name, nic.MACAddress, address, nic.Speed, nic.IsVirtual, w.MAC, w.BDF, w.Speed)
			continue
		}
		seen++
	}
	if len(info.NICs) != len(want.Netdevs) {
		t.Errorf("ghw sees %d netdevs, the profile has %d", len(info.NICs), len(want.Netdevs))
	}
	t.Logf("%s: ghw net sees %d of %d netdevs whole", want.Profile, seen, len(want.Netdevs))
}
