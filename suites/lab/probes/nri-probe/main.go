// Command nri-probe is an NRI plugin on the containerd/nri stub that records the pod
// sandbox events it is sent, one JSON line each, so tests can see that a node's NRI socket
// reaches plugins. It also injects the CDI device named in a pod's CDIDeviceAnnotation into
// the pod's containers: kubelet does not pass pod annotations to the runtime, so this is how a
// test asks the runtime to apply a CDI spec from the node's CDI dirs without a driver.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
)

// CDIDeviceAnnotation names a fully qualified CDI device (vendor/class=name) to inject.
const CDIDeviceAnnotation = "nri-probe.dralab.dev/cdi-device"

type probe struct {
	mu  sync.Mutex
	out *json.Encoder
}

func (p *probe) record(event string, pod *api.PodSandbox) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.out.Encode(map[string]string{
		"event": event, "namespace": pod.GetNamespace(), "name": pod.GetName(), "uid": pod.GetUid(),
	})
}

func (p *probe) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.record("RunPodSandbox", pod)
	return nil
}

func (p *probe) StopPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.record("StopPodSandbox", pod)
	return nil
}

func (p *probe) CreateContainer(_ context.Context, pod *api.PodSandbox, _ *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	device, ok := pod.GetAnnotations()[CDIDeviceAnnotation]
	if !ok {
		return nil, nil, nil
	}
	p.record("CreateContainer", pod)
	adjust := &api.ContainerAdjustment{}
	adjust.AddCDIDevice(&api.CDIDevice{Name: device})
	return adjust, nil, nil
}

func main() {
	socket := flag.String("socket", api.DefaultSocketPath, "NRI socket of the runtime")
	events := flag.String("events", "", "file that receives one JSON line per event (default stdout)")
	flag.Parse()

	out := os.Stdout
	if *events != "" {
		f, err := os.OpenFile(*events, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "nri-probe:", err)
			os.Exit(1)
		}
		defer f.Close()
		out = f
	}
	s, err := stub.New(&probe{out: json.NewEncoder(out)},
		stub.WithPluginName("dralab-probe"), stub.WithPluginIdx("50"), stub.WithSocketPath(*socket))
	if err != nil {
		fmt.Fprintln(os.Stderr, "nri-probe:", err)
		os.Exit(1)
	}
	if err := s.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "nri-probe:", err)
		os.Exit(1)
	}
}
