package hwreaders

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// TestNetlinkSeesEveryNetdevAsTheTreeDescribesIt: inside the node's network namespace each
// netdev is an Ethernet link (a veth) with the profile's MAC, up, with the tree's MTU.
func TestNetlinkSeesEveryNetdevAsTheTreeDescribesIt(t *testing.T) {
	want, root := node(t)
	name := os.Getenv("DRALAB_HW_NETNS")
	if name == "" {
		t.Skip("DRALAB_HW_NETNS is not set")
	}
	ns, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	handle, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer handle.Close()
	for _, w := range want.Netdevs {
		link, err := handle.LinkByName(w.Name)
		if err != nil {
			t.Errorf("%s: %v", w.Name, err)
			continue
		}
		attrs := link.Attrs()
		tree := func(attribute string) string {
			data, err := os.ReadFile(filepath.Join(root, "sys", "class", "net", w.Name, attribute))
			if err != nil {
				t.Errorf("%s: %v", w.Name, err)
			}
			return strings.TrimSpace(string(data))
		}
		if attrs.HardwareAddr.String() != w.MAC || attrs.EncapType != "ether" || tree("type") != "1" {
			t.Errorf("%s: netlink sees %s with MAC %s, the tree says type %s; want ether (type 1) with MAC %s",
				w.Name, attrs.EncapType, attrs.HardwareAddr, tree("type"), w.MAC)
		}
		if attrs.Flags&net.FlagUp == 0 || tree("operstate") != "up" {
			t.Errorf("%s: netlink flags %v, tree operstate %s; want up", w.Name, attrs.Flags, tree("operstate"))
		}
		if mtu := tree("mtu"); mtu != strconv.Itoa(attrs.MTU) {
			t.Errorf("%s: netlink MTU %d, the tree says %s", w.Name, attrs.MTU, mtu)
		}
	}
}
