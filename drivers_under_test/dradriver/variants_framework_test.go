package dradriver_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"dralab.dev/drivers_under_test/dradriver"
	"dralab.dev/drivers_under_test/dradriver/frameworktest"
)

// The metadata variants, seen through the upstream framework's own writes: each test compares
// the correct driver with the variant, which must differ in the one promise it breaks.

const driver = frameworktest.Driver

// objects are the objects of the JSON stream in file.
func objects(t *testing.T, file string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		out = append(out, obj)
	}
}

type mount struct{ HostPath, ContainerPath string }

type cdiSpec struct {
	Version string `json:"cdiVersion"`
	Kind    string `json:"kind"`
	Devices []struct {
		Name           string `json:"name"`
		ContainerEdits struct {
			Mounts []mount `json:"mounts"`
		} `json:"containerEdits"`
	} `json:"devices"`
}

func spec(t *testing.T, file string) cdiSpec {
	t.Helper()
	var s cdiSpec
	data, err := os.ReadFile(file)
	if err == nil {
		err = json.Unmarshal(data, &s)
	}
	if err != nil || len(s.Devices) != 1 || len(s.Devices[0].ContainerEdits.Mounts) != 1 {
		t.Fatalf("CDI spec %s: %v %+v", file, err, s)
	}
	return s
}

func (s cdiSpec) mount() mount { return s.Devices[0].ContainerEdits.Mounts[0] }

// The framework's minimum: 0.5.0 for a device name (the claim UID) that starts with a digit.
func TestFixedCDIVersionIsNotTheMinimum(t *testing.T) {
	digit, letter := frameworktest.Claim("digit", "3f2a-uid", "dev"), frameworktest.Claim("letter", "af2a-uid", "dev")
	for variant, want := range map[string][2]string{"": {"0.5.0", "0.3.0"}, dradriver.VariantFixedCDIVersion: {"0.6.0", "0.6.0"}} {
		n, _ := frameworktest.StartStub(t, variant, digit, letter)
		n.Prepare(t, digit, letter)
		for i, c := range []*resourceapi.ResourceClaim{digit, letter} {
			s := spec(t, n.CDISpec(c, "dev"))
			if s.Version != want[i] {
				t.Errorf("variant %q, claim UID %s: cdiVersion %s, want %s", variant, c.UID, s.Version, want[i])
			}
			if s.Kind != driver+"/metadata" || s.Devices[0].Name != string(c.UID)+"_dev" || s.mount().HostPath != n.MetadataFile(c, "dev") {
				t.Errorf("variant %q changed more than the version: %+v", variant, s)
			}
		}
	}
}

// The file stays in the base request's directory; only the name in the JSON loses /one.
func TestNoSubrequestNameDropsItFromTheJSONOnly(t *testing.T) {
	c := frameworktest.Claim("first-available", "3f2a-uid", "dev/one")
	for variant, want := range map[string]string{"": "dev/one", dradriver.VariantNoSubrequestName: "dev"} {
		n, _ := frameworktest.StartStub(t, variant, c)
		n.Prepare(t, c)
		objs := objects(t, n.MetadataFile(c, "dev"))
		if len(objs) != 2 {
			t.Fatalf("variant %q: %d objects, want one per version", variant, len(objs))
		}
		for _, obj := range objs {
			requests := obj["requests"].([]any)
			if name := requests[0].(map[string]any)["name"]; name != want {
				t.Errorf("variant %q, %s: requests[0].name %v, want %s", variant, obj["apiVersion"], name, want)
			}
			if gen := obj["metadata"].(map[string]any)["generation"]; gen != 1.0 {
				t.Errorf("variant %q: generation %v", variant, gen)
			}
		}
	}
}

func TestTemplateClaimPathMountsTemplateClaimsAtTheNamedClaimsPath(t *testing.T) {
	named := frameworktest.Claim("named", "3f2a-uid", "dev")
	fromTemplate := frameworktest.Claim("pod-gpu-x7k2q", "4f2a-uid", "dev")
	fromTemplate.Annotations = map[string]string{resourceapi.PodResourceClaimAnnotation: "gpu"}
	const root = "/var/run/kubernetes.io/dra-device-attributes/"
	for variant, want := range map[string]string{"": root + "resourceclaimtemplates/gpu/dev/", dradriver.VariantTemplateClaimPath: root + "resourceclaims/gpu/dev/"} {
		n, _ := frameworktest.StartStub(t, variant, named, fromTemplate)
		n.Prepare(t, named, fromTemplate)
		if got := spec(t, n.CDISpec(fromTemplate, "dev")).mount().ContainerPath; got != want+driver+"-metadata.json" {
			t.Errorf("variant %q: template claim mounted at %s, want under %s", variant, got, want)
		}
		if got := spec(t, n.CDISpec(named, "dev")).mount().ContainerPath; got != root+"resourceclaims/named/dev/"+driver+"-metadata.json" {
			t.Errorf("variant %q: named claim mounted at %s", variant, got)
		}
		if pcn := objects(t, n.MetadataFile(fromTemplate, "dev"))[0]["podClaimName"]; pcn != "gpu" {
			t.Errorf("variant %q: podClaimName %v, want gpu", variant, pcn)
		}
	}
}

// The files live elsewhere, the CDI spec mounts them from there, and unprepare still removes them.
func TestOtherHostDirMovesTheFilesAndStillCleansUp(t *testing.T) {
	c := frameworktest.Claim("claim", "3f2a-uid", "req0", "req1")
	n, o := frameworktest.StartStub(t, dradriver.VariantOtherHostDir, c)
	n.Prepare(t, c)
	moved := filepath.Join(o.PluginDataDir(), "device-metadata", "ns_claim")
	for _, request := range []string{"req0", "req1"} {
		if _, err := os.Stat(n.MetadataFile(c, request)); !os.IsNotExist(err) {
			t.Errorf("%s: a file at the shipped path (%v)", request, err)
		}
		file := filepath.Join(moved, request, "metadata.json")
		if objs := objects(t, file); len(objs) != 2 {
			t.Errorf("%s: %d objects", file, len(objs))
		}
		if got := spec(t, n.CDISpec(c, request)).mount().HostPath; got != file {
			t.Errorf("%s: CDI spec mounts %s, want %s", request, got, file)
		}
	}
	n.Unprepare(t, c)
	left, _ := filepath.Glob(filepath.Join(o.CDIDir, "*"))
	if _, err := os.Stat(moved); !os.IsNotExist(err) || len(left) > 0 {
		t.Errorf("after unprepare: %s (%v), CDI specs %v", moved, err, left)
	}
}

// Two pods' claims prepared at once: with the variant both files carry one claim's content.
func TestSharedBufferCrossesClaimsPreparedAtOnce(t *testing.T) {
	a, b := frameworktest.Claim("a", "3f2a-uid", "dev"), frameworktest.Claim("b", "4f2a-uid", "dev")
	for variant, crossed := range map[string]bool{"": false, dradriver.VariantSharedBuffer: true} {
		n, _ := frameworktest.StartStub(t, variant, a, b)
		var wg sync.WaitGroup
		for _, c := range []*resourceapi.ResourceClaim{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := n.TryPrepare(c); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		uids := map[any]bool{}
		for _, c := range []*resourceapi.ResourceClaim{a, b} {
			uids[objects(t, n.MetadataFile(c, "dev"))[0]["metadata"].(map[string]any)["uid"]] = true
		}
		if got := len(uids) == 1; got != crossed {
			t.Errorf("variant %q: the two files name the claims %v", variant, uids)
		}
	}
}
