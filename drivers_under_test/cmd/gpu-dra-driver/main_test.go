package main

import (
	"flag"
	"testing"

	"dralab.dev/drivers_under_test/internal/profiletest"
)

func TestTheProfilesVariantsAreFlagsOfTheDriver(t *testing.T) {
	for _, profile := range []string{"../../profiles/gpu.yaml", "../../profiles/gpu-nvml.yaml"} {
		profiletest.ParseVariants(t, profile, func(fs *flag.FlagSet) func() error { return newConfig(fs).opts.Validate })
	}
}
