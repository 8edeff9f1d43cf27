package dradriver

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
)

// The framework writes metadata files and their CDI specs itself; the broken variants bend
// those writes through its file-operations hook. Nil fields keep the framework's own code.
func (o *Options) metadataFileOps() kubeletplugin.MetadataFileOperations {
	v := o.Variant
	switch {
	case v.Is(VariantLeaveFiles):
		keep := func(string) error { return nil }
		return kubeletplugin.MetadataFileOperations{RemoveAll: keep, Remove: keep}
	case v.Is(VariantWritableMount):
		return rewriting(o.isCDISpec, replacing(`"ro"`, `"rw"`))
	case v.Is(VariantWrongPath):
		// KEP text: /var/run/dra-device-attributes/{claim}/{request}/...; shipped adds kubernetes.io/ and resourceclaims/.
		return rewriting(o.isCDISpec, replacing(
			containerRoot+"resourceclaims/", "/var/run/dra-device-attributes/",
			containerRoot+"resourceclaimtemplates/", "/var/run/dra-device-attributes/"))
	case v.Is(VariantTemplateClaimPath):
		// As a driver that ignores the pod-claim-name annotation mounts every claim.
		return rewriting(o.isCDISpec, replacing(containerRoot+"resourceclaimtemplates/", containerRoot+"resourceclaims/"))
	case v.Is(VariantStaleGeneration):
		return rewriting(isMetadataFile, eachObject(resetGeneration))
	case v.Is(VariantFixedCDIVersion):
		// A driver that writes its specs itself often pins one version; 0.6.0 is valid for
		// containerd, so the pod still starts, but it is not the minimum the spec needs.
		return rewriting(o.isCDISpec, eachObject(func(spec map[string]any) { spec["cdiVersion"] = "0.6.0" }))
	case v.Is(VariantNoSubrequestName):
		return rewriting(isMetadataFile, eachObject(baseRequestNames))
	case v.Is(VariantOtherHostDir):
		return o.movedMetadataDir(filepath.Join(o.PluginDataDir(), "device-metadata"))
	case v.Is(VariantSharedBuffer):
		return rewriting(isMetadataFile, (&sharedBuffer{hold: sharedBufferHold}).render)
	}
	return kubeletplugin.MetadataFileOperations{}
}

// containerRoot is where the framework mounts metadata files in containers (api/metadata).
const containerRoot = "/var/run/kubernetes.io/dra-device-attributes/"

func (o *Options) isCDISpec(name string) bool {
	return filepath.Dir(name) == filepath.Clean(o.CDIDir) && strings.Contains(filepath.Base(name), "_metadata_")
}

func isMetadataFile(name string) bool { return filepath.Base(name) == "metadata.json" }

// rewriting writes files that match through edit, all others unchanged, each via a rename.
func rewriting(match func(string) bool, edit func([]byte) ([]byte, error)) kubeletplugin.MetadataFileOperations {
	return kubeletplugin.MetadataFileOperations{WriteFile: func(name string, data []byte, perm os.FileMode) error {
		if match(name) {
			var err error
			if data, err = edit(data); err != nil {
				return err
			}
		}
		tmp := name + ".tmp"
		if err := os.WriteFile(tmp, data, perm); err != nil {
			return err
		}
		return os.Rename(tmp, name)
	}}
}

// replacing is an edit that replaces strings, pairs of old and new as for strings.NewReplacer.
func replacing(oldnew ...string) func([]byte) ([]byte, error) {
	r := strings.NewReplacer(oldnew...)
	return func(data []byte) ([]byte, error) { return []byte(r.Replace(string(data))), nil }
}

// eachObject is an edit that changes every object of a JSON stream: the objects of a metadata
// file, the one object of a CDI spec. Numbers are kept as written.
func eachObject(change func(obj map[string]any)) func([]byte) ([]byte, error) {
	return func(data []byte) ([]byte, error) {
		var out bytes.Buffer
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		for {
			var obj map[string]any
			if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
				return out.Bytes(), nil
			} else if err != nil {
				return nil, err
			}
			change(obj)
			line, err := json.Marshal(obj)
			if err != nil {
				return nil, err
			}
			out.Write(append(line, '\n'))
		}
	}
}

// resetGeneration sets metadata.generation to 1.
func resetGeneration(obj map[string]any) {
	if meta, ok := obj["metadata"].(map[string]any); ok {
		meta["generation"] = 1
	}
}

// baseRequestNames writes requests[].name without its /subrequest, as a driver does that takes
// the request names the kubelet sends (it strips subrequests) for the claim's.
func baseRequestNames(obj map[string]any) {
	requests, _ := obj["requests"].([]any)
	for _, r := range requests {
		if request, ok := r.(map[string]any); ok {
			if name, ok := request["name"].(string); ok {
				request["name"] = resourceclaim.BaseRequestRef(name)
			}
		}
	}
}

// movedMetadataDir keeps the claim directories under dir instead of the plugin data dir's
// dra-device-metadata, a layout of the driver's own: every file operation on them goes there,
// so prepare, updates and cleanup still work, and the CDI specs mount the moved files.
func (o *Options) movedMetadataDir(dir string) kubeletplugin.MetadataFileOperations {
	shipped := filepath.Join(o.PluginDataDir(), "dra-device-metadata")
	move := func(name string) string {
		if rel, err := filepath.Rel(shipped, name); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return filepath.Join(dir, rel)
		}
		return name
	}
	ops := rewriting(o.isCDISpec, replacing(shipped+"/", dir+"/"))
	write := ops.WriteFile
	ops.WriteFile = func(name string, data []byte, perm os.FileMode) error { return write(move(name), data, perm) }
	ops.ReadFile = func(name string) ([]byte, error) { return os.ReadFile(move(name)) }
	ops.MkdirAll = func(name string, perm os.FileMode) error { return os.MkdirAll(move(name), perm) }
	ops.RemoveAll = func(name string) error { return os.RemoveAll(move(name)) }
	return ops
}

// sharedBufferHold is how long a metadata file sits in the shared buffer before it is written:
// the pods a node starts at once prepare within it of each other.
const sharedBufferHold = 2 * time.Second

// sharedBuffer renders every metadata file through one buffer, as a driver that reuses a
// package-level buffer does: a prepare running while another one's file waits in the buffer
// overwrites it, and the other claim's file gets this one's content. (The mutex only keeps each
// access whole; the bug is the one buffer.)
type sharedBuffer struct {
	mu   sync.Mutex
	data []byte
	hold time.Duration
}

func (b *sharedBuffer) render(data []byte) ([]byte, error) {
	b.mu.Lock()
	b.data = data
	b.mu.Unlock()
	time.Sleep(b.hold)
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.data, nil
}
