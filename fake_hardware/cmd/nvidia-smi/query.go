package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"dralab.dev/fake_hardware/internal/nvmltext"
)

// field is a --query-gpu property of a GPU, given the system and the number of GPUs asked about.
type field func(lib nvml.Interface, g gpu, count int) (string, nvml.Return)

func text(f func(d nvml.Device) (string, nvml.Return)) field {
	return func(_ nvml.Interface, g gpu, _ int) (string, nvml.Return) { return f(g.device) }
}

func mebibytes(f func(m nvml.Memory) uint64) field {
	return func(_ nvml.Interface, g gpu, _ int) (string, nvml.Return) {
		m, r := g.device.GetMemoryInfo()
		return fmt.Sprint(f(m) >> 20), r
	}
}

func pciField(f func(p nvml.PciInfo) string) field {
	return func(_ nvml.Interface, g gpu, _ int) (string, nvml.Return) {
		p, r := g.device.GetPciInfo()
		return f(p), r
	}
}

func enabled(s nvml.EnableState) string {
	if s == nvml.FEATURE_ENABLED {
		return "Enabled"
	}
	return "Disabled"
}

func migMode(pending bool) field {
	return func(_ nvml.Interface, g gpu, _ int) (string, nvml.Return) {
		current, next, r := g.device.GetMigMode()
		if pending {
			current = next
		}
		return enabled(nvml.EnableState(current)), r
	}
}

var computeModeNames = map[nvml.ComputeMode]string{nvml.COMPUTEMODE_DEFAULT: "Default",
	nvml.COMPUTEMODE_EXCLUSIVE_THREAD: "Exclusive_Thread", nvml.COMPUTEMODE_PROHIBITED: "Prohibited",
	nvml.COMPUTEMODE_EXCLUSIVE_PROCESS: "Exclusive_Process"}

// fields are the --query-gpu properties answered, by their names and nvidia-smi's aliases.
var fields = map[string]field{
	"index":  func(_ nvml.Interface, g gpu, _ int) (string, nvml.Return) { return fmt.Sprint(g.index), nvml.SUCCESS },
	"count":  func(_ nvml.Interface, _ gpu, count int) (string, nvml.Return) { return fmt.Sprint(count), nvml.SUCCESS },
	"name":   text(nvml.Device.GetName),
	"uuid":   text(nvml.Device.GetUUID),
	"serial": text(nvml.Device.GetSerial),
	"driver_version": func(lib nvml.Interface, _ gpu, _ int) (string, nvml.Return) {
		return lib.SystemGetDriverVersion()
	},
	"pci.bus_id":        pciField(func(p nvml.PciInfo) string { return nvmltext.String(p.BusId[:]) }),
	"pci.domain":        pciField(func(p nvml.PciInfo) string { return fmt.Sprintf("0x%04X", p.Domain) }),
	"pci.bus":           pciField(func(p nvml.PciInfo) string { return fmt.Sprintf("0x%02X", p.Bus) }),
	"pci.device":        pciField(func(p nvml.PciInfo) string { return fmt.Sprintf("0x%02X", p.Device) }),
	"pci.device_id":     pciField(func(p nvml.PciInfo) string { return fmt.Sprintf("0x%08X", p.PciDeviceId) }),
	"pci.sub_device_id": pciField(func(p nvml.PciInfo) string { return fmt.Sprintf("0x%08X", p.PciSubSystemId) }),
	"memory.total":      mebibytes(func(m nvml.Memory) uint64 { return m.Total }),
	"memory.used":       mebibytes(func(m nvml.Memory) uint64 { return m.Used }),
	"memory.free":       mebibytes(func(m nvml.Memory) uint64 { return m.Free }),
	"compute_cap": func(_ nvml.Interface, g gpu, _ int) (string, nvml.Return) {
		major, minor, r := g.device.GetCudaComputeCapability()
		return fmt.Sprintf("%d.%d", major, minor), r
	},
	"mig.mode.current": migMode(false),
	"mig.mode.pending": migMode(true),
	"ecc.mode.current": func(_ nvml.Interface, g gpu, _ int) (string, nvml.Return) {
		current, _, r := g.device.GetEccMode()
		return enabled(current), r
	},
	"compute_mode": func(_ nvml.Interface, g gpu, _ int) (string, nvml.Return) {
		mode, r := g.device.GetComputeMode()
		return computeModeNames[mode], r
	},
	"persistence_mode": func(_ nvml.Interface, g gpu, _ int) (string, nvml.Return) {
		mode, r := g.device.GetPersistenceMode()
		return enabled(mode), r
	},
}

var aliases = map[string]string{"gpu_name": "name", "gpu_uuid": "uuid", "gpu_serial": "serial",
	"gpu_bus_id": "pci.bus_id", "compute_capability": "compute_cap"}

// units are those of the fields that have one, which nounits leaves out.
var units = map[string]string{"memory.total": "MiB", "memory.used": "MiB", "memory.free": "MiB"}

// query is --query-gpu: one CSV line per GPU, the fields in the order asked.
func query(lib nvml.Interface, devices []gpu, names, format string, stdout, stderr io.Writer) int {
	var opts = map[string]bool{}
	for _, o := range strings.Split(format, ",") {
		opts[strings.TrimSpace(o)] = true
	}
	if !opts["csv"] {
		fmt.Fprintln(stderr, `Missing --format=csv (with noheader and nounits as further options). Please run 'nvidia-smi -h' for help.`)
		return exitBadArgument
	}
	var asked []string
	for _, n := range strings.Split(names, ",") {
		n = strings.TrimSpace(n)
		if a, ok := aliases[n]; ok {
			n = a
		}
		if fields[n] == nil {
			fmt.Fprintf(stderr, "Field \"%s\" is not a valid field to query.\n", n)
			return exitBadArgument
		}
		asked = append(asked, n)
	}
	if !opts["noheader"] {
		var header []string
		for _, n := range asked {
			if unit := units[n]; unit != "" && !opts["nounits"] {
				n += " [" + unit + "]"
			}
			header = append(header, n)
		}
		fmt.Fprintln(stdout, strings.Join(header, ", "))
	}
	for _, g := range devices {
		var values []string
		for _, n := range asked {
			values = append(values, value(lib, n, g, len(devices), opts["nounits"]))
		}
		fmt.Fprintln(stdout, strings.Join(values, ", "))
	}
	return exitOK
}

// value formats a field as nvidia-smi does, [Not Supported] or [N/A] where NVML has no answer.
func value(lib nvml.Interface, name string, g gpu, count int, nounits bool) string {
	v, r := fields[name](lib, g, count)
	switch {
	case r == nvml.ERROR_NOT_SUPPORTED:
		return "[Not Supported]"
	case r != nvml.SUCCESS:
		return "[N/A]"
	case nounits || units[name] == "":
		return v
	}
	return v + " " + units[name]
}
