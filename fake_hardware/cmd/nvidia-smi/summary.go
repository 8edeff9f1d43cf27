package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// The summary's columns, as nvidia-smi lays them out: three sections of a 91-character table.
var widths = []int{41, 24, 22}

func rule(fill, edge string) string {
	var parts []string
	for _, w := range widths {
		parts = append(parts, strings.Repeat(fill, w))
	}
	return edge + strings.Join(parts, "+") + edge
}

// row lays out one line of the GPU table: each cell's text, left-aligned unless it starts with ">".
func row(cells ...string) string {
	var parts []string
	for i, c := range cells {
		w := widths[i] - 2
		if right, ok := strings.CutPrefix(c, ">"); ok {
			parts = append(parts, fmt.Sprintf(" %*s ", w, right))
		} else {
			parts = append(parts, fmt.Sprintf(" %-*s ", w, c))
		}
	}
	return "|" + strings.Join(parts, "|") + "|"
}

// wide is a line across the whole table.
func wide(s string) string { return fmt.Sprintf("| %-87s |", s) }

// or is NVML's answer, or N/A where it has none.
func or(s string, r nvml.Return) string {
	if r != nvml.SUCCESS {
		return "N/A"
	}
	return s
}

// summary is nvidia-smi without arguments: versions, then per GPU what NVML answers of the
// table's fields (the lab's GPUs have no fan, temperature, power or utilisation to show), then
// the processes, of which there are none.
func summary(lib nvml.Interface, devices []gpu, stdout io.Writer) int {
	driver, r := lib.SystemGetDriverVersion()
	driver = or(driver, r)
	cuda, r := lib.SystemGetCudaDriverVersion()
	lines := []string{
		"+" + strings.Repeat("-", 89) + "+",
		wide(fmt.Sprintf("NVIDIA-SMI %-22s Driver Version: %-14s CUDA Version: %s", driver, driver, or(cudaVersion(cuda), r))),
		rule("-", "+"),
		row("GPU  Name                 Persistence-M", "Bus-Id          Disp.A", "Volatile Uncorr. ECC"),
		row("Fan  Temp   Perf          Pwr:Usage/Cap", ">Memory-Usage", "GPU-Util  Compute M."),
		row("", "", ">MIG M."),
		rule("=", "|"),
	}
	for _, g := range devices {
		d := g.device
		name, _ := d.GetName()
		persistence, r := d.GetPersistenceMode()
		ecc, re := d.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC)
		mem, rm := d.GetMemoryInfo()
		mode, rc := d.GetComputeMode()
		mig, _, rmig := d.GetMigMode()
		lines = append(lines,
			row(fmt.Sprintf("%3d  %-24.24s %9s", g.index, name, or(onOff(persistence), r)),
				fmt.Sprintf("%-16s %5s", g.busID(), "N/A"), ">"+or(fmt.Sprint(ecc), re)),
			row("N/A   N/A    N/A             N/A /  N/A",
				">"+or(fmt.Sprintf("%dMiB / %dMiB", mem.Used>>20, mem.Total>>20), rm),
				fmt.Sprintf("%7s  %11s", "N/A", or(computeModeNames[mode], rc))),
			row("", "", ">"+or(enabled(nvml.EnableState(mig)), rmig)),
			rule("-", "+"))
	}
	lines = append(lines, "",
		"+"+strings.Repeat("-", 89)+"+",
		wide("Processes:"),
		wide(" GPU   GI   CI              PID   Type   Process name                        GPU Memory"),
		wide("       ID   ID                                                               Usage"),
		"|"+strings.Repeat("=", 89)+"|",
		wide(" No running processes found"),
		"+"+strings.Repeat("-", 89)+"+")
	fmt.Fprintln(stdout, strings.Join(lines, "\n"))
	return exitOK
}

func onOff(s nvml.EnableState) string {
	if s == nvml.FEATURE_ENABLED {
		return "On"
	}
	return "Off"
}
