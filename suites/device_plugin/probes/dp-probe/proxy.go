package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"dralab.dev/drivers_under_test/deviceplugin"
)

// Methods of the records that are the proxy's own steps, not forwarded calls.
const (
	discoverMethod = "Discover"
	registerMethod = "Register"
)

// dialTimeout bounds each look at a candidate socket: a plugin answers in milliseconds, a stale
// socket (nobody listening) fails at once, a hung one must not stall the search.
const dialTimeout = 5 * time.Second

// record is one line on stdout: a call the proxy forwarded (or one of its own steps) with what
// was asked and answered. Requests and answers are protojson with the proto's field names.
type record struct {
	Method   string          `json:"method"`
	Request  json.RawMessage `json:"request"`
	Response json.RawMessage `json:"response"`
	Error    string          `json:"error"`
}

// recorder writes records as whole lines, one at a time: calls arrive concurrently.
type recorder struct {
	mu  sync.Mutex
	out io.Writer
}

func (r *recorder) record(method string, req, resp any, err error) {
	line := record{Method: method, Request: marshal(req), Response: marshal(resp)}
	if err != nil {
		line.Error = err.Error()
	}
	b, _ := json.Marshal(line) // RawMessages are valid JSON and the rest are strings
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintln(r.out, string(b))
}

var protoNames = protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}

func marshal(v any) json.RawMessage {
	if m, ok := v.(proto.Message); ok {
		if !m.ProtoReflect().IsValid() { // a typed nil: the call failed before an answer
			return json.RawMessage("null")
		}
		if b, err := protoNames.Marshal(m); err == nil {
			return b
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

// candidate is what one socket in the device plugin directory answered.
type candidate struct {
	Endpoint string                         `json:"endpoint"`
	Options  *pluginapi.DevicePluginOptions `json:"-"`
	Healthy  []string                       `json:"healthy,omitempty"` // sorted
	Error    string                         `json:"error,omitempty"`
}

// discovery is the Discover record's answer: the socket chosen and every socket looked at.
type discovery struct {
	Endpoint string          `json:"endpoint"`
	Options  json.RawMessage `json:"options"`
	Sockets  []candidate     `json:"sockets"`
}

// discover finds the plugin serving `resource` among the sockets in dir: the one whose first
// ListAndWatch answer lists exactly `devices` healthy (the kubelet's healthy devices of the
// resource). kubelet.sock and the proxy's own socket are not plugins.
func discover(ctx context.Context, dir, self string, devices []string) (candidate, []candidate, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return candidate{}, nil, err
	}
	want := slices.Sorted(slices.Values(devices))
	var seen, matches []candidate
	for _, e := range entries {
		if e.Type()&fs.ModeSocket == 0 || e.Name() == deviceplugin.KubeletSocket || e.Name() == self {
			continue
		}
		c := inspect(ctx, filepath.Join(dir, e.Name()))
		seen = append(seen, c)
		if c.Error == "" && slices.Equal(c.Healthy, want) {
			matches = append(matches, c)
		}
	}
	if len(matches) != 1 {
		return candidate{}, seen, fmt.Errorf("%d of the %d plugin sockets in %s list exactly the healthy devices %v",
			len(matches), len(seen), dir, want)
	}
	return matches[0], seen, nil
}

// inspect asks the plugin at sock for its options and its first list of devices.
func inspect(ctx context.Context, sock string) candidate {
	c := candidate{Endpoint: filepath.Base(sock)}
	conn, err := dial(sock)
	if err != nil {
		c.Error = err.Error()
		return c
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	api := pluginapi.NewDevicePluginClient(conn)
	if c.Options, err = api.GetDevicePluginOptions(ctx, &pluginapi.Empty{}); err != nil {
		c.Error = fmt.Sprintf("GetDevicePluginOptions: %v", err)
		return c
	}
	stream, err := api.ListAndWatch(ctx, &pluginapi.Empty{})
	var first *pluginapi.ListAndWatchResponse
	if err == nil {
		first, err = stream.Recv()
	}
	if err != nil {
		c.Error = fmt.Sprintf("ListAndWatch: %v", err)
		return c
	}
	c.Healthy = []string{}
	for _, d := range first.Devices {
		if d.Health == pluginapi.Healthy {
			c.Healthy = append(c.Healthy, d.ID)
		}
	}
	slices.Sort(c.Healthy)
	return c
}

func dial(sock string) (*grpc.ClientConn, error) {
	return grpc.NewClient("unix:"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

// proxy serves the device plugin API by forwarding every call to the real plugin, recording each.
type proxy struct {
	pluginapi.UnimplementedDevicePluginServer
	real pluginapi.DevicePluginClient
	rec  *recorder
}

func forward[Req, Resp proto.Message](ctx context.Context, p *proxy, method string, req Req,
	call func(context.Context, Req, ...grpc.CallOption) (Resp, error)) (Resp, error) {
	resp, err := call(ctx, req)
	// Recorded before the kubelet has the answer, so the record exists once the kubelet acts on it.
	p.rec.record(method, req, resp, err)
	return resp, err
}

func (p *proxy) GetDevicePluginOptions(ctx context.Context, req *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return forward(ctx, p, "GetDevicePluginOptions", req, p.real.GetDevicePluginOptions)
}

func (p *proxy) GetPreferredAllocation(ctx context.Context, req *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	return forward(ctx, p, "GetPreferredAllocation", req, p.real.GetPreferredAllocation)
}

func (p *proxy) Allocate(ctx context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	return forward(ctx, p, "Allocate", req, p.real.Allocate)
}

func (p *proxy) PreStartContainer(ctx context.Context, req *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return forward(ctx, p, "PreStartContainer", req, p.real.PreStartContainer)
}

// ListAndWatch relays the real plugin's stream, one record per list, until either side ends it.
func (p *proxy) ListAndWatch(req *pluginapi.Empty, stream grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	up, err := p.real.ListAndWatch(stream.Context(), req)
	if err != nil {
		p.rec.record("ListAndWatch", req, nil, err)
		return err
	}
	for {
		resp, err := up.Recv()
		if err != nil {
			if stream.Context().Err() == nil { // not the kubelet hanging up
				p.rec.record("ListAndWatch", req, nil, err)
			}
			return err
		}
		p.rec.record("ListAndWatch", req, resp, nil)
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
}

// runProxy finds the plugin of `resource`, serves the proxy on `endpoint` in dir and registers it
// with the kubelet under the same resource name and options, so that the kubelet (which talks to
// a resource's newest registration) calls the proxy; then forwards until ctx ends.
func runProxy(ctx context.Context, out io.Writer, dir, endpoint, resource string, devices []string) error {
	rec := &recorder{out: out}
	found, seen, err := discover(ctx, dir, endpoint, devices)
	rec.record(discoverMethod, map[string]any{"resource_name": resource, "healthy": devices},
		discovery{Endpoint: found.Endpoint, Options: marshal(found.Options), Sockets: seen}, err)
	if err != nil {
		return err
	}
	conn, err := dial(filepath.Join(dir, found.Endpoint))
	if err != nil {
		return err
	}
	defer conn.Close()
	stop, err := deviceplugin.Serve(dir, endpoint, &proxy{real: pluginapi.NewDevicePluginClient(conn), rec: rec})
	if err != nil {
		return err
	}
	defer stop()
	req := &pluginapi.RegisterRequest{Version: pluginapi.Version, Endpoint: endpoint, ResourceName: resource,
		Options: found.Options}
	_, err = deviceplugin.Register(ctx, dir, req)
	rec.record(registerMethod, req, &pluginapi.Empty{}, err)
	if err != nil {
		return err
	}
	<-ctx.Done() // told to stop
	return nil
}
