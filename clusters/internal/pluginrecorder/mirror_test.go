package pluginrecorder

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// plugin is a DRA kubelet plugin as the kubelet sees one: a registration socket naming a
// service socket.
type plugin struct {
	registerapi.UnimplementedRegistrationServer
	drapb.UnimplementedDRAPluginServer
	endpoint  string
	cdiDir    string // where it writes a claim's CDI spec before answering its prepare
	servers   []*grpc.Server
	listeners []net.Listener
	notified  chan *registerapi.RegistrationStatus
	onNotify  func() // within the call, before its answer
}

func (p *plugin) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{Type: registerapi.DRAPlugin, Name: "gpu.example.com", Endpoint: p.endpoint,
		SupportedVersions: []string{drapb.DRAPluginService}}, nil
}

func (p *plugin) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	p.notified <- s
	if p.onNotify != nil {
		p.onNotify()
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

func (p *plugin) NodePrepareResources(_ context.Context, req *drapb.NodePrepareResourcesRequest) (*drapb.NodePrepareResourcesResponse, error) {
	resp := &drapb.NodePrepareResourcesResponse{Claims: map[string]*drapb.NodePrepareResourceResponse{}}
	for _, c := range req.Claims {
		if c.Name == "broken" {
			return nil, status.Error(codes.Internal, "cannot prepare broken")
		}
		spec := `{"cdiVersion": "0.5.0", "kind": "example.com/gpu", "devices": [{"name": "` + c.Uid + `"}]}`
		if err := os.WriteFile(filepath.Join(p.cdiDir, "example.com-gpu_"+c.Uid+".json"), []byte(spec), 0o644); err != nil {
			return nil, err
		}
		resp.Claims[c.Uid] = &drapb.NodePrepareResourceResponse{Devices: []*drapb.Device{
			{PoolName: "node-1", DeviceName: "gpu-0", CdiDeviceIds: []string{"example.com/gpu=" + c.Uid}}}}
	}
	return resp, nil
}

func startPlugin(t *testing.T, registry, dir, name string) *plugin {
	t.Helper()
	p := &plugin{endpoint: filepath.Join(dir, name+"-dra.sock"), cdiDir: dir, notified: make(chan *registerapi.RegistrationStatus, 1)}
	for socket, register := range map[string]func(*grpc.Server){
		filepath.Join(registry, name+"-reg.sock"): func(s *grpc.Server) { registerapi.RegisterRegistrationServer(s, p) },
		p.endpoint: func(s *grpc.Server) { drapb.RegisterDRAPluginServer(s, p) },
	} {
		l, err := net.Listen("unix", socket)
		if err != nil {
			t.Fatal(err)
		}
		s := grpc.NewServer()
		register(s)
		p.servers = append(p.servers, s)
		p.listeners = append(p.listeners, l)
		go func() { _ = s.Serve(l) }()
	}
	return p
}

func (p *plugin) stop() {
	for _, s := range p.servers {
		s.Stop()
	}
	for _, l := range p.listeners { // Stop alone misses one its Serve has not taken yet: the socket would stay
		_ = l.Close()
	}
}

type lines struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *lines) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(b)
}

func (l *lines) records(t *testing.T) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(l.buf.String()))
	for sc.Scan() {
		var r map[string]any
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("not a JSON line: %q", sc.Text())
		}
		out = append(out, r)
	}
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func connect(t *testing.T, socket string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func TestTheKubeletTalksToThePluginThroughTheRecorder(t *testing.T) {
	root := shortTempDir(t)
	m, out := newMirror(root)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	waitFor(t, "the registries", func() bool { return exists(m.DriverRegistry) })
	pluginDir := filepath.Join(root, "plugins")
	if err := os.MkdirAll(pluginDir, 0o750); err != nil {
		t.Fatal(err)
	}
	p := startPlugin(t, m.DriverRegistry, pluginDir, "gpu.example.com")
	standIn := filepath.Join(m.KubeletRegistry, "gpu.example.com-reg.sock")
	waitFor(t, "the stand-in registration socket", func() bool { return exists(standIn) })

	// The kubelet's side: registration, then the service it names.
	reg := registerapi.NewRegistrationClient(connect(t, standIn))
	info, err := reg.GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "gpu.example.com" || !strings.HasPrefix(info.Endpoint, m.ServiceDir) {
		t.Fatalf("registration should name the plugin and the recorder's endpoint: %v", info)
	}
	if _, err := reg.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
		t.Fatal(err)
	}
	if s := <-p.notified; !s.PluginRegistered {
		t.Fatalf("the plugin should hear it is registered: %v", s)
	}
	dra := drapb.NewDRAPluginClient(connect(t, info.Endpoint))
	resp, err := dra.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{{Namespace: "ns", Uid: "uid-1", Name: "a"}}})
	if err != nil || resp.Claims["uid-1"].Devices[0].DeviceName != "gpu-0" {
		t.Fatalf("the plugin's answer should reach the kubelet: %v %v", resp, err)
	}
	_, err = dra.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{{Namespace: "ns", Uid: "uid-2", Name: "broken"}}})
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "cannot prepare broken") {
		t.Fatalf("the plugin's error should reach the kubelet as it was: %v", err)
	}

	// The plugin goes: so does its stand-in, and the kubelet would unregister it.
	p.stop() // closing its listeners removes its sockets
	waitFor(t, "the stand-in to go", func() bool { return !exists(standIn) && !exists(info.Endpoint) })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	var methods []string
	for _, r := range out.records(t) {
		if r["node"] != "node-1" || r["socket"] != "gpu.example.com-reg.sock" {
			t.Fatalf("every record names the node and the plugin's socket: %v", r)
		}
		methods = append(methods, r["method"].(string))
		switch r["method"] {
		case registerapi.Registration_GetInfo_FullMethodName:
			if r["response"].(map[string]any)["endpoint"] != p.endpoint {
				t.Fatalf("the record keeps the plugin's own answer: %v", r)
			}
		case drapb.DRAPlugin_NodePrepareResources_FullMethodName:
			claims := r["request"].(map[string]any)["claims"].([]any)
			uid := claims[0].(map[string]any)["uid"]
			if uid == "uid-1" && !strings.Contains(mustJSON(t, r["response"]), `"device_name":"gpu-0"`) {
				t.Fatalf("a prepare's record has the devices answered: %v", r)
			}
			spec := filepath.Join(pluginDir, "example.com-gpu_uid-1.json")
			want := map[string]any{"kind": "example.com/gpu", "devices": []any{"uid-1"}, "claims": []any{"uid-1"}}
			if uid == "uid-1" && mustJSON(t, r["cdi"].(map[string]any)["specs"].(map[string]any)[spec]) != mustJSON(t, want) {
				t.Fatalf("a prepare's record has the node's CDI specs as it returned, with the claims they name: %v", r["cdi"])
			}
			if uid == "uid-2" && !strings.Contains(r["error"].(string), "cannot prepare broken") {
				t.Fatalf("a failed prepare's record has the error: %v", r)
			}
		}
	}
	want := []string{"socket created", registerapi.Registration_GetInfo_FullMethodName,
		registerapi.Registration_NotifyRegistrationStatus_FullMethodName, drapb.DRAPlugin_NodePrepareResources_FullMethodName,
		drapb.DRAPlugin_NodePrepareResources_FullMethodName, "socket removed"}
	if strings.Join(methods, " ") != strings.Join(want, " ") {
		t.Fatalf("records in the order of the conversation:\n got %v\nwant %v", methods, want)
	}
}

func newMirror(root string) (*Mirror, *lines) {
	out := &lines{}
	return &Mirror{DriverRegistry: filepath.Join(root, "driver-registry"), KubeletRegistry: filepath.Join(root, "plugins_registry"),
		ServiceDir: filepath.Join(root, "recorder"), CDIDirs: []string{filepath.Join(root, "plugins"), filepath.Join(root, "no-such-dir")},
		Recorder: NewRecorder(out, "node-1")}, out
}

// shortTempDir: t.TempDir's paths are longer than a unix socket's 108 bytes allow.
func shortTempDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "rec")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// runningMirror runs a mirror under a fresh root until the test ends, its registries made.
func runningMirror(t *testing.T) (*Mirror, string) {
	root := shortTempDir(t)
	m, _ := newMirror(root)
	go func() { _ = m.Run(t.Context()) }()
	waitFor(t, "the registries", func() bool { return exists(m.KubeletRegistry) })
	return m, root
}

func TestARestartedPluginGetsANewStandIn(t *testing.T) {
	m, root := runningMirror(t)
	ctx := t.Context()
	standIn := filepath.Join(m.KubeletRegistry, "gpu.example.com-reg.sock")
	inode := func() identity {
		info, err := os.Stat(standIn)
		if err != nil {
			return identity{}
		}
		return identify(info)
	}
	first := startPlugin(t, m.DriverRegistry, root, "gpu.example.com")
	waitFor(t, "the stand-in", func() bool { return inode() != (identity{}) })
	before := inode()
	first.stop()
	// Restarted at once, under the same name: the stand-in must still be a new one.
	second := startPlugin(t, m.DriverRegistry, root, "gpu.example.com")
	defer second.stop()
	waitFor(t, "a new stand-in", func() bool { return inode() != (identity{}) && inode() != before })
	info, err := registerapi.NewRegistrationClient(connect(t, standIn)).GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil || info.Name != "gpu.example.com" {
		t.Fatalf("the new stand-in should answer for the restarted plugin: %v %v", info, err)
	}
}

// A plugin that moves its registration socket away (to a hidden name the kubelet's watcher
// ignores) once registered, within NotifyRegistrationStatus, stays registered without the
// recorder: the kubelet's registry must see a rename too, not a removal, which would unregister
// it; the call must still be answered, and the plugin's services stay reachable.
func TestAMovedSocketIsMovedNotRemoved(t *testing.T) {
	m, root := runningMirror(t)
	ctx := t.Context()
	standIn := filepath.Join(m.KubeletRegistry, "gpu.example.com-reg.sock")
	p := startPlugin(t, m.DriverRegistry, root, "gpu.example.com")
	defer p.stop()
	waitFor(t, "the stand-in", func() bool { return exists(standIn) })
	registration := registerapi.NewRegistrationClient(connect(t, standIn))
	info, err := registration.GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	kubelet, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer kubelet.Close()
	if err := kubelet.Add(m.KubeletRegistry); err != nil {
		t.Fatal(err)
	}
	p.onNotify = func() {
		hidden := filepath.Join(m.DriverRegistry, ".gpu.example.com-reg.sock")
		if err := os.Rename(filepath.Join(m.DriverRegistry, "gpu.example.com-reg.sock"), hidden); err != nil {
			t.Error(err)
		}
		if err := os.Remove(hidden); err != nil {
			t.Error(err)
		}
		waitFor(t, "the stand-in moved away", func() bool { return !exists(standIn) })
	}
	if _, err := registration.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
		t.Fatalf("the kubelet's NotifyRegistrationStatus should be answered: %v", err)
	}
	for deadline := time.After(200 * time.Millisecond); ; {
		select {
		case ev := <-kubelet.Events:
			if ev.Name == standIn && !ev.Has(fsnotify.Rename) {
				t.Fatalf("the kubelet's registry saw %v, not a rename", ev)
			}
			continue
		case <-deadline:
		}
		break
	}
	resp, err := drapb.NewDRAPluginClient(connect(t, info.Endpoint)).NodePrepareResources(ctx,
		&drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{{Uid: "uid-1", Namespace: "ns", Name: "c"}}})
	if err != nil || len(resp.Claims) != 1 {
		t.Fatalf("the service stand-in should still forward to the plugin: %v %v", resp, err)
	}
}

func TestAServiceStandInLeftByAKilledRecorderIsRemoved(t *testing.T) {
	root := shortTempDir(t)
	m, _ := newMirror(root)
	if err := os.MkdirAll(m.ServiceDir, 0o750); err != nil {
		t.Fatal(err)
	}
	// As a recorder killed by a reboot leaves it: a socket nothing listens on any more.
	left := filepath.Join(m.ServiceDir, "gpu.example.com-reg-4.sock")
	l, err := net.Listen("unix", left)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	_ = l.Close()
	// Not the recorder's: a file someone else keeps there stays.
	other := filepath.Join(m.ServiceDir, "notes.txt")
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() { _ = m.Run(t.Context()) }()
	waitFor(t, "the registries", func() bool { return exists(m.KubeletRegistry) })
	waitFor(t, "the left socket gone", func() bool { return !exists(left) })
	if !exists(other) {
		t.Fatalf("%s is not a stand-in's socket and should have stayed", other)
	}
}
