// Command dp-probe is the device plugin the device plugin suite controls precisely: it
// registers with kubelet under any API version and resource name, prints kubelet's answer as
// one JSON line on stdout, and then serves a few healthy devices until SIGTERM, logging each
// call kubelet makes (to tell which of two plugins for one resource kubelet talks to).
//
// With --proxy-resource it is a recording proxy instead: it finds the plugin serving that
// resource, registers itself in the plugin's place and forwards every call of the kubelet to it,
// printing each request and answer as one JSON line (proxy.go), so the suite sees what any
// vendor's plugin and the kubelet said to each other.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"

	"google.golang.org/grpc"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"dralab.dev/drivers_under_test/deviceplugin"
)

// answer is what the suite reads from the probe's log.
type answer struct {
	Resource   string `json:"resource"`
	Version    string `json:"version"`
	Endpoint   string `json:"endpoint"`
	Registered bool   `json:"registered"`
	Answer     string `json:"answer"` // kubelet's error, "" when it accepted
}

type probe struct {
	pluginapi.UnimplementedDevicePluginServer
	endpoint string
	devices  int
}

func (p *probe) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

func (p *probe) ListAndWatch(_ *pluginapi.Empty, stream grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	devices := make([]*pluginapi.Device, p.devices)
	for i := range devices {
		devices[i] = &pluginapi.Device{ID: fmt.Sprintf("probe-%d", i), Health: pluginapi.Healthy}
	}
	klog.InfoS("ListAndWatch", "endpoint", p.endpoint, "devices", p.devices)
	if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: devices}); err != nil {
		return err
	}
	<-stream.Context().Done()
	return nil
}

func (p *probe) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	klog.InfoS("Allocate", "endpoint", p.endpoint)
	resp := &pluginapi.AllocateResponse{}
	for range req.ContainerRequests {
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Envs: map[string]string{"DRALAB_DP_PROBE_ENDPOINT": p.endpoint}})
	}
	return resp, nil
}

func main() {
	klog.InitFlags(nil)
	dir := flag.String("device-plugin-dir", "/var/lib/kubelet/device-plugins", "kubelet's device plugin directory")
	resource := flag.String("resource-name", "dralab.dev/probe", "resource name to register")
	version := flag.String("api-version", pluginapi.Version, "API version to register with")
	endpoint := flag.String("endpoint", "", "socket name in the directory (default: from the resource name and the host name, the pod's)")
	devices := flag.Int("devices", 2, "healthy devices to list once registered")
	proxyResource := flag.String("proxy-resource", "", "proxy the plugin of this resource instead of serving devices")
	proxyDevices := flag.String("proxy-devices", "", "with --proxy-resource: the kubelet's healthy devices of the resource, comma-separated, to tell its plugin's socket")
	flag.Parse()
	if *proxyResource != "" {
		*resource = *proxyResource
	}
	if *endpoint == "" {
		// Not the process ID: in a container that is 1 for every probe.
		host, _ := os.Hostname()
		*endpoint = fmt.Sprintf("dp-probe-%s-%s.sock", regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(*resource, "-"), host)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer cancel()
	if *proxyResource != "" {
		healthy := strings.FieldsFunc(*proxyDevices, func(r rune) bool { return r == ',' })
		if len(healthy) == 0 {
			klog.ErrorS(nil, "--proxy-resource needs --proxy-devices: the kubelet's healthy devices of the resource")
			klog.FlushAndExit(klog.ExitFlushTimeout, 2)
		}
		if err := runProxy(ctx, os.Stdout, *dir, *endpoint, *resource, healthy); err != nil {
			klog.ErrorS(err, "Proxying", "resource", *resource)
			klog.FlushAndExit(klog.ExitFlushTimeout, 1)
		}
		return
	}

	p := &probe{endpoint: *endpoint, devices: *devices}
	stop, err := deviceplugin.Serve(*dir, *endpoint, p)
	if err != nil {
		klog.ErrorS(err, "Serving")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	defer stop()
	out := answer{Resource: *resource, Version: *version, Endpoint: *endpoint}
	if _, err := deviceplugin.Register(ctx, *dir, &pluginapi.RegisterRequest{
		Version: *version, Endpoint: *endpoint, ResourceName: *resource, Options: &pluginapi.DevicePluginOptions{},
	}); err != nil {
		out.Answer = err.Error()
	} else {
		out.Registered = true
	}
	line, _ := json.Marshal(out)
	fmt.Println(string(line))
	<-ctx.Done() // keep serving: a registered resource stays on the node while the probe runs
}
