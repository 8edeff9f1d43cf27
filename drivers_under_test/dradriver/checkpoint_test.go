package dradriver

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

type saved struct {
	Devices []string `json:"devices"`
}

func TestCheckpointStartsEmptyAndKeepsWhatWasSaved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "plugins", "gpu.dralab.dev") // not there yet, as on a new node
	c, err := LoadCheckpoint[saved](dir)
	if err != nil || len(c.Claims) != 0 {
		t.Fatalf("new checkpoint: %v, error %v", c.Claims, err)
	}
	c.Claims["uid-1"] = saved{Devices: []string{"gpu-0", "gpu-1"}}
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	again, err := LoadCheckpoint[saved](dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.Claims, c.Claims) {
		t.Errorf("loaded %v, saved %v", again.Claims, c.Claims)
	}
	if _, err := os.Stat(filepath.Join(dir, CheckpointFile+".tmp")); !os.IsNotExist(err) {
		t.Errorf("the temporary file is left: %v", err)
	}
	delete(again.Claims, "uid-1")
	if err := again.Save(); err != nil {
		t.Fatal(err)
	}
	if last, _ := LoadCheckpoint[saved](dir); len(last.Claims) != 0 {
		t.Errorf("after removing the claim: %v", last.Claims)
	}
}

func TestACorruptCheckpointIsAnError(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, CheckpointFile), []byte("{half"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCheckpoint[saved](dir); err == nil {
		t.Error("a corrupt checkpoint loaded without error")
	}
}
