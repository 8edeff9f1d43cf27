package main

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/deviceattribute"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"dralab.dev/drivers_under_test/dradriver"
	"dralab.dev/drivers_under_test/internal/cdi"
	"dralab.dev/drivers_under_test/internal/sysfs"
)

// driverVersion is published as the `driverVersion` attribute (a semantic version).
const driverVersion = "1.37.0"

// cdiClass is the class part of this driver's CDI kind, {driver}/gpu.
const cdiClass = "gpu"

// Variants only the GPU driver has.
var ownVariants = map[string]string{
	variantLeakOtherRequest:       "each device is reported for every request of its claim, so one request's container sees another's metadata (breaks MD-04)",
	variantAttributeMismatch:      "the metadata's index attribute differs from the ResourceSlice's (breaks MD-03)",
	variantDropDevice:             "a request's metadata lists only its first device (breaks MD-02, MD-06)",
	variantRefusePrepare:          "NodePrepareResources fails for every claim, so no pod with a claim starts (breaks MD-01 and every check of a prepared claim)",
	variantRestoreWithoutCDI:      "a claim prepared again is restored from the checkpoint without writing its CDI spec, which a node reboot has lost, so its pod cannot start (kubernetes#141433; breaks KP-07)",
	variantRestoreFirstDeviceOnly: "a claim of several devices prepared again is restored from the checkpoint with a CDI spec of its first device only, so its answer names CDI devices no spec defines and its pod cannot start again (breaks KP-03, KP-07; the fixed scenarios re-prepare claims of one device)",
	variantRestoreWithoutMetadata: "a claim prepared again is restored from the checkpoint with its devices but without their metadata, so the re-prepared claim's metadata files lose their attributes (breaks MD-18)",
	variantTooManyAttributes:      "each device's metadata carries metadata-only attributes beyond the slice's, 33 in all, one more than v1beta1 allows (breaks MD-19)",
	variantOneFilePerClaim:        "every device of a claim is reported for the claim's first request, so its requests share one metadata file and directory (breaks MD-05)",
	variantHidesFaults:            "an unhealthy GPU stays in the ResourceSlice and the health stream reports every GPU healthy, so a fault never reaches the pods using it (breaks KP-10)",
	variantOtherDrivers:           "a request's metadata also lists the devices other drivers were allocated for it, as this driver's (breaks MD-07)",
	variantOtherRequests:          "the devices other drivers were allocated for the claim's other requests are answered too, as this driver's (breaks KP-03; in the fixed KP scenarios no claim has another driver's request)",
	variantPCIeRootFromBDF:        "the standard pcieRoot attribute is made from the GPU's own bus number (pci<domain>:<bus>), not read from the sysfs path of the Root Complex it sits under (breaks KP-12)",
	variantPCIBusIDOfPort:         "the standard pciBusID attribute is the address one level up the GPU's sysfs path, the PCIe port it sits behind: a PCI function of the node, but not the GPU's own (breaks KP-12)",
}

const (
	variantLeakOtherRequest       = "leak-other-request"
	variantAttributeMismatch      = "attribute-mismatch"
	variantDropDevice             = "drop-device"
	variantRefusePrepare          = "refuse-prepare"
	variantRestoreWithoutCDI      = "restore-without-cdi"
	variantRestoreWithoutMetadata = "restore-without-metadata"
	variantRestoreFirstDeviceOnly = "restore-first-device-only"
	variantTooManyAttributes      = "too-many-attributes"
	variantOneFilePerClaim        = "one-file-per-claim"
	variantOtherDrivers           = "other-drivers-devices"
	variantOtherRequests          = "other-requests-devices"
	variantHidesFaults            = "hides-faults"
	variantPCIeRootFromBDF        = "pcie-root-from-bdf"
	variantPCIBusIDOfPort         = "pci-bus-id-of-port"
)

// maxMetadataAttributes is how many attributes metadata.resource.k8s.io/v1beta1 allows a device
// (maxProperties), as many as a ResourceSlice device may have.
const maxMetadataAttributes = resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice

type gpuDriver struct {
	dradriver.Common
	opts     *dradriver.Options
	client   kubernetes.Interface
	discover func() ([]sysfs.GPU, error) // sysfs or NVML
	poll     time.Duration               // how often the GPUs are looked at, for the slice and the health stream
	// keepUnhealthy keeps an unhealthy GPU in the slice: only the health stream tells of it.
	keepUnhealthy bool
	devRoot       string // with NVML: where the node has /dev/nvidia*; else GPUs get stand-in nodes

	mu   sync.Mutex
	gpus map[string]sysfs.GPU // by device name, as last discovered

	stateMu sync.Mutex // the checkpoint's claims and its file
	state   *dradriver.Checkpoint[*preparedClaim]
}

// preparedClaim is what prepare did for a claim, enough to answer the same again.
type preparedClaim struct {
	// CDIDevices are the edits of the claim's CDI spec by device name: the spec is written
	// again from them, since it lives in /var/run/cdi, which a node reboot empties.
	CDIDevices map[string]cdi.Edits   `json:"cdiDevices"`
	Devices    []kubeletplugin.Device `json:"devices"`
}

func deviceName(g sysfs.GPU) string { return fmt.Sprintf("gpu-%d", g.Index) }

// attributes are the typed attributes of a GPU under the names the driver publishes, in the
// slice and, identically, in the metadata file.
func (d *gpuDriver) attributes(g sysfs.GPU) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
	attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		"index":         {IntValue: ptr.To(int64(g.Index))},
		"uuid":          {StringValue: ptr.To(g.UUID)},
		"model":         {StringValue: ptr.To(g.Model)},
		"driverVersion": {VersionValue: ptr.To(driverVersion)},
		"numa":          {IntValue: ptr.To(int64(g.NUMA))},
		"topology":      {StringValue: ptr.To(g.Topology())},
		deviceattribute.StandardDeviceAttributePCIBusID: {StringValue: ptr.To(g.BDF)},
	}
	// Upstream's helper reads the PCIe root from the device's sysfs path, as real drivers do.
	if root, err := deviceattribute.GetPCIeRootAttributeByPCIBusID(g.BDF, deviceattribute.WithFSFromRoot(d.opts.SysfsRoot)); err == nil {
		attrs[root.Name] = root.Value
	}
	if d.opts.Variant.Is(variantPCIeRootFromBDF) {
		attrs[deviceattribute.StandardDeviceAttributePCIeRoot] = resourceapi.DeviceAttribute{StringValue: ptr.To("pci" + g.BDF[:strings.LastIndex(g.BDF, ":")])}
	}
	if d.opts.Variant.Is(variantPCIBusIDOfPort) {
		attrs[deviceattribute.StandardDeviceAttributePCIBusID] = resourceapi.DeviceAttribute{StringValue: ptr.To(filepath.Base(filepath.Dir(g.Dir)))}
	}
	return d.opts.Attributes(attrs)
}

// devices discovers the GPUs and returns the healthy ones as slice devices.
func (d *gpuDriver) Devices() ([]resourceapi.Device, error) {
	found, err := d.discover()
	if err != nil {
		return nil, err
	}
	gpus := map[string]sysfs.GPU{}
	var devices []resourceapi.Device
	for _, g := range found {
		if !g.Healthy && !d.keepUnhealthy {
			continue
		}
		gpus[deviceName(g)] = g
		devices = append(devices, resourceapi.Device{
			Name:       deviceName(g),
			Attributes: d.attributes(g),
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
				"memory": {Value: *resource.NewQuantity(g.MemoryBytes, resource.BinarySI)},
			},
		})
	}
	d.mu.Lock()
	d.gpus = gpus
	d.mu.Unlock()
	return devices, nil
}

// WatchHealthStatus reports the health of the devices of the claims prepared here every poll
// (KEP-4680): the kubelet shows it in the status of the pods using them.
func (d *gpuDriver) WatchHealthStatus(ctx context.Context, reports chan<- kubeletplugin.DeviceHealthReport) error {
	ticker := time.NewTicker(d.poll)
	defer ticker.Stop()
	for {
		if report, err := d.healthReport(); err != nil {
			klog.FromContext(ctx).Error(err, "Discovering GPUs for the health stream")
		} else {
			select {
			case reports <- report:
			case <-ctx.Done():
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// healthReport is the health of each device of a prepared claim, as its GPU is now; a GPU gone
// from the node is unhealthy.
func (d *gpuDriver) healthReport() (kubeletplugin.DeviceHealthReport, error) {
	found, err := d.discover()
	if err != nil {
		return kubeletplugin.DeviceHealthReport{}, err
	}
	healthy := map[string]bool{}
	for _, g := range found {
		healthy[deviceName(g)] = g.Healthy || d.opts.Variant.Is(variantHidesFaults)
	}
	now := time.Now()
	var report kubeletplugin.DeviceHealthReport
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	for _, claim := range d.state.Claims {
		for _, dev := range claim.Devices {
			h := kubeletplugin.DeviceHealth{PoolName: dev.PoolName, DeviceName: dev.DeviceName, Health: kubeletplugin.HealthStatusHealthy,
				LastUpdated: now, HealthCheckTimeout: 5 * d.poll}
			if !healthy[dev.DeviceName] {
				h.Health, h.Message = kubeletplugin.HealthStatusUnhealthy, "the GPU reports a fault or is gone"
			}
			report.Devices = append(report.Devices, h)
		}
	}
	return report, nil
}

func (d *gpuDriver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	result := map[types.UID]kubeletplugin.PrepareResult{}
	for _, claim := range claims {
		if d.opts.Variant.Is(variantRefusePrepare) {
			err := fmt.Errorf("%s: claim %s/%s: device configuration rejected: unsupported sharing strategy", d.opts.Variant.Describe(), claim.Namespace, claim.Name)
			klog.FromContext(ctx).Error(err, "NodePrepareResources", "claim", klog.KObj(claim))
			result[claim.UID] = kubeletplugin.PrepareResult{Err: err}
			continue
		}
		if err := d.opts.TooManyPods(claim); err != nil {
			klog.FromContext(ctx).Error(err, "NodePrepareResources", "claim", klog.KObj(claim))
			result[claim.UID] = kubeletplugin.PrepareResult{Err: err}
			continue
		}
		devices, err := d.prepareOrRestore(ctx, claim)
		result[claim.UID] = kubeletplugin.PrepareResult{Err: err, Devices: devices}
	}
	return result, dradriver.Timed(ctx, dradriver.PhaseCheckpoint, d.saveState)
}

// saveState writes the checkpoint. Prepares run concurrently (each claim has files of its own);
// only the checkpoint is shared.
func (d *gpuDriver) saveState() error {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	return d.state.Save()
}

// prepareOrRestore prepares a claim, or answers one it prepared before (the kubelet prepares
// its claims again after it or the node restarted) from the checkpoint, writing its CDI spec
// again.
func (d *gpuDriver) prepareOrRestore(ctx context.Context, claim *resourceapi.ResourceClaim) ([]kubeletplugin.Device, error) {
	d.stateMu.Lock()
	saved, ok := d.state.Claims[claim.UID]
	d.stateMu.Unlock()
	if !ok {
		return d.prepare(ctx, claim)
	}
	logger := klog.FromContext(ctx)
	if d.opts.Variant.Is(variantRestoreWithoutCDI) {
		logger.Info("Claim restored from the checkpoint; CDI spec not written", "claim", klog.KObj(claim), "variant", d.opts.Variant.Describe())
		return saved.Devices, nil
	}
	edits := saved.CDIDevices
	if d.opts.Variant.Is(variantRestoreFirstDeviceOnly) {
		edits = firstOnly(edits)
	}
	if _, err := d.writeCDISpec(ctx, claim, edits); err != nil {
		return nil, err
	}
	logger.Info("Claim restored from the checkpoint, CDI spec written again", "claim", klog.KObj(claim))
	if d.opts.Variant.Is(variantRestoreWithoutMetadata) {
		devices := slices.Clone(saved.Devices)
		for i := range devices {
			devices[i].Metadata = nil
		}
		return devices, nil
	}
	return saved.Devices, nil
}

// firstOnly keeps the edits of the first device by name.
func firstOnly(devices map[string]cdi.Edits) map[string]cdi.Edits {
	names := slices.Sorted(maps.Keys(devices))
	if len(names) < 2 {
		return devices
	}
	return map[string]cdi.Edits{names[0]: devices[names[0]]}
}

// writeCDISpec writes the claim's CDI spec, a phase of its prepare, and returns its CDI device IDs.
func (d *gpuDriver) writeCDISpec(ctx context.Context, claim *resourceapi.ResourceClaim, devices map[string]cdi.Edits) (ids map[string]string, err error) {
	err = dradriver.Timed(ctx, dradriver.PhaseCDIWrite, func() error {
		ids, err = d.opts.WriteClaimCDISpec(cdiClass, string(claim.UID), devices)
		return err
	})
	return ids, err
}

// ours are the claim's allocation results for this driver on this node.
func (d *gpuDriver) ours(claim *resourceapi.ResourceClaim) []resourceapi.DeviceRequestAllocationResult {
	var out []resourceapi.DeviceRequestAllocationResult
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver == d.opts.DriverName && d.opts.OwnsPool(r.Pool) {
			out = append(out, r)
		}
	}
	return out
}

func (d *gpuDriver) prepare(ctx context.Context, claim *resourceapi.ResourceClaim) ([]kubeletplugin.Device, error) {
	results := d.ours(claim)
	d.mu.Lock()
	gpus := d.gpus
	d.mu.Unlock()
	cdiDevices := map[string]cdi.Edits{}
	for _, r := range results {
		g, ok := gpus[r.Device]
		if !ok {
			return nil, fmt.Errorf("device %s of claim %s/%s is not a healthy GPU on node %s", r.Device, claim.Namespace, claim.Name, d.opts.NodeName)
		}
		cdiDevices[r.Device] = cdi.Edits{
			Env:         []string{fmt.Sprintf("DRALAB_GPU_%d_UUID=%s", g.Index, g.UUID), "DRALAB_GPU_DRIVER=" + d.opts.DriverName},
			DeviceNodes: d.deviceNodes(g),
		}
	}
	ids, err := d.writeCDISpec(ctx, claim, cdiDevices)
	if err != nil {
		return nil, err
	}
	requests := map[string]bool{}
	for _, r := range results {
		requests[r.Request] = true
	}
	var prepared []kubeletplugin.Device
	listed := map[string]bool{}
	for _, r := range results {
		g := gpus[r.Device]
		dev := kubeletplugin.Device{
			Requests: []string{r.Request}, PoolName: r.Pool, DeviceName: r.Device,
			CDIDeviceIDs: []string{ids[r.Device]},
			Metadata:     &kubeletplugin.DeviceMetadata{Attributes: d.metadataAttributes(g)},
		}
		switch {
		case d.opts.Variant.Is(variantLeakOtherRequest):
			dev.Requests = keys(requests)
		case d.opts.Variant.Is(variantDropDevice) && listed[r.Request]:
			// No request: the kubelet still hands its CDI device to the containers, but the
			// framework leaves it out of every metadata file.
			dev.Requests = nil
		case d.opts.Variant.Is(variantOneFilePerClaim):
			// The framework writes a file per request it is given: one, listing every device.
			dev.Requests = []string{results[0].Request}
		}
		listed[r.Request] = true
		prepared = append(prepared, dev)
	}
	switch {
	case d.opts.Variant.Is(variantOtherDrivers):
		prepared = append(prepared, othersDevices(claim, d.opts.DriverName, func(r string) bool { return requests[r] })...)
	case d.opts.Variant.Is(variantOtherRequests):
		prepared = append(prepared, othersDevices(claim, d.opts.DriverName, func(r string) bool { return !requests[r] })...)
	}
	if d.opts.ReportStatus && len(results) > 0 {
		if err := dradriver.Timed(ctx, dradriver.PhaseAPIWrite, func() error { return d.reportStatus(ctx, claim, results, gpus) }); err != nil {
			return nil, err
		}
	}
	d.stateMu.Lock()
	d.state.Claims[claim.UID] = &preparedClaim{CDIDevices: cdiDevices, Devices: prepared}
	d.stateMu.Unlock()
	return prepared, nil
}

// deviceNodes are what a container of the GPU gets: with NVML, the GPU's /dev/nvidiaN and the
// control device, as NVIDIA's drivers hand them out; otherwise a stand-in node per GPU.
func (d *gpuDriver) deviceNodes(g sysfs.GPU) []cdi.DeviceNode {
	if d.devRoot == "" {
		return []cdi.DeviceNode{{Path: fmt.Sprintf("/dev/dralab-gpu%d", g.Index), HostPath: "/dev/null"}}
	}
	var nodes []cdi.DeviceNode
	for _, name := range []string{fmt.Sprintf("nvidia%d", g.Index), "nvidiactl"} {
		nodes = append(nodes, cdi.DeviceNode{Path: "/dev/" + name, HostPath: filepath.Join(d.devRoot, "dev", name)})
	}
	return nodes
}

func (d *gpuDriver) metadataAttributes(g sysfs.GPU) map[string]resourceapi.DeviceAttribute {
	attrs := map[string]resourceapi.DeviceAttribute{}
	for k, v := range d.attributes(g) {
		attrs[string(k)] = v
	}
	if d.opts.Variant.Is(variantAttributeMismatch) {
		attrs[string(d.opts.AttributeName("index"))] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(g.Index + 1))}
	}
	if d.opts.Variant.Is(variantTooManyAttributes) {
		// Metadata-only attributes, as a driver adds that has more to tell than its slice has room
		// for: each valid (a semantic version), together one more than a device may have.
		for i := 0; len(attrs) <= maxMetadataAttributes; i++ {
			attrs[string(d.opts.AttributeName(fmt.Sprintf("firmware%dVersion", i)))] = resourceapi.DeviceAttribute{VersionValue: ptr.To(fmt.Sprintf("1.%d.0", i))}
		}
	}
	return attrs
}

// othersDevices are the devices other drivers were allocated for requests, as a driver reports
// them that takes a request's results without looking at their driver; the framework lists
// them in this driver's metadata file, under its name. Nothing is prepared for them.
func othersDevices(claim *resourceapi.ResourceClaim, driver string, request func(string) bool) []kubeletplugin.Device {
	var out []kubeletplugin.Device
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver != driver && request(r.Request) {
			out = append(out, kubeletplugin.Device{Requests: []string{r.Request}, PoolName: r.Pool, DeviceName: r.Device})
		}
	}
	return out
}

func (d *gpuDriver) reportStatus(ctx context.Context, claim *resourceapi.ResourceClaim,
	results []resourceapi.DeviceRequestAllocationResult, gpus map[string]sysfs.GPU) error {
	var entries []dradriver.DeviceStatus
	for _, r := range results {
		entries = append(entries, dradriver.DeviceStatus{
			Pool: r.Pool, Device: r.Device, Ready: true,
			Data: map[string]any{"uuid": gpus[r.Device].UUID, "node": d.opts.NodeName},
		})
	}
	return d.opts.WriteClaimStatus(ctx, d.client, claim, entries)
}

func (d *gpuDriver) UnprepareResourceClaims(_ context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	result := map[types.UID]error{}
	for _, claim := range claims {
		if result[claim.UID] = d.opts.RemoveClaimCDISpec(cdiClass, string(claim.UID)); result[claim.UID] == nil {
			delete(d.state.Claims, claim.UID)
		}
	}
	return result, d.state.Save()
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
