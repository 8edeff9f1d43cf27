package dradriver_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"dralab.dev/drivers/internal/dradriver"
	"dralab.dev/drivers/internal/dradriver/frameworktest"
)

// The kubelet plugin contract's variants of the plugin's sockets, seen on the node's files as the
// kubelet sees them: each test compares the correct driver with the variant.

// socketAt reports whether path is a unix socket.
func socketAt(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&os.ModeSocket != 0
}

// registryEntries are the names in the kubelet's plugins_registry.
func registryEntries(t *testing.T, o *dradriver.Options) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(o.RegistrationSocket()))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// inotify reports the events on dir's entries from now on, as the kubelet's plugin watcher
// (fsnotify) gets them: the returned function reads each entry's event mask so far.
func inotify(t *testing.T, dir string) func() map[string]uint32 {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err == nil {
		_, err = unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_DELETE|unix.IN_MOVED_FROM|unix.IN_MOVED_TO)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return func() map[string]uint32 {
		out := map[string]uint32{}
		buf := make([]byte, 64<<10)
		n, _ := unix.Read(fd, buf)
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			e := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(e.Len)]
			out[strings.TrimRight(string(name), "\x00")] |= e.Mask
			off += unix.SizeofInotifyEvent + int(e.Len)
		}
		return out
	}
}

// The kubelet registers the driver as its plugin watcher does: GetInfo, then the status. The
// variant's socket goes only once the kubelet said it registered, and the kubelet's watcher sees
// no deletion of it (it deregisters a plugin whose socket is deleted); its connection stays.
func TestRemoveRegistrationSocketOnceTheKubeletRegisteredIt(t *testing.T) {
	c := claim("claim", "3f2a-uid", "dev")
	for variant, removed := range map[string]bool{"": false, dradriver.VariantRemoveRegistrationSocket: true} {
		n, o := start(t, variant, c)
		conn, err := grpc.NewClient("unix://"+o.RegistrationSocket(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		events := inotify(t, filepath.Dir(o.RegistrationSocket()))
		kubelet := registerapi.NewRegistrationClient(conn)
		if _, err := kubelet.GetInfo(t.Context(), &registerapi.InfoRequest{}); err != nil {
			t.Fatal(err)
		}
		// The framework answers a failed registration with an error; the socket stays for a retry.
		_, _ = kubelet.NotifyRegistrationStatus(t.Context(), &registerapi.RegistrationStatus{Error: "unsupported version"})
		if !socketAt(o.RegistrationSocket()) {
			t.Fatalf("variant %q: no registration socket before the kubelet registered the driver", variant)
		}
		if _, err := kubelet.NotifyRegistrationStatus(t.Context(), &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
			t.Fatal(err)
		}
		if gone := !socketAt(o.RegistrationSocket()); gone != removed {
			t.Errorf("variant %q: registration socket removed %v, want %v", variant, gone, removed)
		}
		want := []string{filepath.Base(o.RegistrationSocket())}
		if removed {
			want = nil // nothing else either, hidden or not
		}
		if got := registryEntries(t, o); !slices.Equal(got, want) {
			t.Errorf("variant %q: plugins_registry holds %v, want %v", variant, got, want)
		}
		if mask := events()[filepath.Base(o.RegistrationSocket())]; mask&unix.IN_DELETE != 0 || (mask&unix.IN_MOVED_FROM != 0) != removed {
			t.Errorf("variant %q: the kubelet's watcher sees events %#x on the registration socket", variant, mask)
		}
		if _, err := kubelet.GetInfo(t.Context(), &registerapi.InfoRequest{}); err != nil {
			t.Errorf("variant %q: the kubelet's connection to the registration socket: %v", variant, err)
		}
		n.Prepare(t, c) // the DRA service is untouched
	}
}

// The variant's DRA service socket stays after the framework's Stop (SIGTERM); a driver started
// again on the node replaces it.
func TestLeaveSocketLeavesTheDRASocketWhenTheDriverStops(t *testing.T) {
	c := claim("claim", "3f2a-uid", "dev")
	for variant, left := range map[string]bool{"": false, dradriver.VariantLeaveSocket: true} {
		n, o := start(t, variant, c)
		n.Prepare(t, c)
		n.Stop()
		dra := filepath.Join(o.PluginDataDir(), "dra.sock")
		if got := socketAt(dra); got != left {
			t.Errorf("variant %q: %s left after Stop: %v, want %v", variant, dra, got, left)
		}
		if socketAt(o.RegistrationSocket()) {
			t.Errorf("variant %q: registration socket left after Stop", variant)
		}
		if left {
			frameworktest.Start(t, o, stub{}, c).Prepare(t, c)
		}
	}
}
