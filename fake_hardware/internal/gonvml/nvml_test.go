package gonvml

import (
	"debug/elf"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"dralab.dev/fake_hardware/internal/nvmltext"
)

const (
	goNVML  = "github.com/NVIDIA/go-nvml"
	rootEnv = "DRALAB_NVML_ROOT"
	// Xid errors the library reports: a double-bit ECC error (unhealthy), fallen off the bus (removed)
	xidDoubleBitECC = 48
	xidFallenOffBus = 79
	noInstance      = 0xFFFFFFFF
	eventTimeoutMs  = 5000
)

// expectation is what the node's hardware profile says, as the lab planned it.
type expectation struct {
	Profile           string        `json:"profile"`
	DriverVersion     string        `json:"driverVersion"`
	CudaDriverVersion int           `json:"cudaDriverVersion"`
	GPUs              []expectedGPU `json:"gpus"` // in PCI bus order
}

type expectedGPU struct {
	BDF               string               `json:"bdf"`
	UUID              string               `json:"uuid"`
	Name              string               `json:"name"`
	PciDeviceID       uint32               `json:"pciDeviceId"` // device << 16 | vendor
	NUMA              int                  `json:"numa"`
	CPUs              []int                `json:"cpus"`
	MemoryBytes       uint64               `json:"memoryBytes"`
	MinorNumber       int                  `json:"minorNumber"`
	Architecture      string               `json:"architecture"`
	ComputeCapability *[2]int              `json:"computeCapability"`
	MigCapable        bool                 `json:"migCapable"`
	MigProfiles       []expectedMigProfile `json:"migProfiles"`
	MigDevices        []expectedMIG        `json:"migDevices"`
}

type expectedMigProfile struct {
	Name          string   `json:"name"` // 3g.40gb
	Slices        int      `json:"slices"`
	MemoryBytes   uint64   `json:"memoryBytes"`
	MemorySlices  uint32   `json:"memorySlices"`
	InstanceCount int      `json:"instanceCount"`
	Placements    []uint32 `json:"placements"`
	Remaining     int      `json:"remaining"` // beside the GPU's MIG devices
}

type expectedMIG struct {
	Name           string `json:"name"`
	MemoryBytes    uint64 `json:"memoryBytes"`
	Profile        string `json:"profile"`
	PlacementStart uint32 `json:"placementStart"`
}

var architectures = map[string]nvml.DeviceArchitecture{
	"ampere": nvml.DEVICE_ARCH_AMPERE, "ada": nvml.DEVICE_ARCH_ADA, "hopper": nvml.DEVICE_ARCH_HOPPER,
	"blackwell": nvml.DEVICE_ARCH_BLACKWELL, "unknown": nvml.DEVICE_ARCH_UNKNOWN,
}

var (
	tempDir   string
	buildOnce sync.Once
	built     string
	buildErr  error
)

func TestMain(m *testing.M) {
	var err error
	if tempDir, err = os.MkdirTemp("", "gonvml"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(tempDir)
	os.Exit(code)
}

// library builds cmd/libnvidia-ml once per test binary, as the lab builds it (clusters/provision/
// gobuild.py): with its soname, which cgo's own flags cannot set.
func library(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		start := time.Now()
		built = filepath.Join(tempDir, "libnvidia-ml.so.1")
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-ldflags=-extldflags=-Wl,-soname,libnvidia-ml.so.1",
			"-o", built, "dralab.dev/fake_hardware/cmd/libnvidia-ml")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build -buildmode=c-shared: %v\n%s", err, out)
			return
		}
		t.Logf("built %s in %v", built, time.Since(start).Round(time.Millisecond))
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return built
}

func goList(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

// Whatever a driver calls through go-nvml must exist: go-nvml binds lazily, and a missing
// function ends the caller's process with "undefined symbol".
func TestLibraryDefinesEveryFunctionOfNvmlH(t *testing.T) {
	header, err := os.ReadFile(filepath.Join(goList(t, "-m", "-f", "{{.Dir}}", goNVML), "pkg", "nvml", "nvml.h"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(library(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if soname, err := f.DynString(elf.DT_SONAME); err != nil || !slices.Equal(soname, []string{"libnvidia-ml.so.1"}) {
		t.Errorf("soname %v (%v), want libnvidia-ml.so.1", soname, err)
	}
	symbols, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	for _, s := range symbols {
		if strings.HasPrefix(s.Name, "nvml") && s.Section == elf.SHN_UNDEF {
			t.Errorf("the library needs %s from elsewhere", s.Name)
		}
		defined[s.Name] = s.Section != elf.SHN_UNDEF && elf.ST_TYPE(s.Info) == elf.STT_FUNC
	}
	var declared []string
	for _, m := range regexp.MustCompile(`DECLDIR\s+(?:char\s*\*\s*)?(nvml\w+)\s*\(`).FindAllSubmatch(header, -1) {
		declared = append(declared, string(m[1]))
	}
	slices.Sort(declared)
	declared = slices.Compact(declared)
	for _, name := range declared {
		if !defined[name] {
			t.Errorf("nvml.h declares %s; the library does not define it (go generate ./cmd/libnvidia-ml)", name)
		}
	}
	t.Logf("the library defines all %d functions of %s's nvml.h", len(declared), goNVML)
}

type node struct {
	dir  string
	want expectation
}

func nodes(t *testing.T) []node {
	t.Helper()
	root := os.Getenv("DRALAB_NVML_NODES")
	if root == "" {
		t.Skip("DRALAB_NVML_NODES is not set: no rendered nodes to read")
	}
	dirs, err := filepath.Glob(filepath.Join(root, "*", "expect.json"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no */expect.json under %s", root)
	}
	var found []node
	for _, expect := range dirs {
		data, err := os.ReadFile(expect)
		if err != nil {
			t.Fatal(err)
		}
		n := node{dir: filepath.Dir(expect)}
		if err := json.Unmarshal(data, &n.want); err != nil {
			t.Fatalf("%s: %v", expect, err)
		}
		found = append(found, n)
	}
	return found
}

// nvidia-smi (cmd/nvidia-smi), run in each node's driver root over the library there, lists the
// profile's GPUs and MIG devices, answers queries and refuses changes with nvidia-smi's exit code
// for an operation the device does not offer. It runs before TestGoNVMLSeesEveryGPUOfTheProfile,
// whose faults take GPU 0 out of the first node's tree.
func TestNvidiaSMIShowsTheProfilesGPUs(t *testing.T) {
	all := nodes(t)
	smi := filepath.Join(tempDir, "nvidia-smi")
	build := exec.Command("go", "build", "-o", smi, "dralab.dev/fake_hardware/cmd/nvidia-smi")
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build cmd/nvidia-smi: %v\n%s", err, out)
	}
	data, err := os.ReadFile(library(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range all {
		t.Run(n.want.Profile, func(t *testing.T) {
			// As the driver's installer leaves it (fake_hardware/nvml.py install_library): the file
			// named for the driver version, and the soname a link to it.
			lib := filepath.Join(n.dir, "driver-root", "usr", "lib64")
			versioned := filepath.Join(lib, "libnvidia-ml.so."+n.want.DriverVersion)
			if err := os.MkdirAll(lib, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(versioned, data, 0o755); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(lib, "libnvidia-ml.so.1")
			if _, err := os.Lstat(link); err != nil {
				if err := os.Symlink(filepath.Base(versioned), link); err != nil {
					t.Fatal(err)
				}
			}
			env := []string{"LD_LIBRARY_PATH=" + lib}
			run := func(args ...string) (string, int) {
				cmd := exec.Command(smi, args...)
				cmd.Env = append(append(os.Environ(), rootEnv+"="), env...)
				out, err := cmd.CombinedOutput()
				if exit, ok := err.(*exec.ExitError); ok {
					return string(out), exit.ExitCode()
				} else if err != nil {
					t.Fatalf("nvidia-smi %v: %v", args, err)
				}
				return string(out), 0
			}
			var list, rows []string
			for i, g := range n.want.GPUs {
				list = append(list, fmt.Sprintf("GPU %d: %s (UUID: %s)", i, g.Name, g.UUID))
				for j, m := range g.MigDevices {
					list = append(list, fmt.Sprintf("  MIG %-12s Device %2d: (UUID: MIG-", m.Profile, j))
				}
				rows = append(rows, fmt.Sprintf("%d, %s, 0000%s, %d", i, g.UUID, strings.ToUpper(g.BDF), g.MemoryBytes>>20))
			}
			out, code := run("-L")
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if code != 0 || len(lines) != len(list) {
				t.Fatalf("nvidia-smi -L (exit %d):\n%s\nwant:\n%s", code, out, strings.Join(list, "\n"))
			}
			for i := range list {
				if !strings.HasPrefix(lines[i], list[i]) {
					t.Errorf("nvidia-smi -L line %d: %q, want %q...", i, lines[i], list[i])
				}
			}
			out, code = run("--query-gpu=index,uuid,pci.bus_id,memory.total", "--format=csv,noheader,nounits")
			if got := strings.TrimSpace(out); code != 0 || got != strings.Join(rows, "\n") {
				t.Errorf("nvidia-smi --query-gpu (exit %d):\n%s\nwant:\n%s", code, got, strings.Join(rows, "\n"))
			}
			if out, code = run(); code != 0 || !strings.Contains(out, "Driver Version: "+n.want.DriverVersion) {
				t.Errorf("nvidia-smi (exit %d):\n%s", code, out)
			}
			// NVIDIA's DRA driver runs nvidia-smi with the library preloaded by its resolved path,
			// the versioned name: go-nvml's dlopen("libnvidia-ml.so.1") finds it by its soname.
			env = []string{"LD_LIBRARY_PATH=", "LD_PRELOAD=" + versioned}
			if out, code = run("-i", n.want.GPUs[0].UUID, "-c", "EXCLUSIVE_PROCESS"); code != 3 || !strings.Contains(out, "Not Supported") {
				t.Errorf("nvidia-smi -c EXCLUSIVE_PROCESS: exit %d, %q; want 3 (not available on the device)", code, out)
			}
		})
	}
}

// One process holds one instance of the library: it is loaded from the first node's driver root
// (found from the library's own path) and pointed at the others with DRALAB_NVML_ROOT.
func TestGoNVMLSeesEveryGPUOfTheProfile(t *testing.T) {
	all := nodes(t)
	path := filepath.Join(all[0].dir, "driver-root", "usr", "lib64", "libnvidia-ml.so.1")
	data, err := os.ReadFile(library(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	l := nvml.New(nvml.WithLibraryPath(path))
	for i, n := range all {
		t.Run(n.want.Profile, func(t *testing.T) {
			root, how := "", "load, init"
			if i > 0 {
				root, how = filepath.Join(n.dir, "driver-root"), "init"
			}
			t.Setenv(rootEnv, root)
			start := time.Now()
			if r := l.Init(); r != nvml.SUCCESS {
				t.Fatalf("Init: %v", r)
			}
			defer l.Shutdown()
			devices := discover(t, l)
			t.Logf("%s: go-nvml sees %d of %d GPUs (%s and discovery: count, handles, UUIDs, PCI info, memory: %v)",
				n.want.Profile, len(devices), len(n.want.GPUs), how, time.Since(start).Round(time.Microsecond))
			check(t, l, n.want, devices)
			if t.Failed() || len(devices) < 2 {
				return
			}
			faults(t, l, n, devices)
		})
	}
}

// discover does what a driver does first: every GPU's handle, UUID, PCI info and memory.
func discover(t *testing.T, l nvml.Interface) []nvml.Device {
	count, r := l.DeviceGetCount()
	if r != nvml.SUCCESS {
		t.Fatalf("device count: %v", r)
	}
	devices := make([]nvml.Device, count)
	for i := range devices {
		if devices[i], r = l.DeviceGetHandleByIndex(i); r != nvml.SUCCESS {
			t.Fatalf("handle of GPU %d: %v", i, r)
		}
		_, r1 := devices[i].GetUUID()
		_, r2 := devices[i].GetPciInfo()
		_, r3 := devices[i].GetMemoryInfo()
		if r1 != nvml.SUCCESS || r2 != nvml.SUCCESS || r3 != nvml.SUCCESS {
			t.Fatalf("GPU %d: UUID %v, PCI info %v, memory %v", i, r1, r2, r3)
		}
	}
	return devices
}

// check compares the system and every GPU by index with the profile.
func check(t *testing.T, l nvml.Interface, want expectation, devices []nvml.Device) {
	if v, r := l.SystemGetDriverVersion(); r != nvml.SUCCESS || v != want.DriverVersion {
		t.Errorf("driver version %q (%v), want %q", v, r, want.DriverVersion)
	}
	if v, r := l.SystemGetCudaDriverVersion_v2(); r != nvml.SUCCESS || v != want.CudaDriverVersion {
		t.Errorf("CUDA driver version %d (%v), want %d", v, r, want.CudaDriverVersion)
	}
	if v, r := l.SystemGetNVMLVersion(); r != nvml.SUCCESS || !strings.HasSuffix(v, "."+want.DriverVersion) {
		t.Errorf("NVML version %q (%v), want 13.%s", v, r, want.DriverVersion)
	}
	if len(devices) != len(want.GPUs) {
		t.Fatalf("go-nvml sees %d GPUs, the profile has %d", len(devices), len(want.GPUs))
	}
	for i, g := range want.GPUs {
		checkGPU(t, l, devices[i], i, g)
	}
	if _, r := l.DeviceGetHandleByIndex(len(devices)); r != nvml.ERROR_INVALID_ARGUMENT {
		t.Errorf("handle of GPU %d of %d: %v, want ERROR_INVALID_ARGUMENT", len(devices), len(devices), r)
	}
}

func checkGPU(t *testing.T, l nvml.Interface, d nvml.Device, index int, want expectedGPU) {
	t.Helper()
	errorf := func(format string, args ...any) {
		t.Errorf("GPU %d (%s): "+format, append([]any{index, want.BDF}, args...)...)
	}
	uuid, r := d.GetUUID()
	if r != nvml.SUCCESS || uuid != want.UUID {
		errorf("UUID %q (%v), want %q", uuid, r, want.UUID)
	}
	if name, r := d.GetName(); r != nvml.SUCCESS || name != want.Name {
		errorf("name %q (%v), want %q", name, r, want.Name)
	}
	if serial, r := d.GetSerial(); r != nvml.SUCCESS || len(serial) != 13 {
		errorf("serial %q (%v), want 13 digits", serial, r)
	}
	if minor, r := d.GetMinorNumber(); r != nvml.SUCCESS || minor != want.MinorNumber {
		errorf("minor number %d (%v), want %d", minor, r, want.MinorNumber)
	}
	if i, r := d.GetIndex(); r != nvml.SUCCESS || i != index {
		errorf("index %d (%v)", i, r)
	}
	busID := "0000" + strings.ToUpper(want.BDF) // NVML's form: an 8-digit domain, upper-case hex
	pci, r := d.GetPciInfo()
	if got := nvmltext.String(pci.BusId[:]); r != nvml.SUCCESS || got != busID || pci.PciDeviceId != want.PciDeviceID {
		errorf("PCI bus ID %q, device ID %#x (%v), want %q, %#x", got, pci.PciDeviceId, r, busID, want.PciDeviceID)
	}
	if numa, r := d.GetNumaNodeId(); r != nvml.SUCCESS || numa != want.NUMA {
		errorf("NUMA node %d (%v), want %d", numa, r, want.NUMA)
	}
	if cpus, r := affinity(d, slices.Max(want.CPUs)+1); r != nvml.SUCCESS || !slices.Equal(cpus, want.CPUs) {
		errorf("CPU affinity %v (%v), want %v", cpus, r, want.CPUs)
	}
	if mem, r := d.GetMemoryInfo(); r != nvml.SUCCESS || mem.Total != want.MemoryBytes {
		errorf("memory %d (%v), want %d", mem.Total, r, want.MemoryBytes)
	}
	if mem, r := d.GetMemoryInfo_v2(); r != nvml.SUCCESS || mem.Total != want.MemoryBytes {
		errorf("memory (v2) %d (%v), want %d", mem.Total, r, want.MemoryBytes)
	}
	if arch, r := d.GetArchitecture(); r != nvml.SUCCESS || arch != architectures[want.Architecture] {
		errorf("architecture %d (%v), want %s", arch, r, want.Architecture)
	}
	major, minor, r := d.GetCudaComputeCapability()
	switch {
	case want.ComputeCapability == nil && r != nvml.ERROR_NOT_SUPPORTED:
		errorf("compute capability %d.%d (%v) of a model the lab does not know", major, minor, r)
	case want.ComputeCapability != nil && (r != nvml.SUCCESS || [2]int{major, minor} != *want.ComputeCapability):
		errorf("compute capability %d.%d (%v), want %v", major, minor, r, *want.ComputeCapability)
	}
	if brand, r := d.GetBrand(); r != nvml.SUCCESS || brand != nvml.BRAND_NVIDIA {
		errorf("brand %d (%v)", brand, r)
	}
	if current, _, r := d.GetEccMode(); r != nvml.SUCCESS || current != nvml.FEATURE_ENABLED {
		errorf("ECC mode %d (%v)", current, r)
	}
	for what, lookup := range map[string]func() (nvml.Device, nvml.Return){
		"UUID":                   func() (nvml.Device, nvml.Return) { return l.DeviceGetHandleByUUID(want.UUID) },
		"PCI bus ID (NVML's)":    func() (nvml.Device, nvml.Return) { return l.DeviceGetHandleByPciBusId(busID) },
		"PCI bus ID (Linux's)":   func() (nvml.Device, nvml.Return) { return l.DeviceGetHandleByPciBusId(want.BDF) },
		"PCI bus ID (no domain)": func() (nvml.Device, nvml.Return) { return l.DeviceGetHandleByPciBusId(want.BDF[5:]) },
	} {
		if other, r := lookup(); r != nvml.SUCCESS || other != d {
			errorf("handle by %s: %v (%v), want the handle by index", what, other, r)
		}
	}
	// Functions the library does not implement answer, rather than end the process.
	if _, r := d.GetFanSpeed(); r != nvml.ERROR_NOT_SUPPORTED {
		errorf("fan speed: %v, want ERROR_NOT_SUPPORTED", r)
	}
	checkMIG(t, l, d, index, want)
}

func checkMIG(t *testing.T, l nvml.Interface, d nvml.Device, index int, want expectedGPU) {
	t.Helper()
	current, _, r := d.GetMigMode()
	wantMode := nvml.DEVICE_MIG_DISABLE
	if len(want.MigDevices) > 0 {
		wantMode = nvml.DEVICE_MIG_ENABLE
	}
	switch {
	case !want.MigCapable && r != nvml.ERROR_NOT_SUPPORTED:
		t.Errorf("GPU %d: MIG mode %d (%v) on a GPU without MIG", index, current, r)
	case want.MigCapable && (r != nvml.SUCCESS || current != wantMode):
		t.Errorf("GPU %d: MIG mode %d (%v), want %d", index, current, r, wantMode)
	}
	if !want.MigCapable {
		return
	}
	profiles := checkMigProfiles(t, d, index, want)
	if len(want.MigDevices) == 0 {
		return
	}
	maxCount, r := d.GetMaxMigDeviceCount()
	if r != nvml.SUCCESS {
		t.Fatalf("GPU %d: max MIG device count: %v", index, r)
	}
	parent, _ := d.GetUUID()
	var seen []expectedMIG
	for i := range maxCount {
		mig, r := d.GetMigDeviceHandleByIndex(i)
		if r == nvml.ERROR_NOT_FOUND {
			continue
		}
		if r != nvml.SUCCESS {
			t.Fatalf("GPU %d: MIG device %d: %v", index, i, r)
		}
		name, _ := mig.GetName()
		mem, _ := mig.GetMemoryInfo()
		profile, start := checkInstances(t, d, mig, index, i, profiles)
		seen = append(seen, expectedMIG{Name: name, MemoryBytes: mem.Total, Profile: profile, PlacementStart: start})
		uuid, _ := mig.GetUUID()
		isMig, _ := mig.IsMigDeviceHandle()
		gi, _ := mig.GetGpuInstanceId()
		up, _ := mig.GetDeviceHandleFromMigDeviceHandle()
		byUUID, r := l.DeviceGetHandleByUUID(uuid)
		if !strings.HasPrefix(uuid, "MIG-") || !isMig || gi != i+1 || up != d || r != nvml.SUCCESS || byUUID != mig {
			t.Errorf("GPU %d: MIG device %d: UUID %q, is a MIG device %v, GPU instance %d, parent %v (of %v), by UUID %v (%v)",
				index, i, uuid, isMig, gi, up, parent, byUUID, r)
		}
	}
	if !slices.Equal(seen, want.MigDevices) {
		t.Errorf("GPU %d: MIG devices %v, want %v", index, seen, want.MigDevices)
	}
}

// migProfileName is the name go-nvlib (NVIDIA's drivers' device library) gives a GPU instance
// profile: compute slices, and its memory as a share of the GPU's in eighths, rounded up, of the
// GPU's memory in whole GiB (go-nvlib's getMigMemorySizeGB).
func migProfileName(slices uint32, memorySizeMB, deviceMemoryBytes uint64) string {
	share := math.Ceil(float64(memorySizeMB<<20)/float64(deviceMemoryBytes)*8) / 8
	gib := float64((deviceMemoryBytes + 1<<30 - 1) >> 30)
	return fmt.Sprintf("%dg.%dgb", slices, uint64(math.Round(share*gib)))
}

// checkMigProfiles reads the GPU instance profiles as NVIDIA's drivers do, by every profile index,
// and their placements; it answers the profiles' infos by name.
func checkMigProfiles(t *testing.T, d nvml.Device, index int, want expectedGPU) map[string]nvml.GpuInstanceProfileInfo {
	t.Helper()
	mem, _ := d.GetMemoryInfo()
	infos := map[string]nvml.GpuInstanceProfileInfo{}
	for i := range nvml.GPU_INSTANCE_PROFILE_COUNT {
		info, r := d.GetGpuInstanceProfileInfo(i)
		if r == nvml.ERROR_NOT_SUPPORTED {
			continue
		}
		name := migProfileName(info.SliceCount, info.MemorySizeMB, mem.Total)
		v3, rv := d.GetGpuInstanceProfileInfoV(i).V3()
		if r != nvml.SUCCESS || rv != nvml.SUCCESS || nvmltext.String(v3.Name[:]) != "MIG "+name || v3.Id != info.Id {
			t.Errorf("GPU %d: GPU instance profile %d: %+v (%v), v3 %q %d (%v)", index, i, info, r, nvmltext.String(v3.Name[:]), v3.Id, rv)
		}
		infos[name] = info
	}
	if len(infos) != len(want.MigProfiles) {
		t.Errorf("GPU %d: GPU instance profiles %v, want %d", index, infos, len(want.MigProfiles))
	}
	for _, p := range want.MigProfiles {
		info, ok := infos[p.Name]
		if !ok || int(info.SliceCount) != p.Slices || int(info.InstanceCount) != p.InstanceCount || info.MemorySizeMB != p.MemoryBytes>>20 {
			t.Errorf("GPU %d: GPU instance profile %s: %+v (found %v), want %+v", index, p.Name, info, ok, p)
			continue
		}
		placements, r := d.GetGpuInstancePossiblePlacements(&info)
		var starts []uint32
		for _, pl := range placements {
			starts = append(starts, pl.Start)
			if pl.Size != p.MemorySlices {
				t.Errorf("GPU %d: %s placed over %d memory slices, want %d", index, p.Name, pl.Size, p.MemorySlices)
			}
		}
		if r != nvml.SUCCESS || !slices.Equal(starts, p.Placements) {
			t.Errorf("GPU %d: %s placements %v (%v), want %v", index, p.Name, starts, r, p.Placements)
		}
		if len(want.MigDevices) == 0 {
			continue
		}
		remaining, r := d.GetGpuInstanceRemainingCapacity(&info)
		instances, ri := d.GetGpuInstances(&info)
		devices := 0
		for _, m := range want.MigDevices {
			if m.Profile == p.Name {
				devices++
			}
		}
		if r != nvml.SUCCESS || remaining != p.Remaining || ri != nvml.SUCCESS || len(instances) != devices {
			t.Errorf("GPU %d: %s remaining %d (%v), instances %d (%v), want %d and %d", index, p.Name, remaining, r,
				len(instances), ri, p.Remaining, devices)
		}
	}
	return infos
}

// checkInstances follows a MIG device to its GPU and compute instances as go-nvlib's
// MigDevice.GetProfile does, and answers its profile's name (as go-nvlib names it) and placement.
func checkInstances(t *testing.T, d, mig nvml.Device, index, i int, profiles map[string]nvml.GpuInstanceProfileInfo) (string, uint32) {
	t.Helper()
	errorf := func(format string, args ...any) {
		t.Errorf("GPU %d: MIG device %d: "+format, append([]any{index, i}, args...)...)
	}
	mem, _ := d.GetMemoryInfo()
	attributes, r := mig.GetAttributes()
	if r != nvml.SUCCESS || attributes.GpuInstanceSliceCount != attributes.ComputeInstanceSliceCount {
		errorf("attributes %+v (%v)", attributes, r)
	}
	name := migProfileName(attributes.GpuInstanceSliceCount, attributes.MemorySizeMB, mem.Total)
	giID, _ := mig.GetGpuInstanceId()
	ciID, _ := mig.GetComputeInstanceId()
	gi, r := d.GetGpuInstanceById(giID)
	if r != nvml.SUCCESS {
		errorf("GPU instance %d: %v", giID, r)
		return name, 0
	}
	giInfo, r := gi.GetInfo()
	if r != nvml.SUCCESS || giInfo.Device != d || int(giInfo.Id) != giID || giInfo.ProfileId != profiles[name].Id {
		errorf("GPU instance info %+v (%v), want GPU instance %d of profile %s (ID %d)", giInfo, r, giID, name, profiles[name].Id)
	}
	ci, r := gi.GetComputeInstanceById(ciID)
	if r != nvml.SUCCESS {
		errorf("compute instance %d: %v", ciID, r)
		return name, giInfo.Placement.Start
	}
	ciInfo, r := ci.GetInfo()
	ciProfile, rp := gi.GetComputeInstanceProfileInfo(slicesToCiProfile[attributes.ComputeInstanceSliceCount],
		nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
	if r != nvml.SUCCESS || rp != nvml.SUCCESS || ciInfo.Device != mig || ciInfo.GpuInstance != gi || int(ciInfo.Id) != ciID ||
		ciInfo.ProfileId != ciProfile.Id || ciProfile.SliceCount != attributes.ComputeInstanceSliceCount {
		errorf("compute instance info %+v (%v), profile %+v (%v)", ciInfo, r, ciProfile, rp)
	}
	if cis, r := gi.GetComputeInstances(&ciProfile); r != nvml.SUCCESS || len(cis) != 1 || cis[0] != ci {
		errorf("compute instances %v (%v), want [%v]", cis, r, ci)
	}
	if _, r := d.GetAttributes(); r != nvml.ERROR_NOT_SUPPORTED {
		errorf("the GPU's own attributes: %v, want ERROR_NOT_SUPPORTED (MIG devices only)", r)
	}
	return name, giInfo.Placement.Start
}

var slicesToCiProfile = map[uint32]int{1: nvml.COMPUTE_INSTANCE_PROFILE_1_SLICE, 2: nvml.COMPUTE_INSTANCE_PROFILE_2_SLICE,
	3: nvml.COMPUTE_INSTANCE_PROFILE_3_SLICE, 4: nvml.COMPUTE_INSTANCE_PROFILE_4_SLICE, 7: nvml.COMPUTE_INSTANCE_PROFILE_7_SLICE}

// faults marks the last GPU unhealthy and takes the first out of the tree, as `dralab hw fault`
// does, and checks that a driver's event set hears of both and the count follows.
func faults(t *testing.T, l nvml.Interface, n node, devices []nvml.Device) {
	set, r := l.EventSetCreate()
	if r != nvml.SUCCESS {
		t.Fatalf("EventSetCreate: %v", r)
	}
	defer set.Free()
	for i, d := range devices {
		supported, r := d.GetSupportedEventTypes()
		if r != nvml.SUCCESS || supported&nvml.EventTypeXidCriticalError == 0 {
			t.Fatalf("GPU %d: supported events %#x (%v)", i, supported, r)
		}
		if r := d.RegisterEvents(nvml.EventTypeXidCriticalError, set); r != nvml.SUCCESS {
			t.Fatalf("GPU %d: RegisterEvents: %v", i, r)
		}
	}
	if r := devices[0].RegisterEvents(nvml.EventTypeAll, set); r != nvml.ERROR_NOT_SUPPORTED {
		t.Errorf("registering every event type: %v, want ERROR_NOT_SUPPORTED", r)
	}
	if e, r := set.Wait(300); r != nvml.ERROR_TIMEOUT {
		t.Fatalf("an event before any fault: %+v (%v)", e, r)
	}
	sys := filepath.Join(n.dir, "sys")
	last, sick := len(devices)-1, n.want.GPUs[len(devices)-1].BDF

	// The driver waits already when the fault comes, as a driver's health loop does.
	type waited struct {
		event nvml.EventData
		r     nvml.Return
		at    time.Time
	}
	done := make(chan waited)
	go func() {
		e, r := set.Wait(eventTimeoutMs)
		done <- waited{e, r, time.Now()}
	}()
	time.Sleep(250 * time.Millisecond)
	faulted := time.Now()
	setHealth(t, sys, sick, "unhealthy")
	w := <-done
	e, r, latency := w.event, w.r, w.at.Sub(faulted)
	if r != nvml.SUCCESS || e.EventType != nvml.EventTypeXidCriticalError || e.EventData != xidDoubleBitECC ||
		e.Device != devices[last] || e.GpuInstanceId != noInstance {
		t.Fatalf("after GPU %d turned unhealthy: event %+v (%v), want Xid %d of it", last, e, r, xidDoubleBitECC)
	}
	if errors, r := devices[last].GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC); r != nvml.SUCCESS || errors != 1 {
		t.Errorf("uncorrected ECC errors of the unhealthy GPU: %d (%v), want 1", errors, r)
	}
	setHealth(t, sys, sick, "healthy")
	if e, r := set.Wait(300); r != nvml.ERROR_TIMEOUT {
		t.Errorf("an event for a GPU turning healthy: %+v (%v)", e, r)
	}
	if errors, r := devices[last].GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC); r != nvml.SUCCESS || errors != 0 {
		t.Errorf("uncorrected ECC errors once healthy again: %d (%v), want 0", errors, r)
	}

	removeFunction(t, sys, n.want.GPUs[0].BDF)
	if count, r := l.DeviceGetCount(); r != nvml.SUCCESS || count != len(devices)-1 {
		t.Errorf("device count %d (%v) with GPU 0 removed, want %d", count, r, len(devices)-1)
	}
	if _, r := devices[0].GetUUID(); r != nvml.ERROR_GPU_IS_LOST {
		t.Errorf("UUID of the removed GPU: %v, want ERROR_GPU_IS_LOST", r)
	}
	if i, r := devices[1].GetIndex(); r != nvml.SUCCESS || i != 0 {
		t.Errorf("index of GPU 1 with GPU 0 removed: %d (%v), want 0", i, r)
	}
	if e, r := set.Wait(eventTimeoutMs); r != nvml.SUCCESS || e.EventData != xidFallenOffBus || e.Device != devices[0] {
		t.Errorf("after GPU 0 left the tree: event %+v (%v), want Xid %d of it", e, r, xidFallenOffBus)
	}
	t.Logf("%s: Xid %d %v after the fault; a removed GPU leaves the count", n.want.Profile, xidDoubleBitECC,
		latency.Round(time.Millisecond))
}

// setHealth writes what fake_hardware/sysfs.py set_gpu_health writes: the function's
// dralab-gpu.json with another health, renamed into place.
func setHealth(t *testing.T, sys, bdf, health string) {
	t.Helper()
	path := filepath.Join(sys, "bus", "pci", "devices", bdf, "dralab-gpu.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	info := map[string]any{}
	if err := json.Unmarshal(data, &info); err != nil {
		t.Fatal(err)
	}
	info["health"] = health
	if data, err = json.Marshal(info); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".tmp", data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// removeFunction takes a function out of the tree as fake_hardware/sysfs.py remove_function does:
// its links first, then its directory.
func removeFunction(t *testing.T, sys, bdf string) {
	t.Helper()
	link := filepath.Join(sys, "bus", "pci", "devices", bdf)
	dir, err := filepath.EvalSymlinks(link)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{link, filepath.Join(sys, "bus", "pci", "drivers", "nvidia", bdf)} {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
}

// affinity lists the CPUs set in the GPU's CPU affinity mask.
func affinity(d nvml.Device, numCPUs int) ([]int, nvml.Return) {
	words, r := d.GetCpuAffinity(numCPUs)
	var cpus []int
	for i, word := range words {
		for bit := range 64 {
			if word&(1<<bit) != 0 {
				cpus = append(cpus, i*64+bit)
			}
		}
	}
	return cpus, r
}
