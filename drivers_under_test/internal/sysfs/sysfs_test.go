package sysfs

import (
	"os"
	"path/filepath"
	"testing"
)

// tree builds a sysfs-shaped directory: devices under devices/pci0000:00/..., relative links in
// bus/pci/devices, as the emulated hardware and the kernel lay them out.
type tree struct {
	t    *testing.T
	root string
}

func (tr tree) device(path string, files map[string]string) string {
	dir := filepath.Join(tr.root, "devices", path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tr.t.Fatal(err)
	}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			tr.t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			tr.t.Fatal(err)
		}
	}
	tr.link(filepath.Join(tr.root, "bus", "pci", "devices", filepath.Base(dir)), dir)
	return dir
}

func (tr tree) link(link, target string) {
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		tr.t.Fatal(err)
	}
	rel, _ := filepath.Rel(filepath.Dir(link), target)
	if err := os.Symlink(rel, link); err != nil {
		tr.t.Fatal(err)
	}
}

func TestGPUs(t *testing.T) {
	tr := tree{t, t.TempDir()}
	tr.device("pci0000:00/0000:00:01.0", map[string]string{"class": "0x060400\n", "numa_node": "0\n"})
	tr.device("pci0000:00/0000:00:03.0/0000:02:00.0", map[string]string{
		"class": "0x030200\n", "numa_node": "1\n",
		GPUInfoFile: `{"uuid": "GPU-b", "index": 1, "model": "A100", "memoryBytes": 42949672960, "health": "unhealthy"}`,
	})
	tr.device("pci0000:00/0000:00:01.0/0000:01:00.0", map[string]string{
		"class": "0x030200\n", "numa_node": "0\n",
		GPUInfoFile: `{"uuid": "GPU-a", "index": 0, "model": "A100", "memoryBytes": 42949672960, "health": "healthy"}`,
	})
	// A 3D controller without the vendor library's view is not ours to manage.
	tr.device("pci0000:00/0000:00:04.0", map[string]string{"class": "0x030200\n", "numa_node": "0\n"})

	gpus, err := GPUs(tr.root)
	if err != nil {
		t.Fatal(err)
	}
	if len(gpus) != 2 {
		t.Fatalf("want 2 GPUs, got %+v", gpus)
	}
	a, b := gpus[0], gpus[1]
	if a.BDF != "0000:01:00.0" || a.UUID != "GPU-a" || a.NUMA != 0 || !a.Healthy || a.MemoryBytes != 42949672960 {
		t.Errorf("gpu0: %+v", a)
	}
	if a.Topology() != "numa0-pcie1-gpu0" || b.Topology() != "numa1-pcie3-gpu1" {
		t.Errorf("topologies: %s, %s", a.Topology(), b.Topology())
	}
	if b.Healthy {
		t.Errorf("gpu1 is marked unhealthy in its info file: %+v", b)
	}
}

func TestVFs(t *testing.T) {
	tr := tree{t, t.TempDir()}
	pf := tr.device("pci0000:00/0000:00:02.0/0000:03:00.0", map[string]string{
		"class": "0x020000\n", "numa_node": "1\n", "net/ens1f0/address": "02:00:00:00:00:01\n",
	})
	for i, bdf := range []string{"0000:03:00.2", "0000:03:00.1"} {
		// Created in reverse order: the index comes from the PF's virtfnN link, not the order.
		index := 1 - i
		vf := tr.device("pci0000:00/0000:00:02.0/"+bdf, map[string]string{
			"class": "0x020000\n", "numa_node": "1\n",
			"net/ens1f0v" + string(rune('0'+index)) + "/address": "02:00:00:00:01:0" + string(rune('0'+index)) + "\n",
		})
		tr.link(filepath.Join(vf, "physfn"), pf)
		tr.link(filepath.Join(pf, "virtfn"+string(rune('0'+index))), vf)
	}
	vfs, err := VFs(tr.root)
	if err != nil {
		t.Fatal(err)
	}
	if len(vfs) != 2 {
		t.Fatalf("want 2 VFs (the PF is not one), got %+v", vfs)
	}
	want := VF{BDF: "0000:03:00.1", PFBDF: "0000:03:00.0", PFName: "ens1f0", Index: 0, Netdev: "ens1f0v0",
		MAC: "02:00:00:00:01:00", NUMA: 1}
	if vfs[0] != want {
		t.Errorf("vf0: got %+v, want %+v", vfs[0], want)
	}
	if vfs[1].Index != 1 || vfs[1].Netdev != "ens1f0v1" {
		t.Errorf("vf1: %+v", vfs[1])
	}
}

func TestMissingTree(t *testing.T) {
	if _, err := GPUs(filepath.Join(t.TempDir(), "absent")); err == nil {
		t.Error("a missing tree must be an error, not an empty list")
	}
}
