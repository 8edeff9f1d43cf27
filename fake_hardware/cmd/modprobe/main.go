// Command modprobe stands in for kmod's modprobe in an emulated node's host root
// (fake_hardware/host_root.py), where drivers run it through chroot, as NVIDIA's DRA driver does
// (`chroot /host-root modprobe vfio_pci`) before it binds GPUs to vfio-pci. No module can be
// loaded into the lab's kernel: a module the emulated node has loaded (/sys/module/<name>, which
// in the host root is the node's tree) succeeds as modprobe does for a loaded module; any other
// fails as modprobe does for a module that is not installed. Removal (-r) is refused: the
// emulated devices' drivers stay loaded.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

func main() {
	quiet, names := false, []string{}
	for _, arg := range os.Args[1:] {
		switch {
		case arg == "-q" || arg == "--quiet":
			quiet = true
		case arg == "-r" || arg == "--remove":
			fail("modprobe: ERROR: the emulated node's modules cannot be removed (dralab stand-in)")
		case strings.HasPrefix(arg, "-"):
			// Other options (-b, -v, --first-time, ...) change nothing for a module already loaded.
		case strings.Contains(arg, "="):
			// Module parameters: only a loaded module can be asked for, and it keeps its own.
		default:
			names = append(names, arg)
		}
	}
	if len(names) == 0 {
		fail("modprobe: ERROR: missing module name")
	}
	for _, name := range names {
		module := strings.ReplaceAll(name, "-", "_")
		if _, err := os.Stat(filepath.Join("/sys/module", module)); err == nil {
			continue
		}
		if quiet {
			os.Exit(1)
		}
		fail(fmt.Sprintf("modprobe: FATAL: Module %s not found in directory /lib/modules/%s", name, release()))
	}
}

func release() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return "unknown"
	}
	return unix.ByteSliceToString(u.Release[:])
}

func fail(message string) {
	fmt.Fprintln(os.Stderr, message)
	os.Exit(1)
}
