package main

/*
#include <stdlib.h>
*/
import "C"

import (
	"unsafe"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// MIG's GPU and compute instances, from the GPU's profiles and MIG devices in nvml.json. A MIG
// device is one GPU instance holding one compute instance that spans it, as the lab makes them, so
// a GPU instance offers one compute instance profile: the whole instance. The layout is the
// hardware profile's and never changes: creating or destroying instances is NOT_SUPPORTED.
// Multiprocessor and engine counts are not in the hardware profile; they answer 0.

// giProfile is how NVML knows a GPU instance profile: its NVML_GPU_INSTANCE_PROFILE_* index and
// the profile ID `nvidia-smi mig -lgip` lists for it on A100 and H100 parts (1g.10gb 19, 1g.20gb
// 15, 2g.20gb 14, 3g.40gb 9, 4g.40gb 5, 7g.80gb 0). A one-slice profile with twice the memory is
// the second one-slice profile (REV2).
func giProfile(p *migProfile) (index, id uint32, ok bool) {
	switch {
	case p.Slices == 1 && p.MemorySlices == 1:
		return nvml.GPU_INSTANCE_PROFILE_1_SLICE, 19, true
	case p.Slices == 1 && p.MemorySlices == 2:
		return nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2, 15, true
	case p.Slices == 2:
		return nvml.GPU_INSTANCE_PROFILE_2_SLICE, 14, true
	case p.Slices == 3:
		return nvml.GPU_INSTANCE_PROFILE_3_SLICE, 9, true
	case p.Slices == 4:
		return nvml.GPU_INSTANCE_PROFILE_4_SLICE, 5, true
	case p.Slices == 7:
		return nvml.GPU_INSTANCE_PROFILE_7_SLICE, 0, true
	}
	return 0, 0, false
}

// ciProfile is the NVML_COMPUTE_INSTANCE_PROFILE_* index of a compute instance of so many slices,
// which is also its profile ID.
func ciProfile(slices uint32) (uint32, bool) {
	index, ok := map[uint32]uint32{1: nvml.COMPUTE_INSTANCE_PROFILE_1_SLICE, 2: nvml.COMPUTE_INSTANCE_PROFILE_2_SLICE,
		3: nvml.COMPUTE_INSTANCE_PROFILE_3_SLICE, 4: nvml.COMPUTE_INSTANCE_PROFILE_4_SLICE,
		6: nvml.COMPUTE_INSTANCE_PROFILE_6_SLICE, 7: nvml.COMPUTE_INSTANCE_PROFILE_7_SLICE,
		8: nvml.COMPUTE_INSTANCE_PROFILE_8_SLICE}[slices]
	return index, ok
}

// profileWhere is the GPU's profile that match accepts, given its index and ID.
func (g *gpu) profileWhere(match func(index, id uint32) bool) *migProfile {
	for i := range g.MigProfiles {
		if index, id, ok := giProfile(&g.MigProfiles[i]); ok && match(index, id) {
			return &g.MigProfiles[i]
		}
	}
	return nil
}

func (g *gpu) profileByID(id uint32) *migProfile {
	return g.profileWhere(func(_, pid uint32) bool { return pid == id })
}

func (g *gpu) profileOf(m *migDevice) *migProfile {
	for i := range g.MigProfiles {
		if g.MigProfiles[i].Name == m.Profile {
			return &g.MigProfiles[i]
		}
	}
	return nil
}

func mebibytes(bytes uint64) uint64 { return bytes >> 20 }

func giProfileInfo(p *migProfile) nvml.GpuInstanceProfileInfo {
	_, id, _ := giProfile(p)
	return nvml.GpuInstanceProfileInfo{Id: id, SliceCount: p.Slices, InstanceCount: p.InstanceCount,
		MemorySizeMB: mebibytes(p.MemoryBytes)}
}

// onMigGPU resolves a full GPU's handle (not a MIG device's) of a MIG-capable GPU.
func onMigGPU(device unsafe.Pointer, f func(g *gpu) nvml.Return) C.int {
	return onDevice(device, func(g *gpu, mig *migDevice) nvml.Return {
		switch {
		case mig != nil:
			return nvml.ERROR_INVALID_ARGUMENT
		case !g.MigCapable:
			return nvml.ERROR_NOT_SUPPORTED
		}
		return f(g)
	})
}

//export nvmlDeviceGetGpuInstanceProfileInfo
func nvmlDeviceGetGpuInstanceProfileInfo(device unsafe.Pointer, profile C.uint, info unsafe.Pointer) C.int {
	return onMigGPU(device, func(g *gpu) nvml.Return {
		p := g.profileWhere(func(index, _ uint32) bool { return index == uint32(profile) })
		if p == nil {
			return nvml.ERROR_NOT_SUPPORTED
		}
		return set((*nvml.GpuInstanceProfileInfo)(info), giProfileInfo(p))
	})
}

// putGiProfileInfoV writes a versioned profile info (v2 or v3, which the caller names in its version field).
func putGiProfileInfoV(p *migProfile, info unsafe.Pointer) nvml.Return {
	if info == nil {
		return nvml.ERROR_INVALID_ARGUMENT
	}
	i := giProfileInfo(p)
	switch version := *(*uint32)(info); version {
	case nvml.STRUCT_VERSION(nvml.GpuInstanceProfileInfo_v2{}, 2):
		v := nvml.GpuInstanceProfileInfo_v2{Version: version, Id: i.Id, SliceCount: i.SliceCount,
			InstanceCount: i.InstanceCount, MemorySizeMB: i.MemorySizeMB}
		putInt8s(v.Name[:], "MIG "+p.Name)
		*(*nvml.GpuInstanceProfileInfo_v2)(info) = v
	case nvml.STRUCT_VERSION(nvml.GpuInstanceProfileInfo_v3{}, 3):
		v := nvml.GpuInstanceProfileInfo_v3{Version: version, Id: i.Id, SliceCount: i.SliceCount,
			InstanceCount: i.InstanceCount, MemorySizeMB: i.MemorySizeMB}
		putInt8s(v.Name[:], "MIG "+p.Name)
		*(*nvml.GpuInstanceProfileInfo_v3)(info) = v
	default:
		return nvml.ERROR_ARGUMENT_VERSION_MISMATCH
	}
	return nvml.SUCCESS
}

//export nvmlDeviceGetGpuInstanceProfileInfoV
func nvmlDeviceGetGpuInstanceProfileInfoV(device unsafe.Pointer, profile C.uint, info unsafe.Pointer) C.int {
	return onMigGPU(device, func(g *gpu) nvml.Return {
		p := g.profileWhere(func(index, _ uint32) bool { return index == uint32(profile) })
		if p == nil {
			return nvml.ERROR_NOT_SUPPORTED
		}
		return putGiProfileInfoV(p, info)
	})
}

//export nvmlDeviceGetGpuInstanceProfileInfoByIdV
func nvmlDeviceGetGpuInstanceProfileInfoByIdV(device unsafe.Pointer, profileID C.uint, info unsafe.Pointer) C.int {
	return onMigGPU(device, func(g *gpu) nvml.Return {
		p := g.profileByID(uint32(profileID))
		if p == nil {
			return nvml.ERROR_NOT_SUPPORTED
		}
		return putGiProfileInfoV(p, info)
	})
}

// nvmlDeviceGetGpuInstancePossiblePlacements_v2 answers, as NVML does, whether MIG is on or not.
//
//export nvmlDeviceGetGpuInstancePossiblePlacements_v2
func nvmlDeviceGetGpuInstancePossiblePlacements_v2(device unsafe.Pointer, profileID C.uint, placements unsafe.Pointer, count *C.uint) C.int {
	return onMigGPU(device, func(g *gpu) nvml.Return {
		p := g.profileByID(uint32(profileID))
		switch {
		case p == nil:
			return nvml.ERROR_NOT_SUPPORTED
		case count == nil:
			return nvml.ERROR_INVALID_ARGUMENT
		case placements == nil:
			*count = C.uint(len(p.Placements))
			return nvml.SUCCESS
		case int(*count) < len(p.Placements):
			*count = C.uint(len(p.Placements))
			return nvml.ERROR_INSUFFICIENT_SIZE
		}
		out := unsafe.Slice((*nvml.GpuInstancePlacement)(placements), len(p.Placements))
		for i, start := range p.Placements {
			out[i] = nvml.GpuInstancePlacement{Start: start, Size: p.MemorySlices}
		}
		*count = C.uint(len(p.Placements))
		return nvml.SUCCESS
	})
}

// onMigEnabledGPU is onMigGPU for what needs MIG mode on: a GPU with MIG devices.
func onMigEnabledGPU(device unsafe.Pointer, f func(g *gpu) nvml.Return) C.int {
	return onMigGPU(device, func(g *gpu) nvml.Return {
		if len(g.MigDevices) == 0 {
			return nvml.ERROR_NOT_SUPPORTED
		}
		return f(g)
	})
}

// nvmlDeviceGetGpuInstanceRemainingCapacity counts the profile's placements that no MIG device overlaps.
//
//export nvmlDeviceGetGpuInstanceRemainingCapacity
func nvmlDeviceGetGpuInstanceRemainingCapacity(device unsafe.Pointer, profileID C.uint, count *C.uint) C.int {
	return onMigEnabledGPU(device, func(g *gpu) nvml.Return {
		p := g.profileByID(uint32(profileID))
		if p == nil {
			return nvml.ERROR_NOT_SUPPORTED
		}
		taken := map[uint32]bool{}
		for i := range g.MigDevices {
			if q := g.profileOf(&g.MigDevices[i]); q != nil {
				for s := g.MigDevices[i].PlacementStart; s < g.MigDevices[i].PlacementStart+q.MemorySlices; s++ {
					taken[s] = true
				}
			}
		}
		free := 0
		for _, start := range p.Placements {
			overlaps := false
			for s := start; s < start+p.MemorySlices; s++ {
				overlaps = overlaps || taken[s]
			}
			if !overlaps {
				free++
			}
		}
		return set(count, C.uint(free))
	})
}

// instanceHandles writes the handles of the GPU's MIG devices that match, as GPU or compute instances.
func instanceHandles(g *gpu, kind handleKind, match func(m *migDevice) bool, handles *unsafe.Pointer, count *C.uint) nvml.Return {
	if handles == nil || count == nil {
		return nvml.ERROR_INVALID_ARGUMENT
	}
	var found []unsafe.Pointer
	lib.Lock()
	for i := range g.MigDevices {
		if match(&g.MigDevices[i]) {
			found = append(found, handle(object{bdf: g.bdf, mig: i, kind: kind}))
		}
	}
	lib.Unlock()
	if int(*count) < len(found) {
		*count = C.uint(len(found))
		return nvml.ERROR_INSUFFICIENT_SIZE
	}
	copy(unsafe.Slice(handles, len(found)), found)
	*count = C.uint(len(found))
	return nvml.SUCCESS
}

//export nvmlDeviceGetGpuInstances
func nvmlDeviceGetGpuInstances(device unsafe.Pointer, profileID C.uint, instances *unsafe.Pointer, count *C.uint) C.int {
	return onMigEnabledGPU(device, func(g *gpu) nvml.Return {
		p := g.profileByID(uint32(profileID))
		if p == nil {
			return nvml.ERROR_NOT_SUPPORTED
		}
		return instanceHandles(g, gpuInstanceHandle, func(m *migDevice) bool { return m.Profile == p.Name }, instances, count)
	})
}

//export nvmlDeviceGetGpuInstanceById
func nvmlDeviceGetGpuInstanceById(device unsafe.Pointer, id C.uint, instance *unsafe.Pointer) C.int {
	return onMigEnabledGPU(device, func(g *gpu) nvml.Return {
		if instance == nil {
			return nvml.ERROR_INVALID_ARGUMENT
		}
		for i := range g.MigDevices {
			if g.MigDevices[i].GpuInstanceID == uint32(id) {
				lib.Lock()
				*instance = handle(object{bdf: g.bdf, mig: i, kind: gpuInstanceHandle})
				lib.Unlock()
				return nvml.SUCCESS
			}
		}
		return nvml.ERROR_NOT_FOUND
	})
}

// gpuInstanceInfo is nvmlGpuInstanceInfo_t, whose Go twin go-nvml keeps unexported.
type gpuInstanceInfo struct {
	device    unsafe.Pointer
	id        uint32
	profileID uint32
	placement nvml.GpuInstancePlacement
}

// computeInstanceInfo is nvmlComputeInstanceInfo_t, likewise.
type computeInstanceInfo struct {
	device      unsafe.Pointer
	gpuInstance unsafe.Pointer
	id          uint32
	profileID   uint32
	placement   nvml.ComputeInstancePlacement
}

// onInstance resolves a GPU or compute instance's handle to its GPU, MIG device and the device's profile.
func onInstance(h unsafe.Pointer, kind handleKind, f func(g *gpu, m *migDevice, p *migProfile) nvml.Return) C.int {
	g, m, r := resolveKind(h, kind)
	switch {
	case r != nvml.SUCCESS:
		return ret(r)
	case m == nil || g.profileOf(m) == nil:
		return ret(nvml.ERROR_INVALID_ARGUMENT)
	}
	return ret(f(g, m, g.profileOf(m)))
}

// handleOfMig is the handle of the GPU's MIG device m as the kind given (nil for the GPU itself).
func handleOfMig(g *gpu, m *migDevice, kind handleKind) unsafe.Pointer {
	mig := -1
	for i := range g.MigDevices {
		if m != nil && g.MigDevices[i].GpuInstanceID == m.GpuInstanceID {
			mig = i
		}
	}
	lib.Lock()
	defer lib.Unlock()
	return handle(object{bdf: g.bdf, mig: mig, kind: kind})
}

//export nvmlGpuInstanceGetInfo
func nvmlGpuInstanceGetInfo(instance unsafe.Pointer, info unsafe.Pointer) C.int {
	return onInstance(instance, gpuInstanceHandle, func(g *gpu, m *migDevice, p *migProfile) nvml.Return {
		_, id, _ := giProfile(p)
		return set((*gpuInstanceInfo)(info), gpuInstanceInfo{device: handleOfMig(g, nil, deviceHandle),
			id: m.GpuInstanceID, profileID: id, placement: nvml.GpuInstancePlacement{Start: m.PlacementStart, Size: p.MemorySlices}})
	})
}

// ciProfileOf is the compute instance profile spanning a GPU instance of p: the one the lab makes.
func ciProfileOf(p *migProfile) (nvml.ComputeInstanceProfileInfo, bool) {
	index, ok := ciProfile(p.Slices)
	return nvml.ComputeInstanceProfileInfo{Id: index, SliceCount: p.Slices, InstanceCount: 1}, ok
}

// onCiProfile answers for the compute instance profile and engine profile asked of a GPU instance.
func onCiProfile(instance unsafe.Pointer, profile, engProfile C.uint, f func(p *migProfile, ci nvml.ComputeInstanceProfileInfo) nvml.Return) C.int {
	return onInstance(instance, gpuInstanceHandle, func(_ *gpu, _ *migDevice, p *migProfile) nvml.Return {
		ci, ok := ciProfileOf(p)
		if !ok || uint32(profile) != ci.Id || uint32(engProfile) != nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED {
			return nvml.ERROR_NOT_SUPPORTED
		}
		return f(p, ci)
	})
}

//export nvmlGpuInstanceGetComputeInstanceProfileInfo
func nvmlGpuInstanceGetComputeInstanceProfileInfo(instance unsafe.Pointer, profile, engProfile C.uint, info unsafe.Pointer) C.int {
	return onCiProfile(instance, profile, engProfile, func(_ *migProfile, ci nvml.ComputeInstanceProfileInfo) nvml.Return {
		return set((*nvml.ComputeInstanceProfileInfo)(info), ci)
	})
}

//export nvmlGpuInstanceGetComputeInstanceProfileInfoV
func nvmlGpuInstanceGetComputeInstanceProfileInfoV(instance unsafe.Pointer, profile, engProfile C.uint, info unsafe.Pointer) C.int {
	return onCiProfile(instance, profile, engProfile, func(p *migProfile, ci nvml.ComputeInstanceProfileInfo) nvml.Return {
		if info == nil {
			return nvml.ERROR_INVALID_ARGUMENT
		}
		name := "MIG " + p.Name
		switch version := *(*uint32)(info); version {
		case nvml.STRUCT_VERSION(nvml.ComputeInstanceProfileInfo_v2{}, 2):
			v := nvml.ComputeInstanceProfileInfo_v2{Version: version, Id: ci.Id, SliceCount: ci.SliceCount, InstanceCount: ci.InstanceCount}
			putInt8s(v.Name[:], name)
			*(*nvml.ComputeInstanceProfileInfo_v2)(info) = v
		case nvml.STRUCT_VERSION(nvml.ComputeInstanceProfileInfo_v3{}, 3):
			v := nvml.ComputeInstanceProfileInfo_v3{Version: version, Id: ci.Id, SliceCount: ci.SliceCount, InstanceCount: ci.InstanceCount}
			putInt8s(v.Name[:], name)
			*(*nvml.ComputeInstanceProfileInfo_v3)(info) = v
		default:
			return nvml.ERROR_ARGUMENT_VERSION_MISMATCH
		}
		return nvml.SUCCESS
	})
}

//export nvmlGpuInstanceGetComputeInstances
func nvmlGpuInstanceGetComputeInstances(instance unsafe.Pointer, profileID C.uint, instances *unsafe.Pointer, count *C.uint) C.int {
	return onInstance(instance, gpuInstanceHandle, func(g *gpu, m *migDevice, p *migProfile) nvml.Return {
		ci, ok := ciProfileOf(p)
		if !ok || uint32(profileID) != ci.Id {
			return nvml.ERROR_NOT_SUPPORTED
		}
		return instanceHandles(g, computeInstanceHandle, func(d *migDevice) bool { return d.GpuInstanceID == m.GpuInstanceID }, instances, count)
	})
}

//export nvmlGpuInstanceGetComputeInstanceById
func nvmlGpuInstanceGetComputeInstanceById(instance unsafe.Pointer, id C.uint, computeInstance *unsafe.Pointer) C.int {
	return onInstance(instance, gpuInstanceHandle, func(g *gpu, m *migDevice, _ *migProfile) nvml.Return {
		switch {
		case computeInstance == nil:
			return nvml.ERROR_INVALID_ARGUMENT
		case uint32(id) != m.ComputeInstanceID:
			return nvml.ERROR_NOT_FOUND
		}
		*computeInstance = handleOfMig(g, m, computeInstanceHandle)
		return nvml.SUCCESS
	})
}

//export nvmlComputeInstanceGetInfo_v2
func nvmlComputeInstanceGetInfo_v2(computeInstance unsafe.Pointer, info unsafe.Pointer) C.int {
	return onInstance(computeInstance, computeInstanceHandle, func(g *gpu, m *migDevice, p *migProfile) nvml.Return {
		ci, _ := ciProfileOf(p)
		return set((*computeInstanceInfo)(info), computeInstanceInfo{device: handleOfMig(g, m, deviceHandle),
			gpuInstance: handleOfMig(g, m, gpuInstanceHandle), id: m.ComputeInstanceID, profileID: ci.Id,
			placement: nvml.ComputeInstancePlacement{Start: 0, Size: p.Slices}})
	})
}

// nvmlDeviceGetAttributes_v2 answers for MIG devices only, as NVML does.
//
//export nvmlDeviceGetAttributes_v2
func nvmlDeviceGetAttributes_v2(device unsafe.Pointer, attributes unsafe.Pointer) C.int {
	return onDevice(device, func(g *gpu, m *migDevice) nvml.Return {
		if m == nil {
			return nvml.ERROR_NOT_SUPPORTED
		}
		p := g.profileOf(m)
		if p == nil {
			return nvml.ERROR_NOT_SUPPORTED
		}
		return set((*nvml.DeviceAttributes)(attributes), nvml.DeviceAttributes{GpuInstanceSliceCount: p.Slices,
			ComputeInstanceSliceCount: p.Slices, MemorySizeMB: mebibytes(m.MemoryBytes)})
	})
}
