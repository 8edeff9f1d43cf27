package main

/*
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

// The path the dynamic loader opened this library from.
static const char *library_path(void) {
	Dl_info info;
	return dladdr((void *)library_path, &info) && info.dli_fname ? info.dli_fname : NULL;
}
*/
import "C"

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

const (
	rootEnv       = "DRALAB_NVML_ROOT"
	configFile    = "dralab/nvml.json"
	standardSysfs = "/sys"
	gpuInfoFile   = "dralab-gpu.json" // fake_hardware/sysfs.py GPU_INFO_FILE: the lab's health faults
	nvidia        = 0x10de
)

// config is dralab/nvml.json (fake_hardware/nvml.py).
type config struct {
	SysfsRoot         string               `json:"sysfsRoot"`
	DriverVersion     string               `json:"driverVersion"`
	NVMLVersion       string               `json:"nvmlVersion"`
	CudaDriverVersion int32                `json:"cudaDriverVersion"`
	GPUs              map[string]*identity `json:"gpus"` // by BDF
}

type identity struct {
	Name              string       `json:"name"`
	UUID              string       `json:"uuid"`
	Serial            string       `json:"serial"`
	MinorNumber       uint32       `json:"minorNumber"`
	MemoryBytes       uint64       `json:"memoryBytes"`
	Architecture      string       `json:"architecture"`
	ComputeCapability *[2]int32    `json:"computeCapability"` // null for a model the lab does not know
	MigCapable        bool         `json:"migCapable"`
	MigProfiles       []migProfile `json:"migProfiles"`
	MigDevices        []migDevice  `json:"migDevices"`
}

// migProfile is a GPU instance profile the GPU offers (fake_hardware/nvml.py mig_profiles).
type migProfile struct {
	Name          string   `json:"name"`   // 3g.40gb
	Slices        uint32   `json:"slices"` // compute slices, of 7
	MemoryBytes   uint64   `json:"memoryBytes"`
	MemorySlices  uint32   `json:"memorySlices"` // of 8: the size of its placements
	InstanceCount uint32   `json:"instanceCount"`
	Placements    []uint32 `json:"placements"` // where an instance may start, in memory slices
}

type migDevice struct {
	UUID              string `json:"uuid"`
	Name              string `json:"name"`
	Profile           string `json:"profile"`
	GpuInstanceID     uint32 `json:"gpuInstanceId"`
	ComputeInstanceID uint32 `json:"computeInstanceId"`
	MemoryBytes       uint64 `json:"memoryBytes"`
	PlacementStart    uint32 `json:"placementStart"`
}

// gpu is a GPU as the tree shows it now, with its identity.
type gpu struct {
	*identity
	bdf, dir                                 string
	address                                  pciAddress
	device, subsystemVendor, subsystemDevice uint32
	numa                                     int
	cpus                                     []int
}

type pciAddress struct{ domain, bus, slot, function uint32 }

// parseAddress reads domain:bus:slot.function in hex, with a domain of any width.
func parseAddress(s string) (pciAddress, error) {
	var a pciAddress
	_, err := fmt.Sscanf(s, "%x:%x:%x.%x", &a.domain, &a.bus, &a.slot, &a.function)
	return a, err
}

// object is what a handle stands for: a GPU, one of its MIG devices, or a MIG device's GPU or
// compute instance.
type object struct {
	bdf  string
	mig  int // index in the GPU's MigDevices; -1 for the GPU itself
	kind handleKind
}

type handleKind int

const (
	deviceHandle          handleKind = iota // nvmlDevice_t
	gpuInstanceHandle                       // nvmlGpuInstance_t
	computeInstanceHandle                   // nvmlComputeInstance_t
)

// lib is the state between nvmlInit and the last nvmlShutdown (NVML counts initialisations).
// Handles are C memory the caller never dereferences, one per object for the life of the
// process, as NVML's handles are; being C memory, Go's collector and cgo's rules leave them be.
var lib = struct {
	sync.Mutex
	inits   int
	cfg     *config
	handles map[object]unsafe.Pointer
	objects map[unsafe.Pointer]object
	reads   map[string]*gpu // by PCI address, since the last nvmlInit that read the configuration
}{handles: map[object]unsafe.Pointer{}, objects: map[unsafe.Pointer]object{}}

func initialize() nvml.Return {
	lib.Lock()
	defer lib.Unlock()
	if lib.inits == 0 {
		cfg, err := load()
		if err != nil {
			// NVML prints nothing, but without this line a driver only learns "driver not loaded".
			fmt.Fprintf(os.Stderr, "libnvidia-ml (dralab): %v\n", err)
			return nvml.ERROR_DRIVER_NOT_LOADED
		}
		lib.cfg = cfg
		lib.reads = map[string]*gpu{}
	}
	lib.inits++
	return nvml.SUCCESS
}

func shutdown() nvml.Return {
	lib.Lock()
	defer lib.Unlock()
	if lib.inits == 0 {
		return nvml.ERROR_UNINITIALIZED
	}
	lib.inits--
	return nvml.SUCCESS
}

func load() (*config, error) {
	root, err := driverRoot()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(root, configFile))
	if err != nil {
		return nil, err
	}
	var cfg config
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(root, configFile), err)
	}
	// In a container whose chart mounts the driver root but not the node's tree, the tree is where
	// dralab's standard exposure puts it for every driver: at /sys.
	if _, err := os.Stat(filepath.Join(cfg.SysfsRoot, "bus/pci/devices")); err != nil {
		if _, errSys := os.Stat(filepath.Join(standardSysfs, "bus/pci/devices")); errSys != nil {
			return nil, fmt.Errorf("the emulated sysfs tree that %s names: %w", filepath.Join(root, configFile), err)
		}
		cfg.SysfsRoot = standardSysfs
	}
	return &cfg, nil
}

// driverRoot is DRALAB_NVML_ROOT unless empty, read from the C environment (a caller may set it
// after loading the library, which Go's own copy of the environment would miss), or the nearest
// directory above the library's file that holds dralab/nvml.json.
func driverRoot() (string, error) {
	name := C.CString(rootEnv)
	defer C.free(unsafe.Pointer(name))
	if root := C.getenv(name); root != nil && *root != 0 {
		return C.GoString(root), nil
	}
	self := C.library_path()
	if self == nil {
		return "", errors.New("dladdr does not know where this library is; set " + rootEnv)
	}
	path, err := filepath.Abs(C.GoString(self))
	if err != nil {
		return "", err
	}
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, configFile)); err == nil {
			return dir, nil
		}
		if dir == filepath.Dir(dir) {
			return "", fmt.Errorf("no %s in any directory above %s; set %s to the driver root", configFile, path, rootEnv)
		}
	}
}

// present lists the GPUs in the tree now, in PCI bus order (bus/pci/devices lists BDFs, which sort so).
func present(cfg *config) []*gpu {
	entries, _ := os.ReadDir(filepath.Join(cfg.SysfsRoot, "bus/pci/devices"))
	var found []*gpu
	for _, e := range entries {
		if g := readGPU(cfg, e.Name()); g != nil {
			found = append(found, g)
		}
	}
	return found
}

// readGPU is the GPU at bdf if the tree has it, bound to nvidia; nil otherwise. Each call looks
// at the function's driver link (gone with the function, changed by a rebind) as NVML finds a
// lost GPU on its next call; the attributes that never change while it stays (IDs, NUMA node,
// CPUs) are read once: a driver's discovery makes dozens of calls within milliseconds, and
// reading all of them each time cost a node's FUSE tree 2400 requests a second. The caller holds
// lib's lock, which guards the reads kept.
func readGPU(cfg *config, bdf string) *gpu {
	driver, err := os.Readlink(filepath.Join(cfg.SysfsRoot, "bus/pci/devices", bdf, "driver"))
	if err != nil || filepath.Base(driver) != "nvidia" {
		delete(lib.reads, bdf)
		return nil
	}
	if g, ok := lib.reads[bdf]; ok {
		return g
	}
	g := readGPUNow(cfg, bdf)
	if g != nil {
		lib.reads[bdf] = g
	}
	return g
}

func readGPUNow(cfg *config, bdf string) *gpu {
	id := cfg.GPUs[bdf]
	if id == nil {
		return nil
	}
	dir := filepath.Join(cfg.SysfsRoot, "bus/pci/devices", bdf)
	driver, err := os.Readlink(filepath.Join(dir, "driver"))
	if err != nil || filepath.Base(driver) != "nvidia" || hexAttr(dir, "vendor") != nvidia || hexAttr(dir, "class")>>16 != 0x03 {
		return nil
	}
	address, err := parseAddress(bdf)
	if err != nil {
		return nil
	}
	g := &gpu{identity: id, bdf: bdf, dir: dir, address: address, device: hexAttr(dir, "device"),
		subsystemVendor: hexAttr(dir, "subsystem_vendor"), subsystemDevice: hexAttr(dir, "subsystem_device")}
	g.numa, err = strconv.Atoi(attr(dir, "numa_node"))
	if err != nil {
		g.numa = -1
	}
	g.cpus = cpuList(attr(dir, "local_cpulist"))
	return g
}

// healthy reads the function's dralab-gpu.json, where fake_hardware/sysfs.py set_gpu_health records faults.
func (g *gpu) healthy() bool {
	var info struct {
		Health string `json:"health"`
	}
	data, err := os.ReadFile(filepath.Join(g.dir, gpuInfoFile))
	return err == nil && json.Unmarshal(data, &info) == nil && info.Health == "healthy"
}

func attr(dir, name string) string {
	data, _ := os.ReadFile(filepath.Join(dir, name))
	return strings.TrimSpace(string(data))
}

func hexAttr(dir, name string) uint32 {
	v, _ := strconv.ParseUint(strings.TrimPrefix(attr(dir, name), "0x"), 16, 32)
	return uint32(v)
}

// cpuList reads a kernel CPU list ("0-55,112-167").
func cpuList(list string) []int {
	var cpus []int
	for _, part := range strings.Split(list, ",") {
		first, last, ranged := strings.Cut(part, "-")
		lo, err := strconv.Atoi(first)
		if err != nil {
			continue
		}
		hi := lo
		if ranged {
			if hi, err = strconv.Atoi(last); err != nil {
				continue
			}
		}
		for cpu := lo; cpu <= hi; cpu++ {
			cpus = append(cpus, cpu)
		}
	}
	return cpus
}

// handle is the handle of o, made on first use. The caller holds lib's lock.
func handle(o object) unsafe.Pointer {
	h, ok := lib.handles[o]
	if !ok {
		h = C.malloc(1)
		lib.handles[o], lib.objects[h] = h, o
	}
	return h
}

// resolve is the GPU a device handle stands for (a MIG device's GPU) and the MIG device, if it is one.
func resolve(h unsafe.Pointer) (*gpu, *migDevice, nvml.Return) {
	return resolveKind(h, deviceHandle)
}

// resolveKind is resolve for a handle of the kind given: a GPU or compute instance's handle
// resolves to its MIG device.
func resolveKind(h unsafe.Pointer, kind handleKind) (*gpu, *migDevice, nvml.Return) {
	lib.Lock()
	defer lib.Unlock()
	if lib.inits == 0 {
		return nil, nil, nvml.ERROR_UNINITIALIZED
	}
	o, ok := lib.objects[h]
	if !ok || o.kind != kind {
		return nil, nil, nvml.ERROR_INVALID_ARGUMENT
	}
	g := readGPU(lib.cfg, o.bdf)
	switch {
	case g == nil:
		return nil, nil, nvml.ERROR_GPU_IS_LOST
	case o.mig >= len(g.MigDevices): // from before an nvmlInit that read another layout
		return nil, nil, nvml.ERROR_INVALID_ARGUMENT
	case o.mig >= 0:
		return g, &g.MigDevices[o.mig], nvml.SUCCESS
	}
	return g, nil, nvml.SUCCESS
}

// gpus runs f on the GPUs present, with lib's lock held.
func gpus(f func(cfg *config, present []*gpu) nvml.Return) nvml.Return {
	lib.Lock()
	defer lib.Unlock()
	if lib.inits == 0 {
		return nvml.ERROR_UNINITIALIZED
	}
	return f(lib.cfg, present(lib.cfg))
}
