package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/deviceattribute"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"dralab.dev/drivers_under_test/dradriver"
	"dralab.dev/drivers_under_test/internal/netdev"
	"dralab.dev/drivers_under_test/internal/sysfs"
)

// Variants only the VF driver has.
var ownVariants = map[string]string{
	variantNetworkDataMismatch:  "networkData reports an IP other than the one configured in the pod (breaks ST-02, MD-16)",
	variantForeignDevice:        "the metadata update also lists a VF the claim was not given (breaks MD-17)",
	variantTemplateNetworkData:  "networkData of a claim made from a ResourceClaimTemplate reports an IP other than the one configured in the pod (breaks ST-02, MD-16; the fixed scenarios' claims are named)",
	variantSwapNetworkData:      "in a claim of several devices, each device's networkData describes the next device's interface (with two, the other's), in status and metadata alike (breaks ST-02, MD-16)",
	variantDuplicateNetworkData: "in a claim of several devices, every device's networkData describes the first device's interface, in status and metadata alike (breaks ST-02, MD-16)",
}

const (
	variantNetworkDataMismatch  = "networkdata-mismatch"
	variantForeignDevice        = "foreign-device"
	variantTemplateNetworkData  = "template-claim-network-data"
	variantSwapNetworkData      = "swap-network-data"
	variantDuplicateNetworkData = "duplicate-network-data"
)

// vfConfig is the opaque configuration a claim gives this driver for a request.
type vfConfig struct {
	InterfaceName   string   `json:"interfaceName,omitempty"`
	IPs             []string `json:"ips,omitempty"`
	HardwareAddress string   `json:"hardwareAddress,omitempty"`
}

type vfDriver struct {
	dradriver.Common
	opts   *dradriver.Options
	fields networkFields // what networkData reports
	// topology: the standard pcieRoot and numaNode attributes too (KP-12 holds their values).
	topology bool
	client   kubernetes.Interface
	helper   *kubeletplugin.Helper // set after Start; NRI hooks run only after that

	mu    sync.Mutex
	vfs   map[string]sysfs.VF // by device name, as last discovered
	state *checkpoint
	// Pod network namespaces held open from RunPodSandbox to StopPodSandbox, so the VF can be
	// moved back even when the runtime has already released the namespace.
	netns map[types.UID]*os.File
}

// deviceName is a DNS label: ens1f0 VF 2 -> ens1f0-vf2.
func deviceName(vf sysfs.VF) string {
	return strings.ToLower(fmt.Sprintf("%s-vf%d", vf.PFName, vf.Index))
}

// attributes are a VF's attributes under the names the driver publishes, in the slice and in
// the metadata file.
func (d *vfDriver) attributes(vf sysfs.VF) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
	attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		// numaNode, not numa as the GPU driver says: derived attributes (KEP-6080) bridge the two.
		"numaNode": {IntValue: ptr.To(int64(vf.NUMA))},
		"pciBusID": {StringValue: ptr.To(vf.BDF)},
		deviceattribute.StandardDeviceAttributePCIBusID: {StringValue: ptr.To(vf.BDF)},
		"pfName":     {StringValue: ptr.To(vf.PFName)},
		"vfIndex":    {IntValue: ptr.To(int64(vf.Index))},
		"macAddress": {StringValue: ptr.To(vf.MAC)},
	}
	if d.topology {
		fs := deviceattribute.WithFSFromRoot(d.opts.SysfsRoot)
		if root, err := deviceattribute.GetPCIeRootAttributeByPCIBusID(vf.BDF, fs); err == nil {
			attrs[root.Name] = root.Value
		}
		if numa, err := deviceattribute.GetNUMANodeAttributeByPCIBusID(vf.BDF, deviceattribute.ScalarAttribute, fs); err == nil {
			attrs[numa.Name] = numa.Value
		}
	}
	return d.opts.Attributes(attrs)
}

func (d *vfDriver) Devices() ([]resourceapi.Device, error) {
	found, err := sysfs.VFs(d.opts.SysfsRoot)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	attached := d.state.attached()
	vfs := map[string]sysfs.VF{}
	var devices []resourceapi.Device
	for _, vf := range found {
		// A VF whose netdev is gone (destroyed with a pod's namespace) cannot be handed out.
		if _, err := net.InterfaceByName(vf.Netdev); err != nil && !attached[deviceName(vf)] {
			continue
		}
		vfs[deviceName(vf)] = vf
		devices = append(devices, resourceapi.Device{Name: deviceName(vf), Attributes: d.attributes(vf)})
	}
	d.vfs = vfs
	return devices, nil
}

// configs are the claim's opaque configs for this driver by request; later ones (the claim's
// after the class's) win. A config without requests applies to all.
func (d *vfDriver) configs(claim *resourceapi.ResourceClaim) (map[string]vfConfig, error) {
	out := map[string]vfConfig{}
	for _, c := range claim.Status.Allocation.Devices.Config {
		if c.Opaque == nil || c.Opaque.Driver != d.opts.DriverName {
			continue
		}
		var cfg vfConfig
		dec := json.NewDecoder(bytes.NewReader(c.Opaque.Parameters.Raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cfg); err != nil {
			return nil, fmt.Errorf("opaque config for %s: %w (fields: interfaceName, ips, hardwareAddress)", d.opts.DriverName, err)
		}
		requests := c.Requests
		if len(requests) == 0 {
			requests = []string{""}
		}
		for _, r := range requests {
			out[r] = cfg
		}
	}
	return out, nil
}

func configFor(configs map[string]vfConfig, request string) (vfConfig, bool) {
	for _, key := range []string{request, strings.SplitN(request, "/", 2)[0], ""} {
		if cfg, ok := configs[key]; ok {
			return cfg, true
		}
	}
	return vfConfig{}, false
}

func (d *vfDriver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	result := map[types.UID]kubeletplugin.PrepareResult{}
	for _, claim := range claims {
		devices, err := d.prepare(claim)
		result[claim.UID] = kubeletplugin.PrepareResult{Err: err, Devices: devices}
	}
	return result, dradriver.Timed(ctx, dradriver.PhaseCheckpoint, d.state.Save)
}

func (d *vfDriver) prepare(claim *resourceapi.ResourceClaim) ([]kubeletplugin.Device, error) {
	configs, err := d.configs(claim)
	if err != nil {
		return nil, err
	}
	_, template := claim.Annotations[resourceapi.PodResourceClaimAnnotation]
	pc := &preparedClaim{Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID, Template: template}
	if old, ok := d.state.Claims[claim.UID]; ok {
		pc = old // prepare again (kubelet restart): keep what is attached
	}
	pc.Pods = nil
	for _, ref := range claim.Status.ReservedFor {
		pc.Pods = append(pc.Pods, ref.UID)
	}
	perRequest := map[string]int{}
	var prepared []kubeletplugin.Device
	known := map[string]bool{}
	for _, dev := range pc.Devices {
		known[dev.Device] = true
	}
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver != d.opts.DriverName || !d.opts.OwnsPool(r.Pool) {
			continue
		}
		vf, ok := d.vfs[r.Device]
		if !ok {
			return nil, fmt.Errorf("device %s of claim %s/%s is not a VF on node %s", r.Device, claim.Namespace, claim.Name, d.opts.NodeName)
		}
		perRequest[r.Request]++
		cfg, hasConfig := configFor(configs, r.Request)
		if hasConfig && perRequest[r.Request] > 1 {
			return nil, fmt.Errorf("request %s of claim %s/%s has a config for one interface but more than one device", r.Request, claim.Namespace, claim.Name)
		}
		nc := netdev.Config{InterfaceName: cfg.InterfaceName, IPs: cfg.IPs, HardwareAddress: cfg.HardwareAddress}
		if nc.InterfaceName == "" {
			nc.InterfaceName = vf.Netdev
		}
		if err := nc.Validate(); err != nil {
			return nil, fmt.Errorf("config of request %s in claim %s/%s: %w", r.Request, claim.Namespace, claim.Name, err)
		}
		if !known[r.Device] {
			pc.Devices = append(pc.Devices, preparedVF{Request: r.Request, Pool: r.Pool, Device: r.Device, VF: vf, Config: nc})
		}
		// No metadata here: it is deferred until RunPodSandbox knows the interface in the pod.
		prepared = append(prepared, kubeletplugin.Device{Requests: []string{r.Request}, PoolName: r.Pool, DeviceName: r.Device})
	}
	d.state.Claims[claim.UID] = pc
	return prepared, nil
}

func (d *vfDriver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	result := map[types.UID]error{}
	for _, claim := range claims {
		pc, ok := d.state.Claims[claim.UID]
		if !ok {
			result[claim.UID] = nil
			continue
		}
		var errs []error
		for i := range pc.Devices {
			errs = append(errs, d.detach(ctx, &pc.Devices[i], ""))
		}
		if result[claim.UID] = errors.Join(errs...); result[claim.UID] == nil {
			delete(d.state.Claims, claim.UID)
		}
	}
	return result, d.state.Save()
}

// attach moves the pod's VFs into its network namespace, then publishes what the pod sees as
// deferred metadata (generation 2) and as status.devices networkData.
func (d *vfDriver) attach(ctx context.Context, podUID types.UID, netnsPath string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	claims := d.state.podClaims(podUID)
	if len(claims) == 0 {
		return nil
	}
	defer dradriver.NetworkAttachTimer().ObserveDuration()
	ns, err := os.Open(netnsPath)
	if err != nil {
		return fmt.Errorf("open network namespace of pod %s: %w", podUID, err)
	}
	d.netns[podUID] = ns
	nsPath := fmt.Sprintf("/proc/self/fd/%d", ns.Fd())
	for _, pc := range claims {
		for i := range pc.Devices {
			dev := &pc.Devices[i]
			if dev.Attached != nil {
				continue
			}
			attached, err := netdev.MoveIn(dev.VF.Netdev, nsPath, dev.Config)
			if err != nil {
				return fmt.Errorf("claim %s/%s device %s: %w", pc.Namespace, pc.Name, dev.Device, err)
			}
			dev.Attached, dev.PodUID = &attached, podUID
			// Checkpointed before the API writes below: a driver restarted in between must still
			// know to move the VF back on StopPodSandbox, or the VF dies with the pod's netns.
			if err := d.state.Save(); err != nil {
				return err
			}
		}
		if err := d.publish(ctx, pc); err != nil {
			return err
		}
	}
	return d.state.Save()
}

// networkData is what the driver reports for a VF of pc attached as a: the fields
// --network-data-fields names.
func (d *vfDriver) networkData(pc *preparedClaim, a *netdev.Attached) *resourceapi.NetworkDeviceData {
	ips := append([]string(nil), a.IPs...)
	wrong := d.opts.Variant.Is(variantNetworkDataMismatch) || (d.opts.Variant.Is(variantTemplateNetworkData) && pc.Template)
	if wrong && len(ips) > 0 {
		ips[0] = nextAddress(ips[0])
	}
	return d.fields.of(resourceapi.NetworkDeviceData{InterfaceName: a.InterfaceName, IPs: ips, HardwareAddress: a.HardwareAddress})
}

func nextAddress(cidr string) string {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return cidr
	}
	return netip.PrefixFrom(p.Addr().Next(), p.Bits()).String()
}

// misreported is what the driver reports for each device of a claim, given what each device's
// interface is (nds, in pc.Devices' order): nds itself, or another device's as a variant says.
func (d *vfDriver) misreported(nds []*resourceapi.NetworkDeviceData) []*resourceapi.NetworkDeviceData {
	out := slices.Clone(nds)
	for i := range out {
		switch {
		case d.opts.Variant.Is(variantSwapNetworkData):
			out[i] = nds[(i+1)%len(nds)]
		case d.opts.Variant.Is(variantDuplicateNetworkData):
			out[i] = nds[0]
		}
	}
	return out
}

func (d *vfDriver) publish(ctx context.Context, pc *preparedClaim) error {
	byRequest := map[string][]kubeletplugin.Device{}
	var entries []dradriver.DeviceStatus
	var nds []*resourceapi.NetworkDeviceData
	for _, dev := range pc.Devices {
		nds = append(nds, d.networkData(pc, dev.Attached))
	}
	nds = d.misreported(nds)
	for i, dev := range pc.Devices {
		nd := nds[i] // the same networkData in the metadata file and in status.devices
		attrs := map[string]resourceapi.DeviceAttribute{}
		for k, v := range d.attributes(dev.VF) {
			attrs[string(k)] = v
		}
		byRequest[dev.Request] = append(byRequest[dev.Request], kubeletplugin.Device{
			Requests: []string{dev.Request}, PoolName: dev.Pool, DeviceName: dev.Device,
			Metadata: &kubeletplugin.DeviceMetadata{Attributes: attrs, NetworkData: nd},
		})
		entries = append(entries, dradriver.DeviceStatus{Pool: dev.Pool, Device: dev.Device, Ready: true, NetworkData: nd})
	}
	if d.opts.Variant.Is(variantForeignDevice) && len(pc.Devices) > 0 {
		if foreign := d.foreignDevice(pc); foreign != nil {
			request := pc.Devices[0].Request
			byRequest[request] = append(byRequest[request], *foreign)
		}
	}
	if d.opts.EnableDeviceMetadata {
		for request, devices := range byRequest {
			if err := d.helper.UpdateRequestMetadata(ctx, pc.Namespace, pc.Name, pc.UID, request, devices); err != nil {
				return fmt.Errorf("update metadata of claim %s/%s request %s: %w", pc.Namespace, pc.Name, request, err)
			}
		}
	}
	if d.opts.ReportStatus {
		return d.opts.WriteClaimStatus(ctx, d.client, dradriver.ClaimRef(pc.Namespace, pc.Name), entries)
	}
	return nil
}

// foreignDevice is a VF of this node that the claim was not given, nil if there is none.
func (d *vfDriver) foreignDevice(pc *preparedClaim) *kubeletplugin.Device {
	own := map[string]bool{}
	for _, dev := range pc.Devices {
		own[dev.Device] = true
	}
	for _, name := range slices.Sorted(maps.Keys(d.vfs)) {
		if !own[name] {
			return &kubeletplugin.Device{Requests: []string{pc.Devices[0].Request}, PoolName: d.opts.NodeName, DeviceName: name}
		}
	}
	return nil
}

// detachPod moves the pod's VFs back to the node.
func (d *vfDriver) detachPod(ctx context.Context, podUID types.UID, netnsPath string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for _, pc := range d.state.podClaims(podUID) {
		for i := range pc.Devices {
			if pc.Devices[i].PodUID == podUID {
				errs = append(errs, d.detach(ctx, &pc.Devices[i], netnsPath))
			}
		}
	}
	if ns, ok := d.netns[podUID]; ok {
		ns.Close()
		delete(d.netns, podUID)
	}
	return errors.Join(append(errs, d.state.Save())...)
}

// detach moves one VF back under its own name and MAC, from the namespace held since
// RunPodSandbox or, after a driver restart, from netnsPath (which may be gone with the pod).
func (d *vfDriver) detach(ctx context.Context, dev *preparedVF, netnsPath string) error {
	if dev.Attached == nil {
		return nil
	}
	nsPath := netnsPath
	if ns, ok := d.netns[dev.PodUID]; ok {
		nsPath = fmt.Sprintf("/proc/self/fd/%d", ns.Fd())
	}
	if err := netdev.MoveOut(dev.Attached.InterfaceName, nsPath, dev.VF.Netdev, dev.VF.MAC); err != nil {
		return fmt.Errorf("move %s back to the node: %w", dev.Device, err)
	}
	klog.FromContext(ctx).Info("VF back on the node", "device", dev.Device, "netdev", dev.VF.Netdev)
	dev.Attached, dev.PodUID = nil, ""
	return nil
}
