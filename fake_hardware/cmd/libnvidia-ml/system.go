package main

/*
#include <stdlib.h>
*/
import "C"

import (
	"strings"
	"sync"
	"unsafe"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// The exported functions take nvml.h's handles as void pointers and its structures as pointers
// to go-nvml's Go definitions of them; enums and nvmlReturn_t are C ints.

func ret(r nvml.Return) C.int { return C.int(r) }

// putString copies s with its terminating NUL into a caller's buffer of length bytes.
func putString(dst *C.char, length C.uint, s string) nvml.Return {
	if dst == nil {
		return nvml.ERROR_INVALID_ARGUMENT
	}
	if len(s)+1 > int(length) {
		return nvml.ERROR_INSUFFICIENT_SIZE
	}
	buf := unsafe.Slice((*byte)(unsafe.Pointer(dst)), length)
	buf[copy(buf, s)] = 0
	return nvml.SUCCESS
}

//export nvmlInit_v2
func nvmlInit_v2() C.int { return ret(initialize()) }

//export nvmlInit
func nvmlInit() C.int { return ret(initialize()) }

// nvmlInitWithFlags ignores the flags: NO_GPUS changes nothing (nvmlInit never fails for want of
// GPUs here) and NO_ATTACH has nothing to attach to.
//
//export nvmlInitWithFlags
func nvmlInitWithFlags(flags C.uint) C.int { return ret(initialize()) }

//export nvmlShutdown
func nvmlShutdown() C.int { return ret(shutdown()) }

// errorStrings keeps each answer of nvmlErrorString, which callers never free.
var errorStrings = struct {
	sync.Mutex
	byCode map[C.int]*C.char
}{byCode: map[C.int]*C.char{}}

// nvmlErrorString answers with the library's own copy of go-nvml, whose Return text is the enum's
// name (ERROR_NOT_SUPPORTED): that copy never loads an NVML, so it keeps its built-in table.
//
//export nvmlErrorString
func nvmlErrorString(result C.int) *C.char {
	errorStrings.Lock()
	defer errorStrings.Unlock()
	s, ok := errorStrings.byCode[result]
	if !ok {
		s = C.CString(nvml.Return(result).Error())
		errorStrings.byCode[result] = s
	}
	return s
}

func versionString(dst *C.char, length C.uint, version func(*config) string) C.int {
	return ret(gpus(func(cfg *config, _ []*gpu) nvml.Return { return putString(dst, length, version(cfg)) }))
}

//export nvmlSystemGetDriverVersion
func nvmlSystemGetDriverVersion(version *C.char, length C.uint) C.int {
	return versionString(version, length, func(cfg *config) string { return cfg.DriverVersion })
}

//export nvmlSystemGetNVMLVersion
func nvmlSystemGetNVMLVersion(version *C.char, length C.uint) C.int {
	return versionString(version, length, func(cfg *config) string { return cfg.NVMLVersion })
}

//export nvmlSystemGetCudaDriverVersion
func nvmlSystemGetCudaDriverVersion(version *C.int) C.int {
	return nvmlSystemGetCudaDriverVersion_v2(version)
}

//export nvmlSystemGetCudaDriverVersion_v2
func nvmlSystemGetCudaDriverVersion_v2(version *C.int) C.int {
	return ret(gpus(func(cfg *config, _ []*gpu) nvml.Return {
		if version == nil {
			return nvml.ERROR_INVALID_ARGUMENT
		}
		*version = C.int(cfg.CudaDriverVersion)
		return nvml.SUCCESS
	}))
}

//export nvmlDeviceGetCount_v2
func nvmlDeviceGetCount_v2(count *C.uint) C.int {
	return ret(gpus(func(_ *config, present []*gpu) nvml.Return {
		if count == nil {
			return nvml.ERROR_INVALID_ARGUMENT
		}
		*count = C.uint(len(present))
		return nvml.SUCCESS
	}))
}

//export nvmlDeviceGetCount
func nvmlDeviceGetCount(count *C.uint) C.int { return nvmlDeviceGetCount_v2(count) }

// handleOf finds the first GPU present that match accepts and writes its handle.
func handleOf(device *unsafe.Pointer, match func(i int, g *gpu) bool) C.int {
	return ret(gpus(func(_ *config, present []*gpu) nvml.Return {
		if device == nil {
			return nvml.ERROR_INVALID_ARGUMENT
		}
		for i, g := range present {
			if match(i, g) {
				*device = handle(object{bdf: g.bdf, mig: -1})
				return nvml.SUCCESS
			}
		}
		return nvml.ERROR_NOT_FOUND
	}))
}

//export nvmlDeviceGetHandleByIndex_v2
func nvmlDeviceGetHandleByIndex_v2(index C.uint, device *unsafe.Pointer) C.int {
	r := handleOf(device, func(i int, _ *gpu) bool { return i == int(index) })
	if r == ret(nvml.ERROR_NOT_FOUND) {
		return ret(nvml.ERROR_INVALID_ARGUMENT) // NVML's answer for an index beyond the count
	}
	return r
}

//export nvmlDeviceGetHandleByIndex
func nvmlDeviceGetHandleByIndex(index C.uint, device *unsafe.Pointer) C.int {
	return nvmlDeviceGetHandleByIndex_v2(index, device)
}

// nvmlDeviceGetHandleByUUID takes a GPU's UUID or a MIG device's.
//
//export nvmlDeviceGetHandleByUUID
func nvmlDeviceGetHandleByUUID(uuid *C.char, device *unsafe.Pointer) C.int {
	if uuid == nil {
		return ret(nvml.ERROR_INVALID_ARGUMENT)
	}
	want := C.GoString(uuid)
	return ret(gpus(func(_ *config, present []*gpu) nvml.Return {
		if device == nil {
			return nvml.ERROR_INVALID_ARGUMENT
		}
		for _, g := range present {
			if g.UUID == want {
				*device = handle(object{bdf: g.bdf, mig: -1})
				return nvml.SUCCESS
			}
			for i, m := range g.MigDevices {
				if m.UUID == want {
					*device = handle(object{bdf: g.bdf, mig: i})
					return nvml.SUCCESS
				}
			}
		}
		return nvml.ERROR_NOT_FOUND
	}))
}

// nvmlDeviceGetHandleByPciBusId_v2 takes the bus ID as NVML writes it (00000000:18:00.0), as
// Linux does (0000:18:00.0) or without the domain (18:00.0), in either case.
//
//export nvmlDeviceGetHandleByPciBusId_v2
func nvmlDeviceGetHandleByPciBusId_v2(busID *C.char, device *unsafe.Pointer) C.int {
	if busID == nil {
		return ret(nvml.ERROR_INVALID_ARGUMENT)
	}
	id := C.GoString(busID)
	if strings.Count(id, ":") == 1 {
		id = "0:" + id
	}
	address, err := parseAddress(id)
	if err != nil {
		return ret(nvml.ERROR_INVALID_ARGUMENT)
	}
	return handleOf(device, func(_ int, g *gpu) bool { return g.address == address })
}

//export nvmlDeviceGetHandleByPciBusId
func nvmlDeviceGetHandleByPciBusId(busID *C.char, device *unsafe.Pointer) C.int {
	return nvmlDeviceGetHandleByPciBusId_v2(busID, device)
}
