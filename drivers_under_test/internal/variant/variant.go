// Package variant selects one broken behaviour of a reference driver by name (MUT-01). Each
// variant breaks exactly one promise; the suites must FAIL against it. The empty name is the
// correct driver.
package variant

import (
	"flag"
	"fmt"
	"sort"
	"strings"
)

// Selected is the variant chosen on the command line.
type Selected struct {
	name  string
	known map[string]string
}

// Flag registers --break on fs; known maps each variant this program has to what it breaks.
func Flag(fs *flag.FlagSet, known map[string]string) *Selected {
	s := &Selected{known: known}
	fs.Func("break", "run a broken variant (MUT-01): "+strings.Join(names(known), ", "), func(v string) error {
		if _, ok := known[v]; !ok {
			return fmt.Errorf("unknown variant %q; this program has: %s", v, strings.Join(names(known), ", "))
		}
		s.name = v
		return nil
	})
	return s
}

// Is reports whether variant name was selected.
func (s *Selected) Is(name string) bool {
	if _, ok := s.known[name]; !ok {
		panic("variant.Is: unregistered variant " + name) // a typo would silently disable a variant
	}
	return s.name == name
}

// Name is the selected variant, "" for the correct driver.
func (s *Selected) Name() string { return s.name }

// Describe is what the selected variant breaks, for the startup log line.
func (s *Selected) Describe() string {
	if s.name == "" {
		return "correct driver (no variant)"
	}
	return fmt.Sprintf("BROKEN variant %s: %s", s.name, s.known[s.name])
}

func names(known map[string]string) []string {
	out := make([]string, 0, len(known))
	for k := range known {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
