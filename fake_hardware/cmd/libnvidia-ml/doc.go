// Command libnvidia-ml is NVML (libnvidia-ml.so.1) for the lab's emulated GPUs (HW-10), built with
// -buildmode=c-shared and its soname, which cgo's flags cannot set:
//
//	go build -buildmode=c-shared -ldflags=-extldflags=-Wl,-soname,libnvidia-ml.so.1 -o libnvidia-ml.so.1 ./cmd/libnvidia-ml
//
// (NVIDIA's DRA driver preloads the library by its versioned file name and runs nvidia-smi, which
// opens libnvidia-ml.so.1: only the soname makes the two one library.) Vendor GPU drivers load it
// through go-nvml, as on a real node, and see the node's GPUs with the identities of its hardware
// profile; cmd/nvidia-smi shows them over it.
//
// Where its answers come from:
//
//   - the node's emulated sysfs tree, as the kernel module would see it: a GPU is a function of
//     bus/pci/devices with vendor 0x10de and a display class, bound to the nvidia driver. PCI IDs,
//     NUMA node and CPUs are the tree's; so is health, from the function's dralab-gpu.json, which
//     `dralab hw fault unhealthy` changes. Every call reads the tree anew: a GPU the lab removes or
//     unbinds leaves the device count, and calls on its handle answer NVML_ERROR_GPU_IS_LOST.
//   - <driver root>/dralab/nvml.json, rendered by fake_hardware/nvml.py from the same plan as the
//     tree: versions, the tree's path, and per GPU what sysfs does not carry (name, UUID, serial,
//     minor number, memory, architecture, compute capability, MIG devices). It is read at nvmlInit.
//
// The tree is where nvml.json says, or at /sys when that path is absent (a container given the
// tree at the standard paths). The driver root is the nearest directory above the library's own
// file (dladdr) holding dralab/nvml.json, so <driver root>/usr/lib64/libnvidia-ml.so.1 finds it;
// DRALAB_NVML_ROOT, read at nvmlInit, names it instead.
//
// Devices are numbered in PCI bus order, as NVML does. A MIG device's handle answers as its GPU
// except for its name, UUID, memory, instance IDs and attributes. MIG's GPU and compute instances
// (mig.go) come from the GPU's profiles and MIG devices in nvml.json: the GPU instance profiles with
// NVML's profile indexes and IDs, their placements over the GPU's 8 memory slices, and per MIG
// device one GPU instance at its placement holding one compute instance that spans it, so that
// NVIDIA's device library (go-nvlib) finds each MIG device's profile and names it as the hardware
// profile does. The layout never changes: creating or destroying instances answers NOT_SUPPORTED. Event sets deliver an Xid critical error
// when a registered GPU turns unhealthy (Xid 48, a double-bit ECC error, which GetTotalEccErrors
// then counts) or leaves the tree (Xid 79, fallen off the bus); nvmlEventSetWait polls the tree
// every 100 ms within its timeout.
//
// Every other function nvml.h declares exists (stubs.c, generated from go-nvml's nvml.h) and
// answers NVML_ERROR_NOT_SUPPORTED: go-nvml binds symbols lazily, so a missing one would end the
// caller's process at its first call. Structures are written through go-nvml's Go definitions of
// nvml.h's types, which cgo generated from that header, but for nvmlEventData_t, whose Go twin
// go-nvml keeps unexported (events.go spells it out; the tests read it back through go-nvml). The
// library does not include nvml.h itself: a cgo package can only name headers of its own directory.
package main

//go:generate go run gen_stubs.go

func main() {}
