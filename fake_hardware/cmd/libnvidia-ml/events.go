package main

/*
#include <stdlib.h>
*/
import "C"

import (
	"sync"
	"time"
	"unsafe"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

const (
	supportedEvents = nvml.EventTypeXidCriticalError
	pollInterval    = 100 * time.Millisecond
	noInstance      = 0xFFFFFFFF // an event's GPU and compute instance IDs when no MIG device caused it
)

// eventData is nvmlEventData_t, whose Go twin go-nvml keeps unexported.
type eventData struct {
	device            unsafe.Pointer
	eventType         uint64
	eventData         uint64
	gpuInstanceID     uint32
	computeInstanceID uint32
}

// gpuState is what an event set last saw of a registered GPU.
type gpuState int

const (
	healthy gpuState = iota
	unhealthy
	lost
)

type eventSet struct {
	sync.Mutex
	seen map[string]gpuState // by BDF: the registered GPUs
}

// eventSets are the sets by handle; a handle is C memory, as device handles are.
var eventSets = struct {
	sync.Mutex
	byHandle map[unsafe.Pointer]*eventSet
}{byHandle: map[unsafe.Pointer]*eventSet{}}

func stateOf(bdf string) gpuState {
	lib.Lock()
	g := readGPU(lib.cfg, bdf)
	lib.Unlock()
	switch {
	case g == nil:
		return lost
	case g.healthy():
		return healthy
	}
	return unhealthy
}

func lookupSet(set unsafe.Pointer) *eventSet {
	eventSets.Lock()
	defer eventSets.Unlock()
	return eventSets.byHandle[set]
}

//export nvmlEventSetCreate
func nvmlEventSetCreate(set *unsafe.Pointer) C.int {
	if set == nil {
		return ret(nvml.ERROR_INVALID_ARGUMENT)
	}
	eventSets.Lock()
	defer eventSets.Unlock()
	*set = C.malloc(1)
	eventSets.byHandle[*set] = &eventSet{seen: map[string]gpuState{}}
	return ret(nvml.SUCCESS)
}

//export nvmlEventSetFree
func nvmlEventSetFree(set unsafe.Pointer) C.int {
	eventSets.Lock()
	defer eventSets.Unlock()
	if _, ok := eventSets.byHandle[set]; !ok {
		return ret(nvml.ERROR_INVALID_ARGUMENT)
	}
	delete(eventSets.byHandle, set)
	C.free(set)
	return ret(nvml.SUCCESS)
}

//export nvmlDeviceGetSupportedEventTypes
func nvmlDeviceGetSupportedEventTypes(device unsafe.Pointer, types *C.ulonglong) C.int {
	return onDevice(device, func(*gpu, *migDevice) nvml.Return { return set(types, supportedEvents) })
}

// nvmlDeviceRegisterEvents watches the GPU (a MIG device's GPU) from its state now on; registering
// a type the GPU does not report is NOT_SUPPORTED, as with NVML.
//
//export nvmlDeviceRegisterEvents
func nvmlDeviceRegisterEvents(device unsafe.Pointer, types C.ulonglong, set unsafe.Pointer) C.int {
	return onDevice(device, func(g *gpu, _ *migDevice) nvml.Return {
		s := lookupSet(set)
		switch {
		case s == nil:
			return nvml.ERROR_INVALID_ARGUMENT
		case types&^supportedEvents != 0:
			return nvml.ERROR_NOT_SUPPORTED
		}
		s.Lock()
		defer s.Unlock()
		if _, ok := s.seen[g.bdf]; !ok {
			s.seen[g.bdf] = stateOf(g.bdf)
		}
		return nvml.SUCCESS
	})
}

// next is an event of a registered GPU that turned unhealthy or left the tree since the set last
// looked; a GPU that turns healthy again or returns is watched from there without an event.
func (s *eventSet) next() (eventData, bool) {
	s.Lock()
	defer s.Unlock()
	for bdf, was := range s.seen {
		now := stateOf(bdf)
		s.seen[bdf] = now
		xid := uint64(0)
		switch {
		case now == unhealthy && was == healthy:
			xid = xidDoubleBitECC
		case now == lost && was != lost:
			xid = xidFallenOffBus
		default:
			continue
		}
		lib.Lock()
		h := handle(object{bdf: bdf, mig: -1})
		lib.Unlock()
		return eventData{device: h, eventType: nvml.EventTypeXidCriticalError, eventData: xid,
			gpuInstanceID: noInstance, computeInstanceID: noInstance}, true
	}
	return eventData{}, false
}

//export nvmlEventSetWait_v2
func nvmlEventSetWait_v2(set unsafe.Pointer, data unsafe.Pointer, timeoutms C.uint) C.int {
	s := lookupSet(set)
	if s == nil || data == nil {
		return ret(nvml.ERROR_INVALID_ARGUMENT)
	}
	deadline := time.Now().Add(time.Duration(timeoutms) * time.Millisecond)
	for {
		lib.Lock()
		initialized := lib.inits > 0
		lib.Unlock()
		if !initialized {
			return ret(nvml.ERROR_UNINITIALIZED)
		}
		if event, ok := s.next(); ok {
			*(*eventData)(data) = event
			return ret(nvml.SUCCESS)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return ret(nvml.ERROR_TIMEOUT)
		}
		time.Sleep(min(pollInterval, left))
	}
}
