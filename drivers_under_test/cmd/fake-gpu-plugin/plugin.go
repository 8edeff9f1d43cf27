package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"dralab.dev/drivers_under_test/deviceplugin"
	"dralab.dev/drivers_under_test/internal/sysfs"
	"dralab.dev/drivers_under_test/internal/variant"
)

const (
	socketName   = "dralab-fake-gpu.sock"
	containerDir = "/var/run/dralab/fake-gpu" // where a container sees each GPU's sysfs dir

	neverUnhealthy      = "never-unhealthy"
	missingDevice       = "missing-device"
	wrongDevice         = "wrong-device"
	noReregister        = "no-reregister"
	staleSocket         = "stale-socket"
	oversizedPreference = "oversized-preference"
	allocateOtherDevice = "allocate-other-device"
	listPhantomDevice   = "list-phantom-device"
	omitLastDeviceNode  = "omit-last-device-node"

	// phantomID is the device ID the list-phantom-device variant lists: no GPU has it.
	phantomID = "GPU-ffffffff-ffff-ffff-ffff-ffffffffffff"
)

var variants = map[string]string{
	neverUnhealthy:      "ListAndWatch never reports a device unhealthy (breaks DP-03)",
	missingDevice:       "ListAndWatch leaves out the last GPU (breaks DP-01)",
	wrongDevice:         "Allocate answers for the GPU after each one asked for, device N+1 (breaks DP-04)",
	noReregister:        "never registers again after kubelet restarts (breaks DP-05)",
	staleSocket:         "leaves its socket at exit and cannot listen where one was left, so it never comes back (breaks DP-06)",
	oversizedPreference: "GetPreferredAllocation prefers one device more than the allocation size (breaks DP-07)",
	allocateOtherDevice: "every second container request answered gets the device nodes of the GPU after each one asked for (breaks DP-04)",
	listPhantomDevice:   "ListAndWatch lists one device ID more, which no GPU has (breaks DP-01)",
	omitLastDeviceNode:  "a container request of several devices is answered without the device node of its last GPU, whose env, mount and CDI device it still gets (breaks DP-04)",
}

// plugin serves the device plugin API for the GPUs under sysfsRoot. The GPUs are read from
// sysfs on every call rather than cached, so each answer reflects the hardware as it is.
type plugin struct {
	pluginapi.UnimplementedDevicePluginServer

	sysfsRoot     string
	hostSysfsRoot string // where the node has sysfsRoot, for mount host paths
	hostDevRoot   string // where the node has the GPUs' device nodes, nvidia<index>
	pluginDir     string
	cdiDir        string
	resource      string
	poll          time.Duration // sysfs health poll
	watch         time.Duration // check for a kubelet restart
	variant       *variant.Selected

	answered atomic.Int64 // container requests Allocate answered: the allocate-other-device variant counts them
}

func options() *pluginapi.DevicePluginOptions {
	return &pluginapi.DevicePluginOptions{GetPreferredAllocationAvailable: true, PreStartRequired: true}
}

// run writes the CDI spec, serves the API and registers with kubelet, then re-registers
// whenever kubelet restarts, until ctx ends.
func (p *plugin) run(ctx context.Context) error {
	gpus, err := sysfs.GPUs(p.sysfsRoot)
	if err != nil {
		return err
	}
	klog.InfoS("Starting fake GPU device plugin", "variant", p.variant.Describe(),
		"resource", p.resource, "devices", describe(gpus))

	spec := filepath.Join(p.cdiDir, cdiSpecName)
	if err := writeCDISpec(spec, gpus); err != nil {
		return err
	}
	defer func() {
		if err := os.Remove(spec); err != nil && !errors.Is(err, fs.ErrNotExist) {
			klog.ErrorS(err, "Removing the CDI spec")
		}
	}()

	stop, err := p.serve()
	if err != nil {
		return err
	}
	defer func() { stop() }()
	registered, err := p.register(ctx)
	if ctx.Err() != nil {
		return nil // told to stop while registering
	} else if err != nil {
		return err
	}

	sock := filepath.Join(p.pluginDir, socketName)
	tick := time.NewTicker(p.watch)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			klog.InfoS("Stopping")
			return nil
		case <-tick.C:
		}
		if p.variant.Is(noReregister) {
			continue // registered once at start, as if kubelet never restarted
		}
		// A starting kubelet removes the plugin sockets, then creates kubelet.sock anew.
		if _, err := os.Stat(sock); errors.Is(err, fs.ErrNotExist) {
			klog.InfoS("Plugin socket removed, serving again", "socket", sock)
			stop()
			next, err := p.serve()
			if err != nil {
				return err
			}
			stop, registered = next, nil
		}
		kubelet, err := os.Stat(filepath.Join(p.pluginDir, deviceplugin.KubeletSocket))
		if err != nil || (registered != nil && sameSocket(registered, kubelet)) {
			continue // kubelet is down, or still the one we registered with
		}
		if registered, err = p.register(ctx); err != nil {
			klog.ErrorS(err, "Re-registering, will retry")
		}
	}
}

// sameSocket tells a socket from one created anew at the same path, which may reuse the inode.
func sameSocket(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.ModTime().Equal(b.ModTime())
}

func (p *plugin) serve() (stop func(), err error) {
	if p.variant.Is(staleSocket) {
		return deviceplugin.ServeLeavingSocket(p.pluginDir, socketName, p)
	}
	return deviceplugin.Serve(p.pluginDir, socketName, p)
}

// register registers with kubelet and returns kubelet's socket as it was, to tell when
// kubelet restarts.
func (p *plugin) register(ctx context.Context) (os.FileInfo, error) {
	return deviceplugin.Register(ctx, p.pluginDir, &pluginapi.RegisterRequest{
		Version: pluginapi.Version, Endpoint: socketName, ResourceName: p.resource, Options: options(),
	})
}

func (p *plugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return options(), nil
}

// ListAndWatch sends the devices at once, then again whenever a device appears, disappears or
// changes health.
func (p *plugin) ListAndWatch(_ *pluginapi.Empty, stream grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	tick := time.NewTicker(p.poll)
	defer tick.Stop()
	var last []*pluginapi.Device
	sent := false
	for {
		gpus, err := sysfs.GPUs(p.sysfsRoot)
		if err != nil {
			// Keep kubelet's view rather than drop every device on a transient read error.
			klog.ErrorS(err, "Reading GPUs")
		} else if devices := p.devices(gpus); !sent || !sameDevices(devices, last) {
			klog.InfoS("ListAndWatch", "devices", describeDevices(devices))
			if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: devices}); err != nil {
				return err
			}
			last, sent = devices, true
		}
		select {
		case <-stream.Context().Done():
			return nil
		case <-tick.C:
		}
	}
}

func sameDevices(a, b []*pluginapi.Device) bool {
	return slices.EqualFunc(a, b, func(x, y *pluginapi.Device) bool { return proto.Equal(x, y) })
}

func (p *plugin) devices(gpus []sysfs.GPU) []*pluginapi.Device {
	if p.variant.Is(missingDevice) && len(gpus) > 0 {
		gpus = gpus[:len(gpus)-1] // an off-by-one in the loop's bound
	}
	devices := make([]*pluginapi.Device, 0, len(gpus))
	for _, g := range gpus {
		d := &pluginapi.Device{ID: g.UUID, Health: pluginapi.Healthy}
		if !g.Healthy && !p.variant.Is(neverUnhealthy) {
			d.Health = pluginapi.Unhealthy
		}
		if g.NUMA >= 0 { // sysfs reports -1 when the platform has no NUMA affinity
			d.Topology = &pluginapi.TopologyInfo{Nodes: []*pluginapi.NUMANode{{ID: int64(g.NUMA)}}}
		}
		devices = append(devices, d)
	}
	if p.variant.Is(listPhantomDevice) {
		devices = append(devices, &pluginapi.Device{ID: phantomID, Health: pluginapi.Healthy}) // a stale entry of a table
	}
	return devices
}

// GetPreferredAllocation prefers devices on one NUMA node: after the must-include devices it
// takes those of the node with the most available devices first, lowest index first.
func (p *plugin) GetPreferredAllocation(_ context.Context, req *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	resp := &pluginapi.PreferredAllocationResponse{}
	for _, creq := range req.ContainerRequests {
		available, err := p.lookup(creq.AvailableDeviceIDs, 0)
		if err != nil {
			return nil, err
		}
		perNUMA := map[int]int{}
		for _, g := range available {
			perNUMA[g.NUMA]++
		}
		slices.SortFunc(available, func(a, b sysfs.GPU) int {
			return cmp.Or(cmp.Compare(perNUMA[b.NUMA], perNUMA[a.NUMA]), cmp.Compare(a.NUMA, b.NUMA), cmp.Compare(a.Index, b.Index))
		})
		size := int(creq.AllocationSize)
		if p.variant.Is(oversizedPreference) {
			size++ // an off-by-one in the bound
		}
		ids := slices.Clone(creq.MustIncludeDeviceIDs)
		for _, g := range available {
			if len(ids) >= size {
				break
			}
			if !slices.Contains(ids, g.UUID) {
				ids = append(ids, g.UUID)
			}
		}
		klog.InfoS("GetPreferredAllocation", "preferred", ids, "available", creq.AvailableDeviceIDs)
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerPreferredAllocationResponse{DeviceIDs: ids})
	}
	return resp, nil
}

// Allocate hands each container its GPUs every way the API allows, so the suite can check
// each path: env vars, a sysfs mount and the device node of each GPU, and its CDI device.
func (p *plugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	// GPU.Dir has its symlinks resolved, so it is relative to the resolved root.
	root, err := filepath.EvalSymlinks(p.sysfsRoot)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "sysfs root: %v", err)
	}
	next := 0
	if p.variant.Is(wrongDevice) {
		next = 1 // an off-by-one: each requested device resolves to the GPU after it
	}
	resp := &pluginapi.AllocateResponse{}
	for _, creq := range req.ContainerRequests {
		gpus, err := p.lookup(creq.DevicesIds, next)
		if err != nil {
			return nil, err
		}
		nodes := gpus
		if p.answered.Add(1)%2 == 0 && p.variant.Is(allocateOtherDevice) {
			// An off-by-one in a second loop: each device node is that of the GPU after the one asked for.
			if nodes, err = p.lookup(creq.DevicesIds, 1); err != nil {
				return nil, err
			}
		}
		c := &pluginapi.ContainerAllocateResponse{
			Envs: map[string]string{"DRALAB_FAKE_GPU_UUIDS": strings.Join(creq.DevicesIds, ",")},
		}
		for i, g := range gpus {
			rel, err := filepath.Rel(root, g.Dir)
			if err != nil || !filepath.IsLocal(rel) {
				return nil, status.Errorf(codes.Internal, "%s is outside %s", g.Dir, root)
			}
			c.Envs[fmt.Sprintf("DRALAB_FAKE_GPU_%d", g.Index)] = g.UUID
			c.Mounts = append(c.Mounts, &pluginapi.Mount{
				ContainerPath: path.Join(containerDir, g.UUID),
				HostPath:      filepath.Join(p.hostSysfsRoot, rel),
				ReadOnly:      true,
			})
			// The GPU's own node, as NVIDIA's driver numbers them: /dev/nvidia<minor>, the minor its index.
			node := fmt.Sprintf("nvidia%d", nodes[i].Index)
			if !p.variant.Is(omitLastDeviceNode) || i < len(gpus)-1 || len(gpus) == 1 { // the variant: a loop bound off by one
				c.Devices = append(c.Devices, &pluginapi.DeviceSpec{
					ContainerPath: "/dev/" + node,
					HostPath:      filepath.Join(p.hostDevRoot, node),
					Permissions:   "rw",
				})
			}
			c.CdiDevices = append(c.CdiDevices, &pluginapi.CDIDevice{Name: cdiKind + "=" + g.UUID})
		}
		klog.InfoS("Allocate", "devices", creq.DevicesIds)
		resp.ContainerResponses = append(resp.ContainerResponses, c)
	}
	return resp, nil
}

// PreStartContainer only logs: the suite reads the pod log to see that kubelet calls it.
func (p *plugin) PreStartContainer(_ context.Context, req *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	klog.InfoS("PreStartContainer", "devices", req.DevicesIds)
	return &pluginapi.PreStartContainerResponse{}, nil
}

// lookup reads sysfs and returns the GPUs with the given device IDs, in their order, each shifted
// to the GPU `next` places after it (wrapping around): 0 but in the wrong-device and
// allocate-other-device variants.
func (p *plugin) lookup(ids []string, next int) ([]sysfs.GPU, error) {
	all, err := sysfs.GPUs(p.sysfsRoot)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "read GPUs: %v", err)
	}
	gpus := make([]sysfs.GPU, 0, len(ids))
	for _, id := range ids {
		i := slices.IndexFunc(all, func(g sysfs.GPU) bool { return g.UUID == id })
		if i < 0 {
			return nil, status.Errorf(codes.NotFound, "unknown device %q", id)
		}
		gpus = append(gpus, all[(i+next)%len(all)])
	}
	return gpus, nil
}

func describe(gpus []sysfs.GPU) []string {
	out := make([]string, 0, len(gpus))
	for _, g := range gpus {
		health := "healthy"
		if !g.Healthy {
			health = "unhealthy"
		}
		out = append(out, fmt.Sprintf("%s %s %s %s", g.UUID, g.Topology(), g.Model, health))
	}
	return out
}

func describeDevices(devices []*pluginapi.Device) []string {
	out := make([]string, 0, len(devices))
	for _, d := range devices {
		out = append(out, d.ID+" "+d.Health)
	}
	return out
}
