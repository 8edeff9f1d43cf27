// Package sysfs discovers GPUs and SR-IOV virtual functions the way a node agent does: by
// walking /sys/bus/pci/devices. The root is a parameter so the same code reads the real /sys,
// the lab's emulated tree mounted at the standard paths, or a tree under a prefix.
package sysfs

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// GPUInfoFile carries what a vendor library (NVML) would report and sysfs does not: the
// emulated hardware writes it into each GPU's device directory.
const GPUInfoFile = "dralab-gpu.json"

const (
	class3D       = 0x0302
	classEthernet = 0x0200
)

// GPU is one GPU as found in sysfs.
type GPU struct {
	BDF         string
	Index       int
	UUID        string
	Model       string
	MemoryBytes int64
	NUMA        int
	RootPort    int // device number of the PCIe root port above the GPU
	Healthy     bool
	Dir         string // the device directory, symlinks resolved
}

// Topology names the GPU's place as numa<N>-pcie<root port>-gpu<index>.
func (g GPU) Topology() string {
	return fmt.Sprintf("numa%d-pcie%d-gpu%d", g.NUMA, g.RootPort, g.Index)
}

// VF is one SR-IOV virtual function with its netdev.
type VF struct {
	BDF    string
	PFBDF  string
	PFName string // the PF's netdev
	Index  int    // N of the PF's virtfnN link
	Netdev string
	MAC    string
	NUMA   int
}

type gpuInfo struct {
	UUID        string `json:"uuid"`
	Index       int    `json:"index"`
	Model       string `json:"model"`
	MemoryBytes int64  `json:"memoryBytes"`
	Health      string `json:"health"`
}

// pciDevices lists bus/pci/devices/<BDF> with each link resolved to its device directory.
func pciDevices(root string) (map[string]string, error) {
	base := filepath.Join(root, "bus", "pci", "devices")
	entries, err := os.ReadDir(base)
	if err != nil {
		return nil, fmt.Errorf("list PCI devices: %w", err)
	}
	devices := make(map[string]string, len(entries))
	for _, e := range entries {
		dir, err := filepath.EvalSymlinks(filepath.Join(base, e.Name()))
		if err != nil {
			continue // removed while we looked
		}
		devices[e.Name()] = dir
	}
	return devices, nil
}

func readHex(dir, name string) (int64, error) {
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(string(data)), "0x"), 16, 64)
}

func readInt(dir, name string) (int, error) {
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

func pciClass(dir string) int64 {
	class, err := readHex(dir, "class")
	if err != nil {
		return -1
	}
	return class >> 8
}

// RootPort is the device number of the first bridge below the host bridge in the device path
// (devices/pci0000:00/0000:00:<dev>.<fn>/...).
func RootPort(dir string) int {
	parts := strings.Split(filepath.ToSlash(dir), "/")
	for i, p := range parts {
		if strings.HasPrefix(p, "pci") && i+1 < len(parts) {
			var domain, bus, dev, fn int
			if _, err := fmt.Sscanf(parts[i+1], "%x:%x:%x.%x", &domain, &bus, &dev, &fn); err == nil {
				return dev
			}
		}
	}
	return -1
}

// firstNetdev is the single entry of a function's net/ directory.
func firstNetdev(dir string) (name, mac string) {
	entries, err := os.ReadDir(filepath.Join(dir, "net"))
	if err != nil || len(entries) == 0 {
		return "", ""
	}
	name = entries[0].Name()
	data, _ := os.ReadFile(filepath.Join(dir, "net", name, "address"))
	return name, strings.TrimSpace(string(data))
}

// GPUs lists the GPUs under root, ordered by index.
func GPUs(root string) ([]GPU, error) {
	devices, err := pciDevices(root)
	if err != nil {
		return nil, err
	}
	var gpus []GPU
	for bdf, dir := range devices {
		if pciClass(dir) != class3D {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, GPUInfoFile))
		if errors.Is(err, os.ErrNotExist) {
			continue // a 3D controller without our vendor library's view
		} else if err != nil {
			return nil, err
		}
		var info gpuInfo
		if err := json.Unmarshal(data, &info); err != nil {
			return nil, fmt.Errorf("%s/%s: %w", dir, GPUInfoFile, err)
		}
		numa, err := readInt(dir, "numa_node")
		if err != nil {
			return nil, fmt.Errorf("%s: numa_node: %w", bdf, err)
		}
		gpus = append(gpus, GPU{
			BDF: bdf, Index: info.Index, UUID: info.UUID, Model: info.Model, MemoryBytes: info.MemoryBytes,
			NUMA: numa, RootPort: RootPort(dir), Healthy: info.Health != "unhealthy", Dir: dir,
		})
	}
	sort.Slice(gpus, func(i, j int) bool { return gpus[i].Index < gpus[j].Index })
	return gpus, nil
}

// VFs lists the Ethernet virtual functions under root, ordered by PF netdev and VF index.
func VFs(root string) ([]VF, error) {
	devices, err := pciDevices(root)
	if err != nil {
		return nil, err
	}
	var vfs []VF
	for bdf, dir := range devices {
		if pciClass(dir) != classEthernet {
			continue
		}
		pfDir, err := filepath.EvalSymlinks(filepath.Join(dir, "physfn"))
		if err != nil {
			continue // a PF or a plain NIC
		}
		index := -1
		links, _ := filepath.Glob(filepath.Join(pfDir, "virtfn*"))
		for _, link := range links {
			if target, err := filepath.EvalSymlinks(link); err == nil && target == dir {
				index, _ = strconv.Atoi(strings.TrimPrefix(filepath.Base(link), "virtfn"))
			}
		}
		netdev, mac := firstNetdev(dir)
		pfName, _ := firstNetdev(pfDir)
		numa, _ := readInt(dir, "numa_node")
		if netdev == "" || index < 0 {
			continue // not bound to a network driver, or half-created
		}
		vfs = append(vfs, VF{BDF: bdf, PFBDF: filepath.Base(pfDir), PFName: pfName, Index: index,
			Netdev: netdev, MAC: mac, NUMA: numa})
	}
	sort.Slice(vfs, func(i, j int) bool {
		if vfs[i].PFName != vfs[j].PFName {
			return vfs[i].PFName < vfs[j].PFName
		}
		return vfs[i].Index < vfs[j].Index
	})
	return vfs, nil
}
