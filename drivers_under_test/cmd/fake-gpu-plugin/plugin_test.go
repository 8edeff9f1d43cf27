package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"dralab.dev/drivers_under_test/deviceplugin/fakekubelet"
	"dralab.dev/drivers_under_test/internal/cdi"
	"dralab.dev/drivers_under_test/internal/sysfs"
	"dralab.dev/drivers_under_test/internal/variant"
)

// timeout bounds every wait; a healthy run takes milliseconds.
const timeout = 3 * time.Second

type fakeGPU struct {
	port, bdf, uuid string
	index, numa     int
}

// fixture is two GPUs on NUMA node 1 and one on node 0, where the lowest index is.
var fixture = []fakeGPU{
	{"0000:00:01.0", "0000:01:00.0", "GPU-a", 0, 0},
	{"0000:00:02.0", "0000:02:00.0", "GPU-b", 1, 1},
	{"0000:00:03.0", "0000:03:00.0", "GPU-c", 2, 1},
}

func gpuDir(root string, g fakeGPU) string {
	return filepath.Join(root, "devices", "pci0000:00", g.port, g.bdf)
}

// writeInfo replaces a GPU's info file by rename, as the emulated hardware does, so the plugin's
// poll never reads half a file.
func writeInfo(t *testing.T, root string, g fakeGPU, health string) {
	t.Helper()
	info := fmt.Sprintf(`{"uuid": %q, "index": %d, "model": "A100", "memoryBytes": 42949672960, "health": %q}`,
		g.uuid, g.index, health)
	tmp := filepath.Join(gpuDir(root, g), sysfs.GPUInfoFile+".tmp")
	if err := os.WriteFile(tmp, []byte(info), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(gpuDir(root, g), sysfs.GPUInfoFile)); err != nil {
		t.Fatal(err)
	}
}

// buildSysfs lays out the fixture as the kernel does: device dirs under devices/, relative
// links to them in bus/pci/devices.
func buildSysfs(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	links := filepath.Join(root, "bus", "pci", "devices")
	if err := os.MkdirAll(links, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, g := range fixture {
		dir := gpuDir(root, g)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, content := range map[string]string{"class": "0x030200\n", "numa_node": fmt.Sprintf("%d\n", g.numa)} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		writeInfo(t, root, g, "healthy")
		rel, _ := filepath.Rel(links, dir)
		if err := os.Symlink(rel, filepath.Join(links, g.bdf)); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

type harness struct {
	sysfs, pluginDir, cdiDir string
	kubelet                  *fakekubelet.Kubelet
	kubeletServer            *grpc.Server
	client                   pluginapi.DevicePluginClient
	stop                     func() error // stops the plugin and returns what run returned
}

func newPlugin(t *testing.T, args ...string) *plugin {
	t.Helper()
	flags := flag.NewFlagSet("test", flag.ContinueOnError)
	v := variant.Flag(flags, variants)
	if err := flags.Parse(args); err != nil {
		t.Fatal(err)
	}
	root := buildSysfs(t)
	return &plugin{
		sysfsRoot:     root,
		hostSysfsRoot: "/host/sys",
		hostDevRoot:   "/host/driver-root/dev",
		pluginDir:     t.TempDir(),
		cdiDir:        filepath.Join(t.TempDir(), "cdi"),
		resource:      "dralab.dev/fake-gpu",
		poll:          10 * time.Millisecond,
		watch:         10 * time.Millisecond,
		variant:       v,
	}
}

// start runs a plugin, with the given command line variant flags, against a fake kubelet and
// waits for it to register.
func start(t *testing.T, args ...string) (*harness, *pluginapi.RegisterRequest) {
	t.Helper()
	p := newPlugin(t, args...)
	h := &harness{sysfs: p.sysfsRoot, pluginDir: p.pluginDir, cdiDir: p.cdiDir,
		kubelet: fakekubelet.New()}
	h.kubeletServer = h.kubelet.Serve(t, h.pluginDir)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.run(ctx) }()
	h.stop = sync.OnceValue(func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(timeout):
			return errors.New("the plugin did not stop")
		}
	})
	t.Cleanup(func() {
		if err := h.stop(); err != nil {
			t.Error(err)
		}
	})

	req := h.kubelet.Registered(t, timeout)
	conn, err := grpc.NewClient("unix:"+filepath.Join(h.pluginDir, req.Endpoint),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	h.client = pluginapi.NewDevicePluginClient(conn)
	return h, req
}

// testContext ends with the test or after timeout.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

// health maps each listed device to its health.
func health(t *testing.T, stream grpc.ServerStreamingClient[pluginapi.ListAndWatchResponse]) map[string]string {
	t.Helper()
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, d := range resp.Devices {
		got[d.ID] = d.Health
	}
	return got
}

func TestRegisterAndListAndWatch(t *testing.T) {
	h, req := start(t)
	want := &pluginapi.RegisterRequest{
		Version: pluginapi.Version, Endpoint: socketName, ResourceName: "dralab.dev/fake-gpu",
		Options: &pluginapi.DevicePluginOptions{GetPreferredAllocationAvailable: true, PreStartRequired: true},
	}
	if !proto.Equal(req, want) {
		t.Errorf("Register(%v), want %v", req, want)
	}
	ctx := testContext(t)
	if opts, err := h.client.GetDevicePluginOptions(ctx, &pluginapi.Empty{}); err != nil || !proto.Equal(opts, want.Options) {
		t.Errorf("GetDevicePluginOptions = %v, %v; want %v", opts, err, want.Options)
	}

	stream, err := h.client.ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Devices) != len(fixture) {
		t.Fatalf("first ListAndWatch lists %v, want %d devices", first.Devices, len(fixture))
	}
	for i, d := range first.Devices {
		wantDev := &pluginapi.Device{ID: fixture[i].uuid, Health: pluginapi.Healthy,
			Topology: &pluginapi.TopologyInfo{Nodes: []*pluginapi.NUMANode{{ID: int64(fixture[i].numa)}}}}
		if !proto.Equal(d, wantDev) {
			t.Errorf("device %d: %v, want %v", i, d, wantDev)
		}
	}

	writeInfo(t, h.sysfs, fixture[1], "unhealthy")
	if got, want := health(t, stream), map[string]string{"GPU-a": "Healthy", "GPU-b": "Unhealthy", "GPU-c": "Healthy"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after GPU-b failed: %v, want %v", got, want)
	}
	if err := os.Remove(filepath.Join(h.sysfs, "bus", "pci", "devices", fixture[2].bdf)); err != nil {
		t.Fatal(err)
	}
	if got, want := health(t, stream), map[string]string{"GPU-a": "Healthy", "GPU-b": "Unhealthy"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after GPU-c went away: %v, want %v", got, want)
	}
}

func TestNeverUnhealthyVariant(t *testing.T) {
	h, _ := start(t, "--break=never-unhealthy")
	stream, err := h.client.ListAndWatch(testContext(t), &pluginapi.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	health(t, stream)
	writeInfo(t, h.sysfs, fixture[1], "unhealthy")
	// The variant sends nothing for the failure; removing a GPU forces the next list.
	if err := os.Remove(filepath.Join(h.sysfs, "bus", "pci", "devices", fixture[2].bdf)); err != nil {
		t.Fatal(err)
	}
	if got, want := health(t, stream), map[string]string{"GPU-a": "Healthy", "GPU-b": "Healthy"}; !reflect.DeepEqual(got, want) {
		t.Errorf("never-unhealthy: %v, want %v", got, want)
	}
}

func TestMissingDeviceVariant(t *testing.T) {
	h, _ := start(t, "--break=missing-device")
	stream, err := h.client.ListAndWatch(testContext(t), &pluginapi.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := health(t, stream), map[string]string{"GPU-a": "Healthy", "GPU-b": "Healthy"}; !reflect.DeepEqual(got, want) {
		t.Errorf("missing-device lists %v, want %v (all but the last GPU)", got, want)
	}
}

func TestCDISpecLifecycle(t *testing.T) {
	h, _ := start(t)
	path := filepath.Join(h.cdiDir, cdiSpecName)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got cdi.Spec
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	want := cdi.Spec{Version: "0.5.0", Kind: "dralab.dev/fake-gpu"}
	for _, g := range fixture {
		want.Devices = append(want.Devices, cdi.Device{Name: g.uuid,
			ContainerEdits: cdi.Edits{Env: []string{fmt.Sprintf("DRALAB_CDI_GPU_%d=%s", g.index, g.uuid)}}})
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("CDI spec %+v, want %+v", got, want)
	}
	if entries, _ := os.ReadDir(h.cdiDir); len(entries) != 1 {
		t.Errorf("CDI dir holds %v, want only the spec", entries)
	}

	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, filepath.Join(h.pluginDir, socketName)} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s left behind after exit (%v)", p, err)
		}
	}
}

func TestAllocate(t *testing.T) {
	h, _ := start(t)
	ctx := testContext(t)
	resp, err := h.client.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{
		{DevicesIds: []string{"GPU-c", "GPU-a"}},
		{DevicesIds: []string{"GPU-b"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ContainerResponses) != 2 {
		t.Fatalf("%d container responses, want 2", len(resp.ContainerResponses))
	}
	mount := func(g fakeGPU) *pluginapi.Mount {
		rel, _ := filepath.Rel(h.sysfs, gpuDir(h.sysfs, g))
		return &pluginapi.Mount{ContainerPath: "/var/run/dralab/fake-gpu/" + g.uuid,
			HostPath: filepath.Join("/host/sys", rel), ReadOnly: true}
	}
	want := &pluginapi.ContainerAllocateResponse{
		Envs:   map[string]string{"DRALAB_FAKE_GPU_UUIDS": "GPU-c,GPU-a", "DRALAB_FAKE_GPU_2": "GPU-c", "DRALAB_FAKE_GPU_0": "GPU-a"},
		Mounts: []*pluginapi.Mount{mount(fixture[2]), mount(fixture[0])},
		Devices: []*pluginapi.DeviceSpec{
			{ContainerPath: "/dev/nvidia2", HostPath: "/host/driver-root/dev/nvidia2", Permissions: "rw"},
			{ContainerPath: "/dev/nvidia0", HostPath: "/host/driver-root/dev/nvidia0", Permissions: "rw"},
		},
		CdiDevices: []*pluginapi.CDIDevice{{Name: "dralab.dev/fake-gpu=GPU-c"}, {Name: "dralab.dev/fake-gpu=GPU-a"}},
	}
	if got := resp.ContainerResponses[0]; !proto.Equal(got, want) {
		t.Errorf("Allocate:\n got %v\nwant %v", got, want)
	}
	if got := resp.ContainerResponses[1].Envs["DRALAB_FAKE_GPU_UUIDS"]; got != "GPU-b" {
		t.Errorf("second container gets %q, want GPU-b", got)
	}

	_, err = h.client.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{
		{DevicesIds: []string{"GPU-a", "GPU-x"}},
	}})
	if status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), "GPU-x") {
		t.Errorf("Allocate of an unknown device: %v, want NotFound naming it", err)
	}

	if _, err := h.client.PreStartContainer(ctx, &pluginapi.PreStartContainerRequest{DevicesIds: []string{"GPU-a"}}); err != nil {
		t.Errorf("PreStartContainer: %v", err)
	}
}

func TestWrongDeviceVariant(t *testing.T) {
	h, _ := start(t, "--break=wrong-device")
	resp, err := h.client.Allocate(testContext(t), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{
		{DevicesIds: []string{"GPU-c", "GPU-a"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	// The GPU after GPU-c is GPU-a (wrapping around), the one after GPU-a is GPU-b, which was not asked for.
	got := resp.ContainerResponses[0]
	want := []*pluginapi.CDIDevice{{Name: "dralab.dev/fake-gpu=GPU-a"}, {Name: "dralab.dev/fake-gpu=GPU-b"}}
	if !slices.EqualFunc(got.CdiDevices, want, func(a, b *pluginapi.CDIDevice) bool { return proto.Equal(a, b) }) ||
		got.Envs["DRALAB_FAKE_GPU_1"] != "GPU-b" || got.Envs["DRALAB_FAKE_GPU_2"] != "" {
		t.Errorf("wrong-device answers %v, want the devices after GPU-c and GPU-a: GPU-a and GPU-b", got)
	}
}

// nodes are the host paths of an answer's device nodes.
func nodes(c *pluginapi.ContainerAllocateResponse) []string {
	var out []string
	for _, d := range c.Devices {
		out = append(out, d.HostPath)
	}
	return out
}

func TestAllocateOtherDeviceVariant(t *testing.T) {
	h, _ := start(t, "--break=allocate-other-device")
	ctx := testContext(t)
	allocate := func(ids ...string) *pluginapi.ContainerAllocateResponse {
		t.Helper()
		resp, err := h.client.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: ids}}})
		if err != nil {
			t.Fatal(err)
		}
		return resp.ContainerResponses[0]
	}
	// The first container request is answered right, the second (a pod's second container) gets
	// the node of the GPU after the one asked for, with the env of the one asked for.
	if got, want := nodes(allocate("GPU-a")), []string{"/host/driver-root/dev/nvidia0"}; !slices.Equal(got, want) {
		t.Errorf("first request: device nodes %v, want %v", got, want)
	}
	second := allocate("GPU-a")
	if got, want := nodes(second), []string{"/host/driver-root/dev/nvidia1"}; !slices.Equal(got, want) || second.Envs["DRALAB_FAKE_GPU_0"] != "GPU-a" {
		t.Errorf("second request: device nodes %v, env %v; want %v with GPU-a's env", got, second.Envs, want)
	}
	// In one Allocate of two container requests, the second is answered with another device's node.
	resp, err := h.client.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{
		{DevicesIds: []string{"GPU-b"}}, {DevicesIds: []string{"GPU-b"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := [][]string{nodes(resp.ContainerResponses[0]), nodes(resp.ContainerResponses[1])}; !reflect.DeepEqual(got,
		[][]string{{"/host/driver-root/dev/nvidia1"}, {"/host/driver-root/dev/nvidia2"}}) {
		t.Errorf("one Allocate of two requests for GPU-b: device nodes %v, want GPU-b's then GPU-c's", got)
	}
}

func TestOmitLastDeviceNodeVariant(t *testing.T) {
	h, _ := start(t, "--break=omit-last-device-node")
	resp, err := h.client.Allocate(testContext(t), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{
		{DevicesIds: []string{"GPU-c", "GPU-a"}}, {DevicesIds: []string{"GPU-b"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	two, one := resp.ContainerResponses[0], resp.ContainerResponses[1]
	if got, want := nodes(two), []string{"/host/driver-root/dev/nvidia2"}; !slices.Equal(got, want) || len(two.CdiDevices) != 2 || two.Envs["DRALAB_FAKE_GPU_0"] != "GPU-a" {
		t.Errorf("two devices: device nodes %v, CDI devices %v, env %v; want %v with both GPUs' CDI devices and env", got, two.CdiDevices, two.Envs, want)
	}
	if got, want := nodes(one), []string{"/host/driver-root/dev/nvidia1"}; !slices.Equal(got, want) {
		t.Errorf("one device: device nodes %v, want %v", got, want)
	}
}

func TestListPhantomDeviceVariant(t *testing.T) {
	h, _ := start(t, "--break=list-phantom-device")
	stream, err := h.client.ListAndWatch(testContext(t), &pluginapi.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"GPU-a": "Healthy", "GPU-b": "Healthy", "GPU-c": "Healthy", phantomID: "Healthy"}
	if got := health(t, stream); !reflect.DeepEqual(got, want) {
		t.Errorf("list-phantom-device lists %v, want %v (every GPU and one ID more)", got, want)
	}
}

func TestGetPreferredAllocation(t *testing.T) {
	h, _ := start(t)
	all := []string{"GPU-a", "GPU-b", "GPU-c"}
	for _, tc := range []struct {
		name                string
		available, mustHave []string
		size                int32
		want                []string
	}{
		{"node with most devices first", all, nil, 2, []string{"GPU-b", "GPU-c"}},
		{"lowest index first", all, nil, 1, []string{"GPU-b"}},
		{"spills to the next node", all, nil, 3, []string{"GPU-b", "GPU-c", "GPU-a"}},
		{"must include kept first", all, []string{"GPU-a"}, 2, []string{"GPU-a", "GPU-b"}},
		{"must include not repeated", all, []string{"GPU-c"}, 2, []string{"GPU-c", "GPU-b"}},
		{"only available devices", []string{"GPU-a", "GPU-c"}, nil, 1, []string{"GPU-a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := h.client.GetPreferredAllocation(testContext(t), &pluginapi.PreferredAllocationRequest{
				ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{
					{AvailableDeviceIDs: tc.available, MustIncludeDeviceIDs: tc.mustHave, AllocationSize: tc.size},
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.ContainerResponses[0].DeviceIDs; !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestOversizedPreferenceVariant(t *testing.T) {
	h, _ := start(t, "--break=oversized-preference")
	resp, err := h.client.GetPreferredAllocation(testContext(t), &pluginapi.PreferredAllocationRequest{
		ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{
			{AvailableDeviceIDs: []string{"GPU-a", "GPU-b", "GPU-c"}, AllocationSize: 2},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := resp.ContainerResponses[0].DeviceIDs, []string{"GPU-b", "GPU-c", "GPU-a"}; !slices.Equal(got, want) {
		t.Errorf("oversized-preference prefers %v for 2 devices, want %v", got, want)
	}
}

// restartKubelet does what a restarting kubelet does: it stops, removes the plugin sockets and
// then serves kubelet.sock anew. Stopping gracefully lets the first Register call complete,
// whose request start saw.
func restartKubelet(t *testing.T, h *harness) {
	t.Helper()
	h.kubeletServer.GracefulStop()
	if err := os.Remove(filepath.Join(h.pluginDir, socketName)); err != nil {
		t.Fatal(err)
	}
	h.kubeletServer = h.kubelet.Serve(t, h.pluginDir)
}

func TestReregistersAfterKubeletRestart(t *testing.T) {
	h, _ := start(t)
	restartKubelet(t, h)
	if req := h.kubelet.Registered(t, timeout); req.Endpoint != socketName {
		t.Errorf("re-registered endpoint %q", req.Endpoint)
	}
	// The plugin serves again on a new socket; the harness's client reconnects to it.
	stream, err := h.client.ListAndWatch(testContext(t), &pluginapi.Empty{}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatal(err)
	}
	if got := health(t, stream); len(got) != len(fixture) {
		t.Errorf("after re-registering the plugin lists %v", got)
	}
}

func TestNoReregisterVariant(t *testing.T) {
	h, _ := start(t, "--break=no-reregister")
	restartKubelet(t, h)
	select {
	case req := <-h.kubelet.Requests:
		t.Errorf("no-reregister registered again: %v", req)
	case <-time.After(300 * time.Millisecond): // 30 of the plugin's watch periods
	}
}

func TestStaleSocketVariant(t *testing.T) {
	h, _ := start(t, "--break=stale-socket")
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(h.pluginDir, socketName)); err != nil {
		t.Fatalf("stale-socket removed its socket at exit: %v", err)
	}
	// Its next instance on the node finds the socket there and cannot serve.
	next := newPlugin(t, "--break=stale-socket")
	next.pluginDir = h.pluginDir
	if err := next.run(testContext(t)); err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("stale-socket started where its socket was left: %v, want address already in use", err)
	}
}

func TestRegistrationFailure(t *testing.T) {
	p := newPlugin(t) // no kubelet
	err := p.run(testContext(t))
	if err == nil || !strings.Contains(err.Error(), "register") {
		t.Fatalf("run without kubelet: %v, want a registration error", err)
	}
	if entries, _ := os.ReadDir(p.pluginDir); len(entries) != 0 {
		t.Errorf("plugin dir holds %v after the failure", entries)
	}
}
