package hwreaders

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/Mellanox/rdmamap"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// devInfiniband is where drivers name RDMA device nodes, in CDI specs and environment variables.
const devInfiniband = "/dev/infiniband"

// TestRdmamapFindsEachRDMADeviceAndItsCharacterDevices makes the lookups the SR-IOV DRA driver
// makes through rdmamap (k8snetworkplumbingwg/dra-driver-sriov, pkg/host): the RDMA device of a PCI
// function (GetRdmaDevicesForPcidev), then the character devices it puts in the container's CDI
// spec (GetRdmaCharDevices: uverbs, umad, issm by their class devices' ibdev, and rdma_cm), and
// the RDMA device of a netdev (GetRdmaDeviceForNetdevice, in the node's network namespace). Each
// node it names must be the character device the profile's numbering gives it. rdmamap reads
// fixed /sys and /dev paths, kept in variables: they point at the node's tree and /dev here.
func TestRdmamapFindsEachRDMADeviceAndItsCharacterDevices(t *testing.T) {
	want, root := node(t)
	dev := os.Getenv("DRALAB_HW_DEV")
	if dev == "" {
		t.Skip("DRALAB_HW_DEV is not set: no node /dev to read")
	}
	pointRdmamapAt(t, filepath.Join(root, "sys"), filepath.Join(dev, "infiniband"))

	var names []string
	for _, w := range want.RDMA {
		names = append(names, w.Name)
		if got := rdmamap.GetRdmaDevicesForPcidev(w.BDF); !slices.Equal(got, []string{w.Name}) {
			t.Errorf("%s: rdmamap finds RDMA devices %v, want [%s]", w.BDF, got, w.Name)
		}
		var got []string
		for _, path := range rdmamap.GetRdmaCharDevices(w.Name) {
			named := filepath.Join(devInfiniband, strings.TrimPrefix(path, rdmamap.RdmaDeviceDir))
			got = append(got, named)
			if numbers, ok := w.CharDevices[named]; ok { // one not expected fails the comparison below
				checkCharDevice(t, path, numbers)
			}
		}
		slices.Sort(got)
		if expected := slices.Sorted(maps.Keys(w.CharDevices)); !slices.Equal(got, expected) {
			t.Errorf("%s: rdmamap finds character devices %v, want %v", w.Name, got, expected)
		}
	}
	listed := rdmamap.GetRdmaDeviceList()
	slices.Sort(listed)
	slices.Sort(names)
	if !slices.Equal(listed, names) {
		t.Errorf("rdmamap lists RDMA devices %v, the profile has %v", listed, names)
	}
	t.Logf("%s: rdmamap sees %d of %d RDMA devices", want.Profile, len(listed), len(names))

	t.Run("netdevs", func(t *testing.T) {
		name := os.Getenv("DRALAB_HW_NETNS")
		if name == "" {
			t.Skip("DRALAB_HW_NETNS is not set")
		}
		inNetns(t, name, func() {
			for _, w := range want.RDMA {
				if got, err := rdmamap.GetRdmaDeviceForNetdevice(w.Netdev); err != nil || got != w.Name {
					t.Errorf("%s: rdmamap finds RDMA device %q (%v), want %s", w.Netdev, got, err, w.Name)
				}
			}
		})
	})
}

// pointRdmamapAt sets rdmamap's paths to the node's tree and /dev/infiniband, and back after the test.
func pointRdmamapAt(t *testing.T, sys, infiniband string) {
	t.Helper()
	paths := map[*string]string{
		&rdmamap.RdmaClassDir:  filepath.Join(sys, "class", "infiniband"),
		&rdmamap.RdmaIbUcmDir:  filepath.Join(sys, "class", "infiniband_cm"),
		&rdmamap.RdmaUmadDir:   filepath.Join(sys, "class", "infiniband_mad"),
		&rdmamap.RdmaUverbsDir: filepath.Join(sys, "class", "infiniband_verbs"),
		&rdmamap.PciDevDir:     filepath.Join(sys, "bus", "pci", "devices"),
		&rdmamap.AuxDevDir:     filepath.Join(sys, "bus", "auxiliary", "devices"),
		&rdmamap.RdmaDeviceDir: infiniband,
		&rdmamap.RdmaUcmDevice: filepath.Join(infiniband, "rdma_cm"),
	}
	for variable, path := range paths {
		saved := *variable
		*variable = path
		t.Cleanup(func() { *variable = saved })
	}
}

// checkCharDevice fails unless path is a character device numbered want ("major:minor").
func checkCharDevice(t *testing.T, path, want string) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	got := fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev))
	if st.Mode&unix.S_IFMT != unix.S_IFCHR || got != want {
		t.Errorf("%s: mode %o, numbers %s; want a character device %s", path, st.Mode, got, want)
	}
}

// inNetns runs f on a thread in the named network namespace; rdmamap asks netlink in the caller's.
// The thread serves other goroutines again only once back in the host's namespace: else it ends
// with the calling goroutine (a test's), which stays locked to it.
func inNetns(t *testing.T, name string, f func()) {
	t.Helper()
	runtime.LockOSThread()
	host, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	ns, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	if err := netns.Set(ns); err != nil {
		t.Fatal(err)
	}
	f()
	if err := netns.Set(host); err != nil {
		t.Fatal(err)
	}
	runtime.UnlockOSThread()
}
