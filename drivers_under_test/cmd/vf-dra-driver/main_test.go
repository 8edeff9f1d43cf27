package main

import (
	"flag"
	"testing"

	"dralab.dev/drivers_under_test/internal/profiletest"
)

func TestTheProfilesVariantsAreFlagsOfTheDriver(t *testing.T) {
	profiletest.ParseVariants(t, "../../profiles/net.yaml", func(fs *flag.FlagSet) func() error { return newConfig(fs).opts.Validate })
}
