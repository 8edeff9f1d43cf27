package dradriver

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"
)

// CheckpointFile is the claim checkpoint's name in the plugin data dir.
const CheckpointFile = "prepared-claims.json"

// Checkpoint keeps what a driver prepared for each claim, as real drivers do (the upstream
// dra-example-driver keeps one in its plugin data dir): it is on the node's disk, under the
// kubelet root, so it outlives restarts of the driver, the kubelet and the node, and a claim
// the kubelet asks to prepare again is restored from it.
type Checkpoint[T any] struct {
	path   string
	Claims map[types.UID]T `json:"claims"`
}

// LoadCheckpoint reads the checkpoint in dir; none yet is an empty one.
func LoadCheckpoint[T any](dir string) (*Checkpoint[T], error) {
	c := &Checkpoint[T]{path: filepath.Join(dir, CheckpointFile), Claims: map[types.UID]T{}}
	data, err := os.ReadFile(c.path)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	} else if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, c); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", c.path, err)
	}
	if c.Claims == nil {
		c.Claims = map[types.UID]T{}
	}
	return c, nil
}

// Save writes the checkpoint through a rename: a crash leaves the old one or the new one, never half.
func (c *Checkpoint[T]) Save() error {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(c.path), 0o755); err != nil {
		return err
	}
	tmp := c.path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, c.path)
}
