// Command nvidia-smi is the part of NVIDIA's System Management Interface that drivers and
// people use to look at GPUs, for the lab's NVML (HW-10): it loads libnvidia-ml.so.1 through
// go-nvml, as the real one loads NVML, and prints what NVML answers. NVIDIA's DRA driver will not
// start without an nvidia-smi in the driver root, and calls it to set compute modes and time
// slices.
//
// It lists GPUs and MIG devices (-L), prints a summary (no arguments), answers --query-gpu in
// CSV for the fields below, and selects GPUs with -i (index, UUID or PCI bus ID, comma-separated).
// What changes a GPU (-c, -pm, compute-policy --set-timeslice, ...) goes to NVML, whose emulated
// GPUs have no such state: it reports NVML's answer and exits 3, nvidia-smi's code for an
// operation the device does not offer. A field NVML does not answer prints [N/A] or
// [Not Supported], as nvidia-smi prints them.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"dralab.dev/fake_hardware/internal/nvmltext"
)

// nvidia-smi's exit codes (nvidia-smi(1)).
const (
	exitOK           = 0
	exitBadArgument  = 2
	exitNotAvailable = 3
	exitNoDriver     = 9
	exitNoLibrary    = 12
	exitOther        = 255
)

func main() {
	os.Exit(run(os.Args[1:], nvml.New(), os.Stdout, os.Stderr))
}

// options are the command line as nvidia-smi reads it: -x VALUE, -x=VALUE and --long=VALUE.
type options struct {
	list, help, version bool
	ids                 []string
	query, format       string
	set                 []setting // in the order given
	subcommand          string
}

// setting is an option that changes a GPU.
type setting struct{ what, value string }

var settings = map[string]string{
	"-c": "compute mode", "--compute-mode": "compute mode", "-pm": "persistence mode",
	"--persistence-mode": "persistence mode", "-e": "ECC mode", "--ecc-config": "ECC mode",
	"-mig": "MIG mode", "--multi-instance-gpu": "MIG mode", "-r": "reset", "--gpu-reset": "reset",
	"-pl": "power limit", "--power-limit": "power limit", "-ac": "application clocks",
	"--applications-clocks": "application clocks", "-lgc": "locked clocks", "--lock-gpu-clocks": "locked clocks",
	"--set-timeslice": "timeslice",
}

func parse(args []string) (options, error) {
	var o options
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		o.subcommand, args = args[0], args[1:]
	}
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(args[i], "=")
		takeValue := func() (string, error) {
			if hasValue {
				return value, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("option %s needs a value", name)
			}
			i++
			return args[i], nil
		}
		switch {
		case name == "-L" || name == "--list-gpus":
			o.list = true
		case name == "-h" || name == "--help":
			o.help = true
		case name == "--version":
			o.version = true
		case name == "-i" || name == "--id":
			v, err := takeValue()
			if err != nil {
				return o, err
			}
			o.ids = strings.Split(v, ",")
		case name == "--query-gpu":
			v, err := takeValue()
			if err != nil {
				return o, err
			}
			o.query = v
		case name == "--format":
			v, err := takeValue()
			if err != nil {
				return o, err
			}
			o.format = v
		case settings[name] != "":
			v, err := takeValue()
			if err != nil {
				return o, err
			}
			o.set = append(o.set, setting{what: settings[name], value: v})
		default:
			return o, fmt.Errorf("invalid combination of input arguments: %s", args[i])
		}
	}
	return o, nil
}

func run(args []string, lib nvml.Interface, stdout, stderr io.Writer) int {
	o, err := parse(args)
	if err != nil {
		fmt.Fprintf(stderr, "%v. Please run 'nvidia-smi -h' for help.\n", err)
		return exitBadArgument
	}
	if o.help {
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	switch r := lib.Init(); r {
	case nvml.SUCCESS:
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		fmt.Fprintln(stderr, "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure that the NVIDIA Display Driver is properly installed and present in your system.")
		return exitNoLibrary
	default:
		fmt.Fprintf(stderr, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver (%s).\n", lib.ErrorString(r))
		return exitNoDriver
	}
	defer lib.Shutdown()
	devices, code := selectGPUs(lib, o.ids, stderr)
	switch {
	case code != exitOK:
		return code
	case o.version:
		return version(lib, stdout)
	case len(o.set) > 0:
		return change(lib, devices, o.set, stdout, stderr)
	case o.subcommand != "":
		fmt.Fprintf(stderr, "nvidia-smi %s is not supported by the lab's NVML.\n", o.subcommand)
		return exitNotAvailable
	case o.list:
		return list(lib, devices, stdout)
	case o.query != "":
		return query(lib, devices, o.query, o.format, stdout, stderr)
	}
	return summary(lib, devices, stdout)
}

// selectGPUs is every GPU, or those -i names by index, UUID or PCI bus ID.
func selectGPUs(lib nvml.Interface, ids []string, stderr io.Writer) ([]gpu, int) {
	count, r := lib.DeviceGetCount()
	if r != nvml.SUCCESS {
		fmt.Fprintf(stderr, "Unable to determine the device count: %s\n", lib.ErrorString(r))
		return nil, exitOther
	}
	var all []gpu
	for i := range count {
		d, r := lib.DeviceGetHandleByIndex(i)
		if r != nvml.SUCCESS {
			fmt.Fprintf(stderr, "Unable to determine the device handle for GPU %d: %s\n", i, lib.ErrorString(r))
			return nil, exitOther
		}
		all = append(all, gpu{index: i, device: d})
	}
	if len(ids) == 0 {
		return all, exitOK
	}
	var chosen []gpu
	for _, id := range ids {
		found := false
		for _, g := range all {
			if g.matches(id) {
				chosen, found = append(chosen, g), true
			}
		}
		if !found {
			fmt.Fprintf(stderr, "No devices were found matching %q\n", id)
			return nil, exitBadArgument
		}
	}
	return chosen, exitOK
}

type gpu struct {
	index  int
	device nvml.Device
}

func (g gpu) matches(id string) bool {
	if id == fmt.Sprint(g.index) {
		return true
	}
	if uuid, r := g.device.GetUUID(); r == nvml.SUCCESS && strings.EqualFold(uuid, id) {
		return true
	}
	pci, r := g.device.GetPciInfo()
	bus := strings.ToLower(nvmltext.String(pci.BusId[:]))
	want := strings.ToLower(id)
	return r == nvml.SUCCESS && (bus == want || strings.TrimPrefix(bus, "0000") == want)
}

func (g gpu) busID() string {
	pci, r := g.device.GetPciInfo()
	if r != nvml.SUCCESS {
		return fmt.Sprintf("GPU %d", g.index)
	}
	return nvmltext.String(pci.BusId[:])
}

// errorText is an NVML error as nvidia-smi words it.
func errorText(lib nvml.Interface, r nvml.Return) string {
	if text, ok := map[nvml.Return]string{nvml.ERROR_NOT_SUPPORTED: "Not Supported",
		nvml.ERROR_NO_PERMISSION: "Insufficient Permissions", nvml.ERROR_INVALID_ARGUMENT: "Invalid Argument",
		nvml.ERROR_GPU_IS_LOST: "GPU is lost"}[r]; ok {
		return text
	}
	return lib.ErrorString(r)
}

// change asks NVML for each setting on each GPU; the lab's answers NOT_SUPPORTED for all of them.
func change(lib nvml.Interface, devices []gpu, set []setting, stdout, stderr io.Writer) int {
	code := exitOK
	for _, s := range set {
		for _, g := range devices {
			r := apply(g.device, s)
			if r == nvml.SUCCESS {
				fmt.Fprintf(stdout, "Set %s to %s for GPU %s.\n", s.what, s.value, g.busID())
				continue
			}
			fmt.Fprintf(stderr, "Unable to set the %s for GPU %s: %s\n", s.what, g.busID(), errorText(lib, r))
			code = exitNotAvailable
			if r != nvml.ERROR_NOT_SUPPORTED {
				code = exitOther
			}
		}
	}
	if code == exitOK {
		fmt.Fprintln(stdout, "All done.")
	}
	return code
}

var computeModes = map[string]nvml.ComputeMode{
	"0": nvml.COMPUTEMODE_DEFAULT, "DEFAULT": nvml.COMPUTEMODE_DEFAULT,
	"2": nvml.COMPUTEMODE_PROHIBITED, "PROHIBITED": nvml.COMPUTEMODE_PROHIBITED,
	"3": nvml.COMPUTEMODE_EXCLUSIVE_PROCESS, "EXCLUSIVE_PROCESS": nvml.COMPUTEMODE_EXCLUSIVE_PROCESS,
}

// apply is the NVML call behind a setting, where there is one; the others are not offered.
func apply(d nvml.Device, s setting) nvml.Return {
	switch s.what {
	case "compute mode":
		mode, ok := computeModes[strings.ToUpper(s.value)]
		if !ok {
			return nvml.ERROR_INVALID_ARGUMENT
		}
		return d.SetComputeMode(mode)
	case "persistence mode":
		mode := nvml.FEATURE_DISABLED
		if s.value == "1" || strings.EqualFold(s.value, "ENABLED") {
			mode = nvml.FEATURE_ENABLED
		}
		return d.SetPersistenceMode(mode)
	case "ECC mode":
		mode := nvml.FEATURE_DISABLED
		if s.value == "1" {
			mode = nvml.FEATURE_ENABLED
		}
		return d.SetEccMode(mode)
	case "MIG mode":
		_, r := d.SetMigMode(map[string]int{"1": nvml.DEVICE_MIG_ENABLE}[s.value])
		return r
	}
	return nvml.ERROR_NOT_SUPPORTED
}

// list is -L: each GPU and, under it, its MIG devices.
func list(lib nvml.Interface, devices []gpu, stdout io.Writer) int {
	for _, g := range devices {
		name, _ := g.device.GetName()
		uuid, _ := g.device.GetUUID()
		fmt.Fprintf(stdout, "GPU %d: %s (UUID: %s)\n", g.index, name, uuid)
		count, r := g.device.GetMaxMigDeviceCount()
		if r != nvml.SUCCESS {
			continue
		}
		n := 0
		for i := range count {
			mig, r := g.device.GetMigDeviceHandleByIndex(i)
			if r != nvml.SUCCESS {
				continue
			}
			name, _ := mig.GetName()
			uuid, _ := mig.GetUUID()
			_, profile, _ := strings.Cut(name, " MIG ")
			fmt.Fprintf(stdout, "  MIG %-12s Device %2d: (UUID: %s)\n", profile, n, uuid)
			n++
		}
	}
	return exitOK
}

func version(lib nvml.Interface, stdout io.Writer) int {
	driver, _ := lib.SystemGetDriverVersion()
	nvmlVersion, _ := lib.SystemGetNVMLVersion()
	cuda, _ := lib.SystemGetCudaDriverVersion()
	fmt.Fprintf(stdout, "NVIDIA-SMI version  : %s\nNVML version        : %s\nDRIVER version      : %s\nCUDA Version        : %s\n",
		driver, nvmlVersion, driver, cudaVersion(cuda))
	return exitOK
}

// cudaVersion is NVML's major*1000 + minor*10 as nvidia-smi prints it.
func cudaVersion(v int) string { return fmt.Sprintf("%d.%d", v/1000, v%1000/10) }

const usage = `NVIDIA System Management Interface -- the lab's (dralab), over its NVML.

nvidia-smi [OPTION1 [ARG1]] ...

    -h,   --help                Print usage information and exit.
    -L,   --list-gpus           Display a list of GPUs connected to the system.
    -i,   --id=                 Target a specific GPU (index, UUID or PCI bus ID; comma-separated).
          --query-gpu=          Information about GPU: index, name, uuid, serial, pci.bus_id,
                                pci.device_id, pci.sub_device_id, driver_version, count,
                                memory.total, memory.used, memory.free, compute_cap,
                                mig.mode.current, mig.mode.pending, ecc.mode.current,
                                compute_mode, persistence_mode.
          --format=             csv, with noheader and nounits as further options.
          --version             Print version information and exit.
    -c, -pm, -e, -mig, ...      Change a GPU: the lab's GPUs offer none of these (exit 3).
`
