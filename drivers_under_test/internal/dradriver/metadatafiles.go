package dradriver

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"
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
		return rewriting(o.isCDISpec, func(b []byte) ([]byte, error) {
			return bytes.ReplaceAll(b, []byte(`"ro"`), []byte(`"rw"`)), nil
		})
	case v.Is(VariantWrongPath):
		// KEP text: /var/run/dra-device-attributes/{claim}/{request}/...; shipped adds kubernetes.io/ and resourceclaims/.
		return rewriting(o.isCDISpec, func(b []byte) ([]byte, error) {
			b = bytes.ReplaceAll(b, []byte("/var/run/kubernetes.io/dra-device-attributes/resourceclaims/"), []byte("/var/run/dra-device-attributes/"))
			return bytes.ReplaceAll(b, []byte("/var/run/kubernetes.io/dra-device-attributes/resourceclaimtemplates/"), []byte("/var/run/dra-device-attributes/")), nil
		})
	case v.Is(VariantStaleGeneration):
		return rewriting(isMetadataFile, resetGeneration)
	}
	return kubeletplugin.MetadataFileOperations{}
}

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

// resetGeneration sets metadata.generation to 1 in every object of the JSON stream.
func resetGeneration(data []byte) ([]byte, error) {
	var out bytes.Buffer
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return out.Bytes(), nil
		} else if err != nil {
			return nil, err
		}
		if meta, ok := obj["metadata"].(map[string]any); ok {
			meta["generation"] = 1
		}
		line, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		out.Write(append(line, '\n'))
	}
}
