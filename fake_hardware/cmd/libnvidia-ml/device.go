package main

/*
#include <stdlib.h>
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

const (
	maxMigDevices = 7 // one per compute slice of a MIG-capable GPU
	// Xid errors, as the kernel module reports them
	xidDoubleBitECC = 48
	xidFallenOffBus = 79
)

var architectures = map[string]uint32{
	"volta": nvml.DEVICE_ARCH_VOLTA, "turing": nvml.DEVICE_ARCH_TURING, "ampere": nvml.DEVICE_ARCH_AMPERE,
	"ada": nvml.DEVICE_ARCH_ADA, "hopper": nvml.DEVICE_ARCH_HOPPER, "blackwell": nvml.DEVICE_ARCH_BLACKWELL,
	"rubin": nvml.DEVICE_ARCH_RUBIN,
}

// onDevice resolves a handle and answers with f, given the GPU and, for a MIG device's handle, the MIG device.
func onDevice(device unsafe.Pointer, f func(g *gpu, mig *migDevice) nvml.Return) C.int {
	g, mig, r := resolve(device)
	if r != nvml.SUCCESS {
		return ret(r)
	}
	return ret(f(g, mig))
}

// set writes v to a caller's out parameter.
func set[T any](p *T, v T) nvml.Return {
	if p == nil {
		return nvml.ERROR_INVALID_ARGUMENT
	}
	*p = v
	return nvml.SUCCESS
}

func putInt8s(dst []int8, s string) {
	for i := range dst {
		dst[i] = 0
	}
	for i := 0; i < len(s) && i < len(dst)-1; i++ {
		dst[i] = int8(s[i])
	}
}

//export nvmlDeviceGetName
func nvmlDeviceGetName(device unsafe.Pointer, name *C.char, length C.uint) C.int {
	return onDevice(device, func(g *gpu, mig *migDevice) nvml.Return {
		if mig != nil {
			return putString(name, length, mig.Name)
		}
		return putString(name, length, g.Name)
	})
}

//export nvmlDeviceGetUUID
func nvmlDeviceGetUUID(device unsafe.Pointer, uuid *C.char, length C.uint) C.int {
	return onDevice(device, func(g *gpu, mig *migDevice) nvml.Return {
		if mig != nil {
			return putString(uuid, length, mig.UUID)
		}
		return putString(uuid, length, g.UUID)
	})
}

//export nvmlDeviceGetSerial
func nvmlDeviceGetSerial(device unsafe.Pointer, serial *C.char, length C.uint) C.int {
	return onDevice(device, func(g *gpu, _ *migDevice) nvml.Return { return putString(serial, length, g.Serial) })
}

//export nvmlDeviceGetMinorNumber
func nvmlDeviceGetMinorNumber(device unsafe.Pointer, minor *C.uint) C.int {
	return onDevice(device, func(g *gpu, _ *migDevice) nvml.Return { return set(minor, C.uint(g.MinorNumber)) })
}

//export nvmlDeviceGetIndex
func nvmlDeviceGetIndex(device unsafe.Pointer, index *C.uint) C.int {
	return ret(gpus(func(_ *config, present []*gpu) nvml.Return {
		o, ok := lib.objects[device]
		if !ok || o.kind != deviceHandle {
			return nvml.ERROR_INVALID_ARGUMENT
		}
		for i, g := range present {
			if g.bdf == o.bdf {
				return set(index, C.uint(i))
			}
		}
		return nvml.ERROR_GPU_IS_LOST
	}))
}

func memoryBytes(g *gpu, mig *migDevice) uint64 {
	if mig != nil {
		return mig.MemoryBytes
	}
	return g.MemoryBytes
}

// nvmlDeviceGetMemoryInfo answers with all memory free: nothing runs on an emulated GPU.
//
//export nvmlDeviceGetMemoryInfo
func nvmlDeviceGetMemoryInfo(device unsafe.Pointer, memory unsafe.Pointer) C.int {
	return onDevice(device, func(g *gpu, mig *migDevice) nvml.Return {
		total := memoryBytes(g, mig)
		return set((*nvml.Memory)(memory), nvml.Memory{Total: total, Free: total})
	})
}

//export nvmlDeviceGetMemoryInfo_v2
func nvmlDeviceGetMemoryInfo_v2(device unsafe.Pointer, memory unsafe.Pointer) C.int {
	return onDevice(device, func(g *gpu, mig *migDevice) nvml.Return {
		m := (*nvml.Memory_v2)(memory)
		version := nvml.STRUCT_VERSION(nvml.Memory_v2{}, 2)
		if m == nil {
			return nvml.ERROR_INVALID_ARGUMENT
		}
		if m.Version != version {
			return nvml.ERROR_ARGUMENT_VERSION_MISMATCH
		}
		total := memoryBytes(g, mig)
		*m = nvml.Memory_v2{Version: version, Total: total, Free: total}
		return nvml.SUCCESS
	})
}

// nvmlDeviceGetPciInfo_v3 writes the bus ID as NVML does: an 8-digit domain, upper-case hex.
//
//export nvmlDeviceGetPciInfo_v3
func nvmlDeviceGetPciInfo_v3(device unsafe.Pointer, pci unsafe.Pointer) C.int {
	return onDevice(device, func(g *gpu, _ *migDevice) nvml.Return {
		a := g.address
		info := nvml.PciInfo{Domain: a.domain, Bus: a.bus, Device: a.slot, PciDeviceId: g.device<<16 | nvidia,
			PciSubSystemId: g.subsystemDevice<<16 | g.subsystemVendor}
		putInt8s(info.BusIdLegacy[:], fmt.Sprintf("%04X:%02X:%02X.%X", a.domain, a.bus, a.slot, a.function))
		putInt8s(info.BusId[:], fmt.Sprintf("%08X:%02X:%02X.%X", a.domain, a.bus, a.slot, a.function))
		return set((*nvml.PciInfo)(pci), info)
	})
}

//export nvmlDeviceGetNumaNodeId
func nvmlDeviceGetNumaNodeId(device unsafe.Pointer, node *C.uint) C.int {
	return onDevice(device, func(g *gpu, _ *migDevice) nvml.Return {
		if g.numa < 0 {
			return nvml.ERROR_NOT_SUPPORTED
		}
		return set(node, C.uint(g.numa))
	})
}

// nvmlDeviceGetCpuAffinity sets a bit per CPU of the GPU's local_cpulist in cpuSetSize unsigned longs.
//
//export nvmlDeviceGetCpuAffinity
func nvmlDeviceGetCpuAffinity(device unsafe.Pointer, cpuSetSize C.uint, cpuSet *C.ulong) C.int {
	return onDevice(device, func(g *gpu, _ *migDevice) nvml.Return {
		if cpuSet == nil {
			return nvml.ERROR_INVALID_ARGUMENT
		}
		words := unsafe.Slice(cpuSet, cpuSetSize)
		bits := C.uint(unsafe.Sizeof(C.ulong(0)) * 8)
		for i := range words {
			words[i] = 0
		}
		for _, cpu := range g.cpus {
			if C.uint(cpu)/bits < cpuSetSize {
				words[C.uint(cpu)/bits] |= 1 << (C.uint(cpu) % bits)
			}
		}
		return nvml.SUCCESS
	})
}

//export nvmlDeviceGetCudaComputeCapability
func nvmlDeviceGetCudaComputeCapability(device unsafe.Pointer, major, minor *C.int) C.int {
	return onDevice(device, func(g *gpu, _ *migDevice) nvml.Return {
		switch {
		case g.ComputeCapability == nil:
			return nvml.ERROR_NOT_SUPPORTED
		case major == nil || minor == nil:
			return nvml.ERROR_INVALID_ARGUMENT
		}
		*major, *minor = C.int(g.ComputeCapability[0]), C.int(g.ComputeCapability[1])
		return nvml.SUCCESS
	})
}

//export nvmlDeviceGetArchitecture
func nvmlDeviceGetArchitecture(device unsafe.Pointer, arch *C.uint) C.int {
	return onDevice(device, func(g *gpu, _ *migDevice) nvml.Return {
		a, ok := architectures[g.Architecture]
		if !ok {
			a = nvml.DEVICE_ARCH_UNKNOWN
		}
		return set(arch, C.uint(a))
	})
}

//export nvmlDeviceGetBrand
func nvmlDeviceGetBrand(device unsafe.Pointer, brand *C.int) C.int {
	return onDevice(device, func(*gpu, *migDevice) nvml.Return { return set(brand, C.int(nvml.BRAND_NVIDIA)) })
}

// nvmlDeviceGetMigMode: MIG is on where the profile gives the GPU MIG devices; it never changes
// (nvmlDeviceSetMigMode is one of the NOT_SUPPORTED functions).
//
//export nvmlDeviceGetMigMode
func nvmlDeviceGetMigMode(device unsafe.Pointer, current, pending *C.uint) C.int {
	return onDevice(device, func(g *gpu, _ *migDevice) nvml.Return {
		switch {
		case !g.MigCapable:
			return nvml.ERROR_NOT_SUPPORTED
		case current == nil || pending == nil:
			return nvml.ERROR_INVALID_ARGUMENT
		}
		mode := C.uint(nvml.DEVICE_MIG_DISABLE)
		if len(g.MigDevices) > 0 {
			mode = nvml.DEVICE_MIG_ENABLE
		}
		*current, *pending = mode, mode
		return nvml.SUCCESS
	})
}

//export nvmlDeviceGetMaxMigDeviceCount
func nvmlDeviceGetMaxMigDeviceCount(device unsafe.Pointer, count *C.uint) C.int {
	return onDevice(device, func(g *gpu, _ *migDevice) nvml.Return {
		if !g.MigCapable {
			return nvml.ERROR_NOT_SUPPORTED
		}
		return set(count, maxMigDevices)
	})
}

// nvmlDeviceGetMigDeviceHandleByIndex answers NOT_FOUND for an index below the maximum without a
// MIG device, as NVML does; go-nvlib's VisitMigDevices skips those.
//
//export nvmlDeviceGetMigDeviceHandleByIndex
func nvmlDeviceGetMigDeviceHandleByIndex(device unsafe.Pointer, index C.uint, migDevice *unsafe.Pointer) C.int {
	g, mig, r := resolve(device)
	switch {
	case r != nvml.SUCCESS:
		return ret(r)
	case !g.MigCapable:
		return ret(nvml.ERROR_NOT_SUPPORTED)
	case mig != nil || migDevice == nil || index >= maxMigDevices:
		return ret(nvml.ERROR_INVALID_ARGUMENT)
	case int(index) >= len(g.MigDevices):
		return ret(nvml.ERROR_NOT_FOUND)
	}
	lib.Lock()
	defer lib.Unlock()
	*migDevice = handle(object{bdf: g.bdf, mig: int(index)})
	return ret(nvml.SUCCESS)
}

//export nvmlDeviceGetDeviceHandleFromMigDeviceHandle
func nvmlDeviceGetDeviceHandleFromMigDeviceHandle(migDevice unsafe.Pointer, device *unsafe.Pointer) C.int {
	g, mig, r := resolve(migDevice)
	switch {
	case r != nvml.SUCCESS:
		return ret(r)
	case mig == nil || device == nil:
		return ret(nvml.ERROR_INVALID_ARGUMENT)
	}
	lib.Lock()
	defer lib.Unlock()
	*device = handle(object{bdf: g.bdf, mig: -1})
	return ret(nvml.SUCCESS)
}

//export nvmlDeviceIsMigDeviceHandle
func nvmlDeviceIsMigDeviceHandle(device unsafe.Pointer, isMig *C.uint) C.int {
	return onDevice(device, func(_ *gpu, mig *migDevice) nvml.Return {
		if mig != nil {
			return set(isMig, 1)
		}
		return set(isMig, 0)
	})
}

//export nvmlDeviceGetGpuInstanceId
func nvmlDeviceGetGpuInstanceId(device unsafe.Pointer, id *C.uint) C.int {
	return onDevice(device, func(_ *gpu, mig *migDevice) nvml.Return {
		if mig == nil {
			return nvml.ERROR_NOT_SUPPORTED
		}
		return set(id, C.uint(mig.GpuInstanceID))
	})
}

//export nvmlDeviceGetComputeInstanceId
func nvmlDeviceGetComputeInstanceId(device unsafe.Pointer, id *C.uint) C.int {
	return onDevice(device, func(_ *gpu, mig *migDevice) nvml.Return {
		if mig == nil {
			return nvml.ERROR_NOT_SUPPORTED
		}
		return set(id, C.uint(mig.ComputeInstanceID))
	})
}

// nvmlDeviceGetEccMode: ECC is on, as data-centre GPUs ship.
//
//export nvmlDeviceGetEccMode
func nvmlDeviceGetEccMode(device unsafe.Pointer, current, pending *C.int) C.int {
	return onDevice(device, func(*gpu, *migDevice) nvml.Return {
		if current == nil || pending == nil {
			return nvml.ERROR_INVALID_ARGUMENT
		}
		*current, *pending = C.int(nvml.FEATURE_ENABLED), C.int(nvml.FEATURE_ENABLED)
		return nvml.SUCCESS
	})
}

// nvmlDeviceGetTotalEccErrors counts the double-bit error behind an unhealthy GPU's Xid 48: one
// uncorrected error while the GPU is unhealthy, none otherwise.
//
//export nvmlDeviceGetTotalEccErrors
func nvmlDeviceGetTotalEccErrors(device unsafe.Pointer, errorType, counterType C.int, count *C.ulonglong) C.int {
	return onDevice(device, func(g *gpu, _ *migDevice) nvml.Return {
		if errorType < 0 || errorType >= C.int(nvml.MEMORY_ERROR_TYPE_COUNT) || counterType < 0 ||
			counterType >= C.int(nvml.ECC_COUNTER_TYPE_COUNT) {
			return nvml.ERROR_INVALID_ARGUMENT
		}
		if errorType == C.int(nvml.MEMORY_ERROR_TYPE_UNCORRECTED) && !g.healthy() {
			return set(count, 1)
		}
		return set(count, 0)
	})
}
