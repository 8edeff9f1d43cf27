// Package cdi writes Container Device Interface specs: the part of the format the reference
// drivers use (env vars and device nodes), without a CDI library dependency.
package cdi

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Version 0.5.0 allows device names that start with a digit (claim UIDs may) and hostPath
// in device nodes.
const Version = "0.5.0"

type Spec struct {
	Version string   `json:"cdiVersion"`
	Kind    string   `json:"kind"`
	Devices []Device `json:"devices"`
}

type Device struct {
	Name           string `json:"name"`
	ContainerEdits Edits  `json:"containerEdits"`
}

type Edits struct {
	Env         []string     `json:"env,omitempty"`
	DeviceNodes []DeviceNode `json:"deviceNodes,omitempty"`
}

// DeviceNode creates Path in the container with the type and numbers of HostPath.
type DeviceNode struct {
	Path     string `json:"path"`
	HostPath string `json:"hostPath,omitempty"`
}

// QualifiedName is the ID a runtime is given: kind=name.
func (s Spec) QualifiedName(device string) string { return s.Kind + "=" + device }

// Write writes spec to path. The runtime watches the directory: a rename means it never reads
// half a spec, and the temporary name does not end in .json, so the runtime ignores it.
func Write(path string, spec Spec) error {
	data, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	_, err = tmp.Write(append(data, '\n'))
	if err := errors.Join(err, tmp.Chmod(0o644), tmp.Close()); err != nil {
		return fmt.Errorf("write CDI spec %s: %w", path, err)
	}
	return os.Rename(tmp.Name(), path)
}
