package netdev

import (
	"errors"
	"fmt"
	"net"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

const (
	vfName = "vf0"
	vfMAC  = "02:00:00:00:00:01"
)

// lab is a node and a pod, each an anonymous network namespace that lives only as long as the
// test holds its file descriptor, so nothing outlives the test binary, even a killed one. The
// node holds a veth pair standing in for a VF and its PF side.
type lab struct {
	node        netns.NsHandle
	nodeH, podH *netlink.Handle
	podPath     string
}

func newLab(t *testing.T) *lab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces and veth links")
	}
	node := newNetns(t)
	pod := newNetns(t)
	l := &lab{
		node:    node,
		nodeH:   handle(t, node),
		podH:    handle(t, pod),
		podPath: fmt.Sprintf("/proc/self/fd/%d", pod),
	}
	mac, _ := net.ParseMAC(vfMAC)
	vf := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: vfName, HardwareAddr: mac}, PeerName: vfName + "-pf"}
	if err := l.nodeH.LinkAdd(vf); err != nil {
		t.Fatal(err)
	}
	// The PF side up gives the VF carrier, as a cabled port would.
	if err := l.nodeH.LinkSetUp(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: vfName + "-pf"}}); err != nil {
		t.Fatal(err)
	}
	return l
}

// newNetns creates a network namespace and closes it when the test ends.
func newNetns(t *testing.T) netns.NsHandle {
	t.Helper()
	var ns netns.NsHandle
	if err := onOwnThread(func() (err error) { ns, err = netns.New(); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	return ns
}

func handle(t *testing.T, ns netns.NsHandle) *netlink.Handle {
	t.Helper()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// onOwnThread runs f on a thread that is thrown away afterwards, so whatever namespace f enters
// never leaks into the rest of the test binary.
func onOwnThread(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the runtime ends the thread with the goroutine
		errc <- f()
	}()
	return <-errc
}

// inNode runs f from the node's namespace, as the driver runs.
func (l *lab) inNode(f func() error) error {
	return onOwnThread(func() error {
		if err := netns.Set(l.node); err != nil {
			return err
		}
		return f()
	})
}

func (l *lab) moveIn(cfg Config) (Attached, error) {
	var got Attached
	err := l.inNode(func() (err error) { got, err = MoveIn(vfName, l.podPath, cfg); return err })
	return got, err
}

func (l *lab) moveOut(t *testing.T, podName, podPath string) {
	t.Helper()
	if err := l.inNode(func() error { return MoveOut(podName, podPath, vfName, vfMAC) }); err != nil {
		t.Fatal(err)
	}
}

// requireHome checks that the VF is in the node's namespace under its own name and MAC, up,
// without addresses.
func (l *lab) requireHome(t *testing.T) {
	t.Helper()
	vf, err := l.nodeH.LinkByName(vfName)
	if err != nil {
		t.Fatalf("%s not back in the node netns: %v", vfName, err)
	}
	if mac := vf.Attrs().HardwareAddr.String(); mac != vfMAC {
		t.Errorf("%s MAC = %s, want %s", vfName, mac, vfMAC)
	}
	if vf.Attrs().Flags&net.FlagUp == 0 {
		t.Errorf("%s is down", vfName)
	}
	if ips := ips(t, l.nodeH, vf); len(ips) != 0 {
		t.Errorf("%s kept addresses %v", vfName, ips)
	}
}

// ips lists a link's addresses other than the IPv6 link-local one the kernel adds itself.
func ips(t *testing.T, h *netlink.Handle, link netlink.Link) []string {
	t.Helper()
	list, err := h.AddrList(link, netlink.FAMILY_ALL)
	if err != nil {
		t.Fatal(err)
	}
	var ips []string
	for _, a := range list {
		if !a.IP.IsLinkLocalUnicast() {
			ips = append(ips, a.IPNet.String())
		}
	}
	slices.Sort(ips)
	return ips
}

func linkNames(t *testing.T, h *netlink.Handle) []string {
	t.Helper()
	links, err := h.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range links {
		names = append(names, l.Attrs().Name)
	}
	slices.Sort(names)
	return names
}

func TestMoveInOut(t *testing.T) {
	l := newLab(t)
	got, err := l.moveIn(Config{
		InterfaceName:   "net1",
		IPs:             []string{"fd00:97::5/64", "10.97.0.5/24"},
		HardwareAddress: "02:AA:BB:CC:DD:05",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Attached{
		InterfaceName:   "net1",
		IPs:             []string{"10.97.0.5/24", "fd00:97::5/64"},
		HardwareAddress: "02:aa:bb:cc:dd:05",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("MoveIn = %+v, want %+v", got, want)
	}

	link, err := l.podH.LinkByName("net1")
	if err != nil {
		t.Fatalf("net1 not in the pod netns: %v", err)
	}
	if mac := link.Attrs().HardwareAddr.String(); mac != want.HardwareAddress {
		t.Errorf("pod net1 MAC = %s, want %s", mac, want.HardwareAddress)
	}
	if link.Attrs().Flags&net.FlagUp == 0 {
		t.Error("pod net1 is down")
	}
	if ips := ips(t, l.podH, link); !slices.Equal(ips, want.IPs) {
		t.Errorf("pod net1 addresses = %v, want %v", ips, want.IPs)
	}
	if _, err := l.nodeH.LinkByName(vfName); !errors.As(err, &netlink.LinkNotFoundError{}) {
		t.Errorf("%s still in the node netns (err %v)", vfName, err)
	}

	l.moveOut(t, "net1", l.podPath)
	l.requireHome(t)
	if names := linkNames(t, l.podH); !slices.Equal(names, []string{"lo"}) {
		t.Errorf("pod links after MoveOut = %v, want only lo", names)
	}

	// The hooks may run again for the same pod, or after its namespace is gone.
	l.moveOut(t, "net1", l.podPath)
	l.moveOut(t, "net1", t.TempDir()+"/gone")
	l.requireHome(t)
}

func TestMoveInRejectsBadConfig(t *testing.T) {
	l := newLab(t)
	for _, tc := range []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"bare IPv4", Config{InterfaceName: "net1", IPs: []string{"10.97.0.5"}}, `IP "10.97.0.5" has no prefix length`},
		{"bare IPv6", Config{InterfaceName: "net1", IPs: []string{"fd00::5"}}, `IP "fd00::5" has no prefix length`},
		{"bad CIDR", Config{InterfaceName: "net1", IPs: []string{"10.97.0.5/33"}}, "invalid CIDR address"},
		{"long name", Config{InterfaceName: "net123456789abcd"}, "interface name"},
		{"name with slash", Config{InterfaceName: "net/1"}, "interface name"},
		{"no name", Config{}, "interface name"},
		{"bad MAC", Config{InterfaceName: "net1", HardwareAddress: "02:aa:bb"}, "invalid MAC address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := l.moveIn(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("MoveIn error = %v, want one containing %q", err, tc.wantErr)
			}
			if _, err := l.nodeH.LinkByName(vfName); err != nil {
				t.Errorf("%s left the node netns: %v", vfName, err)
			}
		})
	}
}

// A step failing after the move brings the VF back.
func TestMoveInRollsBack(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      Config
		podLinks []string // besides lo, made before MoveIn
		wantErr  string
	}{
		{
			name:     "name taken in pod",
			cfg:      Config{InterfaceName: "net1"},
			podLinks: []string{"net1", "other"},
			wantErr:  "rename to net1",
		},
		{
			name:    "MAC the kernel refuses",
			cfg:     Config{InterfaceName: "net1", HardwareAddress: "01:00:5e:00:00:01"},
			wantErr: "set MAC 01:00:5e:00:00:01",
		},
		{
			name:    "duplicate address",
			cfg:     Config{InterfaceName: "net1", IPs: []string{"10.97.0.5/24", "10.97.0.5/24"}, HardwareAddress: "02:aa:bb:cc:dd:05"},
			wantErr: "add address 10.97.0.5/24",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLab(t)
			if tc.podLinks != nil {
				veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: tc.podLinks[0]}, PeerName: tc.podLinks[1]}
				if err := l.podH.LinkAdd(veth); err != nil {
					t.Fatal(err)
				}
			}
			_, err := l.moveIn(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("MoveIn error = %v, want one containing %q", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), "move "+vfName+" into "+l.podPath) {
				t.Errorf("MoveIn error %q does not name the link and namespace", err)
			}
			l.requireHome(t)
			if names, want := linkNames(t, l.podH), append([]string{"lo"}, tc.podLinks...); !slices.Equal(names, want) {
				t.Errorf("pod links = %v, want %v", names, want)
			}
		})
	}
}
