// Package profiletest checks a reference driver's command line against the driver profiles
// that deploy it: every variant's args (appended to the manifest's by dralab) must be flags the
// driver has, with values it accepts.
package profiletest

import (
	"flag"
	"os"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// ParseVariants parses each variant's args of the profile file on a flag set of its own, with
// the flags that register adds; the function register returns validates what was parsed.
func ParseVariants(t *testing.T, profile string, register func(*flag.FlagSet) (validate func() error)) {
	t.Helper()
	f, err := os.Open(profile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var p struct {
		Variants map[string]struct {
			Args []string `json:"args"`
		} `json:"variants"`
	}
	if err := utilyaml.NewYAMLOrJSONDecoder(f, 4096).Decode(&p); err != nil {
		t.Fatalf("%s: %v", profile, err)
	}
	if len(p.Variants) == 0 {
		t.Fatalf("%s has no variants", profile)
	}
	for name, v := range p.Variants {
		fs := flag.NewFlagSet(name, flag.ContinueOnError)
		validate := register(fs)
		if err := fs.Parse(append([]string{"--node-name=node-1"}, v.Args...)); err != nil {
			t.Errorf("%s variant %s: %v", profile, name, err)
		} else if err := validate(); err != nil {
			t.Errorf("%s variant %s: %v", profile, name, err)
		}
	}
}
