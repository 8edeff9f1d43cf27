package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"dralab.dev/drivers_under_test/deviceplugin"
	"dralab.dev/drivers_under_test/deviceplugin/fakekubelet"
)

const (
	timeout  = 3 * time.Second
	resource = "vendor.example/gpu"
	self     = "proxy.sock"
)

// fakePlugin answers every call from fixed answers, as a vendor's plugin might.
type fakePlugin struct {
	pluginapi.UnimplementedDevicePluginServer
	options *pluginapi.DevicePluginOptions
	devices []*pluginapi.Device
}

func (f *fakePlugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return f.options, nil
}

func (f *fakePlugin) ListAndWatch(_ *pluginapi.Empty, stream grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: f.devices}); err != nil {
		return err
	}
	<-stream.Context().Done()
	return nil
}

func (f *fakePlugin) GetPreferredAllocation(_ context.Context, req *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	ids := req.ContainerRequests[0].AvailableDeviceIDs[:req.ContainerRequests[0].AllocationSize]
	return &pluginapi.PreferredAllocationResponse{ContainerResponses: []*pluginapi.ContainerPreferredAllocationResponse{{DeviceIDs: ids}}}, nil
}

func (f *fakePlugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	return &pluginapi.AllocateResponse{ContainerResponses: []*pluginapi.ContainerAllocateResponse{{
		Envs: map[string]string{"VENDOR_DEVICES": strings.Join(req.ContainerRequests[0].DevicesIds, ",")}}}}, nil
}

func gpus(health string, ids ...string) []*pluginapi.Device {
	out := make([]*pluginapi.Device, len(ids))
	for i, id := range ids {
		out[i] = &pluginapi.Device{ID: id, Health: health}
	}
	return out
}

func serve(t *testing.T, dir, endpoint string, p *fakePlugin) {
	t.Helper()
	stop, err := deviceplugin.Serve(dir, endpoint, p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
}

// staleSocket is what a killed plugin leaves behind: a socket nobody listens on.
func staleSocket(t *testing.T, dir, name string) {
	t.Helper()
	lis, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, name), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	lis.SetUnlinkOnClose(false)
	lis.Close()
}

// lockedBuffer is the proxy's stdout, read while the proxy writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) records(t *testing.T) []record {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []record
	for _, line := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		var r record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %q is not a record: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// lab is a device plugin directory with a kubelet, the resource's plugin (3 healthy devices, 1
// unhealthy), another plugin, a stale socket and the kubelet's checkpoint, which is no socket.
func lab(t *testing.T, options *pluginapi.DevicePluginOptions) (dir string, kubelet *fakekubelet.Kubelet) {
	t.Helper()
	dir = t.TempDir()
	kubelet = fakekubelet.New()
	kubelet.Serve(t, dir)
	serve(t, dir, "vendor.sock", &fakePlugin{options: options,
		devices: append(gpus(pluginapi.Healthy, "gpu-2", "gpu-0", "gpu-1"), gpus(pluginapi.Unhealthy, "gpu-3")...)})
	serve(t, dir, "other.sock", &fakePlugin{options: &pluginapi.DevicePluginOptions{}, devices: gpus(pluginapi.Healthy, "nic-0")})
	staleSocket(t, dir, "dead.sock")
	if err := os.WriteFile(filepath.Join(dir, "kubelet_internal_checkpoint"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, kubelet
}

func startProxy(t *testing.T, dir string, devices []string) (out *lockedBuffer, done <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out = &lockedBuffer{}
	errs, finished := make(chan error, 1), make(chan struct{})
	go func() {
		errs <- runProxy(ctx, out, dir, self, resource, devices)
		close(finished)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-finished:
		case <-time.After(timeout):
			t.Error("the proxy did not stop")
		}
	})
	return out, errs
}

func TestProxyRegistersInThePluginsPlaceAndRecordsEveryCall(t *testing.T) {
	options := &pluginapi.DevicePluginOptions{GetPreferredAllocationAvailable: true, PreStartRequired: true}
	dir, kubelet := lab(t, options)
	out, _ := startProxy(t, dir, []string{"gpu-1", "gpu-0", "gpu-2"})

	reg := kubelet.Registered(t, timeout)
	if reg.ResourceName != resource || reg.Endpoint != self || !proto.Equal(reg.Options, options) {
		t.Fatalf("the proxy registered %v, want %s at %s with the plugin's options %v", reg, resource, self, options)
	}
	conn, err := dial(filepath.Join(dir, self))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	api := pluginapi.NewDevicePluginClient(conn)
	stream, err := api.ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	if first, err := stream.Recv(); err != nil || len(first.Devices) != 4 {
		t.Fatalf("the proxy's ListAndWatch gave %v, %v; want the plugin's 4 devices", first, err)
	}
	preferred, err := api.GetPreferredAllocation(ctx, &pluginapi.PreferredAllocationRequest{
		ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{
			AvailableDeviceIDs: []string{"gpu-1", "gpu-2", "gpu-0"}, AllocationSize: 2}}})
	if err != nil || strings.Join(preferred.ContainerResponses[0].DeviceIDs, ",") != "gpu-1,gpu-2" {
		t.Fatalf("the proxy's GetPreferredAllocation gave %v, %v; want the plugin's gpu-1,gpu-2", preferred, err)
	}
	allocated, err := api.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{
		DevicesIds: []string{"gpu-1", "gpu-2"}}}})
	if err != nil || allocated.ContainerResponses[0].Envs["VENDOR_DEVICES"] != "gpu-1,gpu-2" {
		t.Fatalf("the proxy's Allocate gave %v, %v; want the plugin's answer", allocated, err)
	}
	// The fake plugin leaves PreStartContainer unimplemented: its error is forwarded as it is.
	if _, err := api.PreStartContainer(ctx, &pluginapi.PreStartContainerRequest{DevicesIds: []string{"gpu-1"}}); err == nil ||
		!strings.Contains(err.Error(), "not implemented") {
		t.Fatalf("the proxy's PreStartContainer: want the plugin's Unimplemented, got %v", err)
	}

	// Register is recorded when the kubelet's answer reaches the proxy, which may come after any
	// of the calls the kubelet makes meanwhile: it is awaited, then the others are in call order.
	records := out.records(t)
	for deadline := time.Now().Add(timeout); !slices.ContainsFunc(records, isRegister) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		records = out.records(t)
	}
	if n := len(slices.DeleteFunc(slices.Clone(records), func(r record) bool { return !isRegister(r) })); n != 1 {
		t.Fatalf("%d Register records, want 1: %+v", n, records)
	}
	records = slices.DeleteFunc(records, isRegister)
	methods := []string{}
	for _, r := range records {
		methods = append(methods, r.Method)
	}
	want := "Discover ListAndWatch GetPreferredAllocation Allocate PreStartContainer"
	if strings.Join(methods, " ") != want {
		t.Fatalf("records %v, want %s (and Register)", methods, want)
	}
	var found struct {
		Endpoint string
		Options  map[string]bool
		Sockets  []candidate
	}
	if err := json.Unmarshal(records[0].Response, &found); err != nil || found.Endpoint != "vendor.sock" ||
		!found.Options["pre_start_required"] || !found.Options["get_preferred_allocation_available"] || len(found.Sockets) != 3 {
		t.Errorf("Discover answered %s (%v); want vendor.sock, its options and the 3 plugin sockets", records[0].Response, err)
	}
	for i, frag := range map[int]string{
		2: `"available_deviceIDs":["gpu-1","gpu-2","gpu-0"]`, 3: `"devices_ids":["gpu-1","gpu-2"]`,
	} {
		if !strings.Contains(string(records[i].Request), frag) {
			t.Errorf("%s request %s lacks %s", records[i].Method, records[i].Request, frag)
		}
	}
	if !strings.Contains(string(records[2].Response), `"deviceIDs":["gpu-1","gpu-2"]`) ||
		!strings.Contains(string(records[3].Response), `"VENDOR_DEVICES":"gpu-1,gpu-2"`) {
		t.Errorf("answers not recorded: %s, %s", records[2].Response, records[3].Response)
	}
	if records[4].Error == "" || string(records[4].Response) != "null" {
		t.Errorf("PreStartContainer's error not recorded: %+v", records[4])
	}
}

func isRegister(r record) bool { return r.Method == registerMethod }

func TestProxyWithoutThePluginNamesEverySocketItSaw(t *testing.T) {
	dir, _ := lab(t, &pluginapi.DevicePluginOptions{})
	out, done := startProxy(t, dir, []string{"gpu-0", "gpu-1"}) // gpu-2 is healthy too: not this plugin
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "0 of the 3 plugin sockets") {
			t.Errorf("want an error naming 0 of 3 sockets, got %v", err)
		}
	case <-time.After(timeout):
		t.Fatal("the proxy kept running without a plugin to forward to")
	}
	records := out.records(t)
	if len(records) != 1 || records[0].Method != discoverMethod || records[0].Error == "" {
		t.Fatalf("want one failed Discover record, got %+v", records)
	}
	for _, frag := range []string{`"endpoint":"vendor.sock","healthy":["gpu-0","gpu-1","gpu-2"]`,
		`"endpoint":"other.sock","healthy":["nic-0"]`, `"endpoint":"dead.sock","error":`} {
		if !strings.Contains(string(records[0].Response), frag) {
			t.Errorf("Discover's answer %s lacks %s", records[0].Response, frag)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, self)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the proxy served without a plugin: %v", err)
	}
}
