package dradriver_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"dralab.dev/drivers_under_test/dradriver"
	"dralab.dev/drivers_under_test/dradriver/frameworktest"
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
	c := frameworktest.Claim("claim", "3f2a-uid", "dev")
	for variant, removed := range map[string]bool{"": false, dradriver.VariantRemoveRegistrationSocket: true} {
		n, o := frameworktest.StartStub(t, variant, c)
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
	c := frameworktest.Claim("claim", "3f2a-uid", "dev")
	for variant, left := range map[string]bool{"": false, dradriver.VariantLeaveSocket: true} {
		n, o := frameworktest.StartStub(t, variant, c)
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
			frameworktest.Start(t, o, frameworktest.Stub{}, c).Prepare(t, c)
		}
	}
}

// failing is the stub driver failing to prepare the claims named "bad", as a driver does with a
// device it does not have.
type failing struct{ frameworktest.Stub }

func (f failing) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	out, err := f.Stub.PrepareResourceClaims(ctx, claims)
	for _, c := range claims {
		if c.Name == "bad" {
			out[c.UID] = kubeletplugin.PrepareResult{Err: errors.New("device gpu-9 is not on node-1")}
		}
	}
	return out, err
}

// errors are the claim errors of a prepare call's answer by claim name, or the call's error.
func answerErrors(resp *drapb.NodePrepareResourcesResponse, err error, claims ...*resourceapi.ResourceClaim) map[string]string {
	if err != nil {
		return map[string]string{"(call)": err.Error()}
	}
	out := map[string]string{}
	for _, c := range claims {
		if e := resp.Claims[string(c.UID)].GetError(); e != "" {
			out[c.Name] = e
		}
	}
	return out
}

// A claim that fails is answered with its own error, the others with their devices, then and
// in later calls; the variants fail the whole call, or every later claim.
func TestPrepareFailureVariants(t *testing.T) {
	bad, good, later := frameworktest.Claim("bad", "1-bad", "dev"), frameworktest.Claim("good", "2-good", "dev"), frameworktest.Claim("later", "3-later", "dev")
	for variant, want := range map[string][2][]string{
		"":                               {{"bad"}, nil},
		dradriver.VariantFailWholeCall:   {{"(call)"}, nil},
		dradriver.VariantWedgeAfterError: {{"bad"}, {"later"}},
	} {
		n, _ := frameworktest.StartDriver(t, failing{}, variant, bad, good, later)
		first, err := n.PrepareCall(bad, good)
		if got := slices.Sorted(maps.Keys(answerErrors(first, err, bad, good))); !slices.Equal(got, want[0]) {
			t.Errorf("variant %q: errors of the call with a bad claim: %v, want %v", variant, got, want[0])
		}
		second, err := n.PrepareCall(later)
		if got := slices.Sorted(maps.Keys(answerErrors(second, err, later))); !slices.Equal(got, want[1]) {
			t.Errorf("variant %q: errors of a later call: %v, want %v", variant, got, want[1])
		}
	}
}

// Unpreparing a claim never prepared succeeds (the kubelet unprepares a claim whose prepare
// failed); the variant answers it with an error, and still unprepares one it prepared.
func TestStrictUnprepareRefusesClaimsNeverPrepared(t *testing.T) {
	bad, good := frameworktest.Claim("bad", "1-bad", "dev"), frameworktest.Claim("good", "2-good", "dev")
	for variant, refused := range map[string]bool{"": false, dradriver.VariantStrictUnprepare: true} {
		n, _ := frameworktest.StartDriver(t, failing{}, variant, bad, good)
		_, _ = n.PrepareCall(bad, good)
		resp, err := n.UnprepareCall(bad, good)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Claims["1-bad"].GetError() != ""; got != refused {
			t.Errorf("variant %q: unprepare of the claim that failed to prepare refused: %v, want %v (%q)", variant, got, refused, resp.Claims["1-bad"].GetError())
		}
		if e := resp.Claims["2-good"].GetError(); e != "" {
			t.Errorf("variant %q: unprepare of a prepared claim: %s", variant, e)
		}
	}
}

// The variant answers every device without request names; the correct driver names each one's.
func TestAnyRequestDropsTheRequestNames(t *testing.T) {
	c := frameworktest.Claim("claim", "3f2a-uid", "r1", "r2")
	for variant, named := range map[string]bool{"": true, dradriver.VariantAnyRequest: false} {
		n, _ := frameworktest.StartStub(t, variant, c)
		devices := n.Prepare(t, c)["3f2a-uid"]
		if len(devices) != 2 {
			t.Fatalf("variant %q: answered %v", variant, devices)
		}
		for _, d := range devices {
			if got := len(d.RequestNames) == 1; got != named {
				t.Errorf("variant %q: device %s answered with requests %v", variant, d.DeviceName, d.RequestNames)
			}
		}
	}
}

// Preparing a prepared claim again answers the same devices; the variant answers it with an
// error, and prepares a claim again once it was unprepared.
func TestPrepareOnceRefusesAClaimPreparedAlready(t *testing.T) {
	c := frameworktest.Claim("claim", "4b1c-uid", "dev")
	for variant, refused := range map[string]bool{"": false, dradriver.VariantPrepareOnce: true} {
		n, _ := frameworktest.StartStub(t, variant, c)
		first := n.Prepare(t, c)["4b1c-uid"]
		again, err := n.PrepareCall(c)
		if err != nil {
			t.Fatal(err)
		}
		if got := again.Claims["4b1c-uid"].GetError() != ""; got != refused {
			t.Errorf("variant %q: a second prepare refused: %v, want %v (%q)", variant, got, refused, again.Claims["4b1c-uid"].GetError())
		}
		if !refused && !slices.EqualFunc(first, again.Claims["4b1c-uid"].GetDevices(), func(a, b *drapb.Device) bool { return proto.Equal(a, b) }) {
			t.Errorf("a second prepare answered %v, the first %v", again.Claims["4b1c-uid"].GetDevices(), first)
		}
		if _, err := n.UnprepareCall(c); err != nil {
			t.Fatal(err)
		}
		if after := n.Prepare(t, c)["4b1c-uid"]; len(after) != len(first) {
			t.Errorf("variant %q: prepared after unprepare: %v", variant, after)
		}
	}
}

// The correct driver answers every device of a claim; the variant leaves out the last device of
// a request with several, and only that: a claim of one device per request keeps them all.
func TestOmitLastDeviceLeavesOutTheLastDeviceOfARequestWithSeveral(t *testing.T) {
	twoOfOne := frameworktest.Claim("two", "5e1a-uid", "dev", "dev")
	onePerRequest := frameworktest.Claim("pair", "5e1b-uid", "r1", "r2")
	for variant, want := range map[string][]string{
		"":                              {"gpu-0", "gpu-1"},
		dradriver.VariantOmitLastDevice: {"gpu-0"},
	} {
		n, _ := frameworktest.StartStub(t, variant, twoOfOne, onePerRequest)
		answered := n.Prepare(t, twoOfOne, onePerRequest)
		var got []string
		for _, d := range answered["5e1a-uid"] {
			got = append(got, d.DeviceName)
		}
		if !slices.Equal(got, want) {
			t.Errorf("variant %q: the claim of two devices for one request answered %v, want %v", variant, got, want)
		}
		if pair := answered["5e1b-uid"]; len(pair) != 2 {
			t.Errorf("variant %q: the claim of one device per request answered %v, want both", variant, pair)
		}
		// The request's metadata CDI device stays on its first device, which is answered.
		if ids := answered["5e1a-uid"][0].CdiDeviceIds; !slices.ContainsFunc(ids, func(id string) bool { return strings.Contains(id, "/metadata=") }) {
			t.Errorf("variant %q: the first device's CDI devices %v lack the metadata's", variant, ids)
		}
	}
}

// Unpreparing a claim unprepared already, or one this process was never asked about (a driver
// restarted since its prepare), succeeds; the variant answers each with an error once, and still
// unprepares a claim it prepared, and one whose prepare failed.
func TestFailRepeatUnprepareRefusesAClaimItHasNoRecordOfOnce(t *testing.T) {
	bad, good, unknown := frameworktest.Claim("bad", "6-bad", "dev"), frameworktest.Claim("good", "6-good", "dev"), frameworktest.Claim("unknown", "6-unknown", "dev")
	for variant, refused := range map[string]bool{"": false, dradriver.VariantFailRepeatUnprepare: true} {
		n, _ := frameworktest.StartDriver(t, failing{}, variant, bad, good, unknown)
		_, _ = n.PrepareCall(bad, good)
		n.Unprepare(t, bad, good) // asked to prepare: its unprepare succeeds, the failed one's too
		for _, c := range []*resourceapi.ResourceClaim{good, unknown} {
			resp, err := n.UnprepareCall(c)
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.Claims[string(c.UID)].GetError() != ""; got != refused {
				t.Errorf("variant %q: unprepare of claim %s with no record refused: %v, want %v", variant, c.Name, got, refused)
			}
			n.Unprepare(t, c) // the kubelet's retry
		}
	}
}
