package pluginrecorder

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// CDISpec is what one CDI spec file on the node defined when a prepare or unprepare call
// returned: enough to tell whether a CDI device ID the driver answered resolves, and whether a
// claim's own spec outlived its unprepare (KP-03, KP-06), without the specs' contents.
type CDISpec struct {
	Kind    string   `json:"kind,omitempty"`
	Devices []string `json:"devices,omitempty"`
	Claims  []string `json:"claims,omitempty"` // UIDs of the call's claims the file names (its path or content)
	Error   string   `json:"error,omitempty"`  // unreadable or not a spec: the runtime ignores it too
}

// CDISnapshot is every spec in the directories the container runtime reads, by path.
type CDISnapshot struct {
	Dirs  []string           `json:"dirs"`
	Specs map[string]CDISpec `json:"specs"`
}

// snapshotted are the calls after which the node's CDI specs are recorded: those whose answer
// the specs must agree with.
func snapshotted(method string) bool {
	return strings.HasSuffix(method, "/NodePrepareResources") || strings.HasSuffix(method, "/NodeUnprepareResources")
}

// snapshotCDI reads the specs as the runtime would (.json and .yaml files of each directory);
// `claims` are the UIDs to look for in them.
func snapshotCDI(dirs, claims []string) *CDISnapshot {
	s := &CDISnapshot{Dirs: dirs, Specs: map[string]CDISpec{}}
	for _, dir := range dirs {
		entries, _ := os.ReadDir(dir) // a directory not made yet holds no spec
		for _, e := range entries {
			if e.IsDir() || !(strings.HasSuffix(e.Name(), ".json") || strings.HasSuffix(e.Name(), ".yaml")) {
				continue
			}
			path := filepath.Join(dir, e.Name())
			s.Specs[path] = readSpec(path, claims)
		}
	}
	return s
}

func readSpec(path string, claims []string) CDISpec {
	raw, err := os.ReadFile(path)
	if err != nil {
		return CDISpec{Error: err.Error()}
	}
	var spec struct {
		Kind    string `json:"kind"`
		Devices []struct {
			Name string `json:"name"`
		} `json:"devices"`
	}
	out := CDISpec{}
	if err := yaml.Unmarshal(raw, &spec); err != nil { // YAML is a superset of JSON
		out.Error = err.Error()
	}
	out.Kind = spec.Kind
	for _, d := range spec.Devices {
		out.Devices = append(out.Devices, d.Name)
	}
	for _, uid := range claims {
		if uid != "" && (strings.Contains(path, uid) || strings.Contains(string(raw), uid)) {
			out.Claims = append(out.Claims, uid)
		}
	}
	sort.Strings(out.Claims)
	return out
}

// claimUIDs are the UIDs of the claims a prepare or unprepare request names (any DRA version:
// their requests share the field names).
func claimUIDs(method string, request []byte) []string {
	var r struct {
		Claims []struct {
			UID string `json:"uid"`
		} `json:"claims"`
	}
	_ = json.Unmarshal(decode(method, true, request), &r)
	out := make([]string, 0, len(r.Claims))
	for _, c := range r.Claims {
		out = append(out, c.UID)
	}
	return out
}
