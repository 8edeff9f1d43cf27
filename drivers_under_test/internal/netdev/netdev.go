// Package netdev moves a VF's netdev into a pod's network namespace and back, as the SR-IOV
// driver's NRI hooks do at RunPodSandbox and StopPodSandbox.
//
// The driver shares the node's network namespace with every other goroutine in the process, so
// it never switches a thread's namespace itself: it talks to each namespace through a netlink
// socket opened in it, and moves links between them by namespace file descriptor.
package netdev

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// maxNameLen is IFNAMSIZ less the terminating NUL.
const maxNameLen = 15

// Config is what the claim asks for.
type Config struct {
	InterfaceName   string   // name inside the pod, e.g. "net1"
	IPs             []string // CIDRs, e.g. "10.97.0.5/24"
	HardwareAddress string   // MAC to set; "" keeps the VF's own
}

// Attached describes the interface inside the pod as the kernel reports it after configuration.
type Attached struct {
	InterfaceName   string
	IPs             []string // ip/prefix, IPv4 and global IPv6 only, sorted
	HardwareAddress string   // lower-case, colon-separated
}

// MoveIn moves link hostName from the caller's network namespace into the one at podNetns (a
// path such as /proc/<pid>/ns/net or /var/run/netns/<name>), renames it, sets its MAC, adds the
// IPs, sets it up and returns what the kernel shows. If a step after the move fails, it moves the
// link back under hostName with its MAC, so a failed pod start does not strand the VF.
func MoveIn(hostName, podNetns string, cfg Config) (Attached, error) {
	got, err := moveIn(hostName, podNetns, cfg)
	if err != nil {
		return Attached{}, fmt.Errorf("move %s into %s: %w", hostName, podNetns, err)
	}
	return got, nil
}

func moveIn(hostName, podNetns string, cfg Config) (Attached, error) {
	want, err := cfg.parse()
	if err != nil {
		return Attached{}, err
	}
	ns, err := open(podNetns)
	if err != nil {
		return Attached{}, err
	}
	defer ns.close()

	link, err := ns.host.LinkByName(hostName)
	if err != nil {
		return Attached{}, fmt.Errorf("find it in own netns: %w", err)
	}
	hostMAC := link.Attrs().HardwareAddr
	if err := ns.host.LinkSetNsFd(link, int(ns.podNs)); err != nil {
		return Attached{}, fmt.Errorf("move to pod netns: %w", err)
	}
	// The move may give the link a new ifindex, so look it up again.
	if link, err = ns.pod.LinkByName(hostName); err != nil {
		return Attached{}, fmt.Errorf("find it in pod netns: %w", err)
	}
	got, err := ns.configure(link, want)
	if err != nil {
		if backErr := ns.bringBack(link, hostName, hostMAC); backErr != nil {
			return Attached{}, fmt.Errorf("%w; moving it back failed too: %w", err, backErr)
		}
		return Attached{}, err
	}
	return got, nil
}

// MoveOut moves podName from the namespace at podNetns back into the caller's namespace,
// restores hostName as its name and hostMAC as its MAC ("" keeps the current one) and sets it
// up. Its addresses go with the move. MoveOut is idempotent: it returns nil if the pod's
// namespace is gone, or if the link is already back under hostName (making sure it is up).
func MoveOut(podName, podNetns, hostName, hostMAC string) error {
	if err := moveOut(podName, podNetns, hostName, hostMAC); err != nil {
		return fmt.Errorf("move %s out of %s: %w", podName, podNetns, err)
	}
	return nil
}

func moveOut(podName, podNetns, hostName, hostMAC string) error {
	var mac net.HardwareAddr
	if hostMAC != "" {
		var err error
		if mac, err = net.ParseMAC(hostMAC); err != nil {
			return err
		}
	}
	ns, err := open(podNetns)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer ns.close()

	// Already back, perhaps by an earlier call that failed at the last step: make sure it is up.
	if link, err := ns.host.LinkByName(hostName); err == nil {
		if err := ns.host.LinkSetUp(link); err != nil {
			return fmt.Errorf("set %s up: %w", hostName, err)
		}
		return nil
	} else if !errors.As(err, &netlink.LinkNotFoundError{}) {
		return fmt.Errorf("look for %s in own netns: %w", hostName, err)
	}
	link, err := ns.pod.LinkByName(podName)
	if err != nil {
		return fmt.Errorf("find it in pod netns (nor is %s in own netns): %w", hostName, err)
	}
	return ns.bringBack(link, hostName, mac)
}

// spec is a validated Config.
type spec struct {
	name  string
	mac   net.HardwareAddr
	addrs []*netlink.Addr
}

// Validate checks c as MoveIn will, so a bad claim config fails at prepare, before any pod runs.
func (c Config) Validate() error {
	_, err := c.parse()
	return err
}

func (c Config) parse() (spec, error) {
	s := spec{name: c.InterfaceName}
	// The kernel's rules (dev_valid_name), checked here so a bad claim fails before the move.
	if s.name == "" || len(s.name) > maxNameLen || s.name == "." || s.name == ".." ||
		strings.ContainsAny(s.name, "/: \t\n\v\f\r") {
		return spec{}, fmt.Errorf("interface name %q: want 1 to %d bytes, no '/', ':' or spaces", s.name, maxNameLen)
	}
	if c.HardwareAddress != "" {
		var err error
		if s.mac, err = net.ParseMAC(c.HardwareAddress); err != nil {
			return spec{}, err
		}
	}
	for _, ip := range c.IPs {
		if net.ParseIP(ip) != nil {
			return spec{}, fmt.Errorf("IP %q has no prefix length; want a CIDR such as %s/24", ip, ip)
		}
		addr, err := netlink.ParseAddr(ip)
		if err != nil {
			return spec{}, err
		}
		// The claim owns these addresses; duplicate address detection would only hold back the
		// pod's first IPv6 packets while the address is tentative.
		addr.Flags = unix.IFA_F_NODAD
		s.addrs = append(s.addrs, addr)
	}
	return s, nil
}

// namespaces holds the caller's network namespace and the pod's, with a netlink handle in each.
type namespaces struct {
	hostNs, podNs netns.NsHandle
	host, pod     *netlink.Handle
}

func open(podNetns string) (_ *namespaces, err error) {
	ns := &namespaces{hostNs: netns.None(), podNs: netns.None()}
	defer func() {
		if err != nil {
			ns.close()
		}
	}()
	if ns.hostNs, err = netns.Get(); err != nil {
		return nil, fmt.Errorf("open own netns: %w", err)
	}
	if ns.podNs, err = netns.GetFromPath(podNetns); err != nil {
		return nil, fmt.Errorf("open pod netns: %w", err)
	}
	if ns.host, err = netlink.NewHandleAt(ns.hostNs, unix.NETLINK_ROUTE); err != nil {
		return nil, fmt.Errorf("netlink in own netns: %w", err)
	}
	if ns.pod, err = netlink.NewHandleAt(ns.podNs, unix.NETLINK_ROUTE); err != nil {
		return nil, fmt.Errorf("netlink in pod netns: %w", err)
	}
	return ns, nil
}

func (ns *namespaces) close() {
	for _, h := range []*netlink.Handle{ns.host, ns.pod} {
		if h != nil {
			h.Close()
		}
	}
	for _, n := range []netns.NsHandle{ns.hostNs, ns.podNs} {
		if n.IsOpen() {
			n.Close()
		}
	}
}

// configure applies s to link, which has just arrived in the pod's namespace and so is down, and
// reads the result back.
func (ns *namespaces) configure(link netlink.Link, s spec) (Attached, error) {
	if err := ns.pod.LinkSetName(link, s.name); err != nil {
		return Attached{}, fmt.Errorf("rename to %s: %w", s.name, err)
	}
	if s.mac != nil {
		if err := ns.pod.LinkSetHardwareAddr(link, s.mac); err != nil {
			return Attached{}, fmt.Errorf("set MAC %s: %w", s.mac, err)
		}
	}
	for _, a := range s.addrs {
		if err := ns.pod.AddrAdd(link, a); err != nil {
			return Attached{}, fmt.Errorf("add address %s: %w", a.IPNet, err)
		}
	}
	if err := ns.pod.LinkSetUp(link); err != nil {
		return Attached{}, fmt.Errorf("set up: %w", err)
	}

	got, err := ns.pod.LinkByIndex(link.Attrs().Index)
	if err != nil {
		return Attached{}, fmt.Errorf("read back: %w", err)
	}
	ips, err := addrs(ns.pod, got)
	if err != nil {
		return Attached{}, fmt.Errorf("read back addresses: %w", err)
	}
	return Attached{
		InterfaceName:   got.Attrs().Name,
		IPs:             ips,
		HardwareAddress: got.Attrs().HardwareAddr.String(),
	}, nil
}

// bringBack returns link from the pod's namespace to the caller's as hostName with MAC mac (nil
// keeps the current one) and sets it up. It renames the link before the move, so that the move
// cannot collide with a node interface that happens to share the pod's name for it.
func (ns *namespaces) bringBack(link netlink.Link, hostName string, mac net.HardwareAddr) error {
	// Renaming needs the link down, and some VF drivers refuse a MAC change while it is up.
	if err := ns.pod.LinkSetDown(link); err != nil {
		return fmt.Errorf("set down: %w", err)
	}
	if mac != nil {
		if err := ns.pod.LinkSetHardwareAddr(link, mac); err != nil {
			return fmt.Errorf("restore MAC %s: %w", mac, err)
		}
	}
	if err := ns.pod.LinkSetName(link, hostName); err != nil {
		return fmt.Errorf("rename to %s: %w", hostName, err)
	}
	// Leaving the namespace drops the link's addresses.
	if err := ns.pod.LinkSetNsFd(link, int(ns.hostNs)); err != nil {
		return fmt.Errorf("move to own netns: %w", err)
	}
	back, err := ns.host.LinkByName(hostName)
	if err != nil {
		return fmt.Errorf("find %s after the move: %w", hostName, err)
	}
	if err := ns.host.LinkSetUp(back); err != nil {
		return fmt.Errorf("set %s up: %w", hostName, err)
	}
	return nil
}

// addrs lists link's IPv4 and global IPv6 addresses as sorted CIDRs.
func addrs(h *netlink.Handle, link netlink.Link) ([]string, error) {
	list, err := h.AddrList(link, netlink.FAMILY_ALL)
	// A dump that raced with an address change, such as the IPv6 link-local address the kernel
	// adds once the link is up, is flagged as interrupted: try once more.
	if errors.Is(err, netlink.ErrDumpInterrupted) {
		list, err = h.AddrList(link, netlink.FAMILY_ALL)
	}
	if err != nil {
		return nil, err
	}
	var ips []string
	for _, a := range list {
		if a.IP.To4() != nil || a.Scope == unix.RT_SCOPE_UNIVERSE {
			ips = append(ips, a.IPNet.String())
		}
	}
	slices.Sort(ips)
	return ips, nil
}
