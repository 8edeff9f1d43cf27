package main

import (
	"context"
	"fmt"
	"time"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// nriPlugin receives the runtime's pod sandbox events: the pod's network namespace exists
// only from RunPodSandbox on, after the kubelet prepared the claims.
type nriPlugin struct {
	driver *vfDriver
	ctx    context.Context
}

// podNetns is the pod's network namespace: through its sandbox process (the driver runs with
// hostPID), else the runtime's bind mount.
func podNetns(pod *api.PodSandbox) string {
	if pid := pod.GetPid(); pid != 0 {
		return fmt.Sprintf("/proc/%d/ns/net", pid)
	}
	for _, ns := range pod.GetLinux().GetNamespaces() {
		if ns.GetType() == "network" {
			return ns.GetPath()
		}
	}
	return ""
}

func (p *nriPlugin) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	err := p.driver.attach(p.ctx, types.UID(pod.GetUid()), podNetns(pod))
	if err != nil {
		klog.FromContext(p.ctx).Error(err, "RunPodSandbox", "pod", klog.KRef(pod.GetNamespace(), pod.GetName()))
	}
	return err
}

func (p *nriPlugin) StopPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	err := p.driver.detachPod(p.ctx, types.UID(pod.GetUid()), podNetns(pod))
	if err != nil {
		klog.FromContext(p.ctx).Error(err, "StopPodSandbox", "pod", klog.KRef(pod.GetNamespace(), pod.GetName()))
	}
	return err
}

// runNRI keeps the plugin connected to the runtime's NRI socket, reconnecting after the
// runtime restarts, until ctx ends.
func runNRI(ctx context.Context, d *vfDriver, socket string) {
	logger := klog.FromContext(ctx)
	for ctx.Err() == nil {
		s, err := stub.New(&nriPlugin{driver: d, ctx: ctx},
			stub.WithPluginName(d.opts.DriverName), stub.WithPluginIdx("10"), stub.WithSocketPath(socket),
			stub.WithOnClose(func() { logger.Info("NRI connection closed") }))
		if err == nil {
			logger.Info("Connecting to NRI", "socket", socket)
			err = s.Run(ctx)
		}
		if ctx.Err() == nil {
			logger.Error(err, "NRI plugin stopped; reconnecting", "socket", socket)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}
