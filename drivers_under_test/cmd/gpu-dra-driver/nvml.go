package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"dralab.dev/drivers_under_test/internal/sysfs"
)

// nvmlDiscovery finds GPUs as NVIDIA's drivers do, through NVML (libnvidia-ml.so.1, loaded by
// go-nvml): identities, memory, NUMA node and health from NVML, the PCIe root from the device's
// sysfs path, which is where upstream's helper and real drivers read it.
type nvmlDiscovery struct {
	lib       nvml.Interface
	sysfsRoot string
}

func newNVMLDiscovery(library, sysfsRoot string) (*nvmlDiscovery, error) {
	lib := nvml.New(nvml.WithLibraryPath(library))
	if r := lib.Init(); r != nvml.SUCCESS {
		return nil, fmt.Errorf("nvmlInit with %s: %s", library, lib.ErrorString(r))
	}
	return &nvmlDiscovery{lib: lib, sysfsRoot: sysfsRoot}, nil
}

// GPUs lists the GPUs NVML sees now. A GPU lost while it is read is left out, as the next call
// of nvmlDeviceGetCount would; an unhealthy one is a GPU with uncorrected ECC errors since boot
// (what an Xid 48 leaves behind).
func (n *nvmlDiscovery) GPUs() ([]sysfs.GPU, error) {
	count, r := n.lib.DeviceGetCount()
	if r != nvml.SUCCESS {
		return nil, fmt.Errorf("nvmlDeviceGetCount: %s", n.lib.ErrorString(r))
	}
	var gpus []sysfs.GPU
	for i := 0; i < count; i++ {
		g, r := n.gpu(i)
		if r == nvml.ERROR_GPU_IS_LOST || r == nvml.ERROR_INVALID_ARGUMENT { // gone since the count
			continue
		}
		if r != nvml.SUCCESS {
			return nil, fmt.Errorf("NVML device %d: %s", i, n.lib.ErrorString(r))
		}
		gpus = append(gpus, g)
	}
	return gpus, nil
}

func (n *nvmlDiscovery) gpu(index int) (sysfs.GPU, nvml.Return) {
	d, r := n.lib.DeviceGetHandleByIndex(index)
	if r != nvml.SUCCESS {
		return sysfs.GPU{}, r
	}
	var g sysfs.GPU
	var minor, numa int
	var memory nvml.Memory
	var pci nvml.PciInfo
	var ecc uint64
	for _, call := range []func() nvml.Return{
		func() (r nvml.Return) { g.UUID, r = d.GetUUID(); return },
		func() (r nvml.Return) { g.Model, r = d.GetName(); return },
		func() (r nvml.Return) { minor, r = d.GetMinorNumber(); return },
		func() (r nvml.Return) { memory, r = d.GetMemoryInfo(); return },
		func() (r nvml.Return) { pci, r = d.GetPciInfo(); return },
		func() (r nvml.Return) { numa, r = d.GetNumaNodeId(); return },
		func() (r nvml.Return) {
			ecc, r = d.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC)
			return
		},
	} {
		if r := call(); r != nvml.SUCCESS {
			return sysfs.GPU{}, r
		}
	}
	g.BDF = linuxBusID(pci.BusId[:])
	g.Dir, _ = filepath.EvalSymlinks(filepath.Join(n.sysfsRoot, "bus", "pci", "devices", g.BDF))
	g.Index, g.MemoryBytes, g.NUMA = minor, int64(memory.Total), numa
	g.RootPort, g.Healthy = sysfs.RootPort(g.Dir), ecc == 0
	return g, nvml.SUCCESS
}

// linuxBusID turns NVML's bus ID (00000000:3B:00.0) into the kernel's (0000:3b:00.0).
func linuxBusID(busID []int8) string {
	b := make([]byte, len(busID))
	for i, c := range busID {
		b[i] = byte(c)
	}
	id := string(b)
	if end := strings.IndexByte(id, 0); end >= 0 {
		id = id[:end]
	}
	if domain, rest, ok := strings.Cut(id, ":"); ok && len(domain) > 4 {
		id = domain[len(domain)-4:] + ":" + rest
	}
	return strings.ToLower(id)
}
