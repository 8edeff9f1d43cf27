package dradriver

import (
	"flag"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
)

// parse is the shared options as a driver's command line sets them, on a node.
func parse(t *testing.T, args ...string) *Options {
	t.Helper()
	fs := flag.NewFlagSet("driver", flag.ContinueOnError)
	o := RegisterFlags(fs, "gpu.dralab.dev", nil)
	if err := fs.Parse(append([]string{"--node-name=node-1"}, args...)); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return o
}

func TestDefaultsAreTheReferenceDriversChoices(t *testing.T) {
	o := parse(t)
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if o.PrepareDelay != 0 || o.DevicesPerNode != 0 || o.Pools != 1 || o.SlicesPerPool != 1 ||
		o.StatusDevices != StatusDevicesAll || !o.ReadyCondition || o.AttributeDomain != "" || o.CDIDir != "/var/run/cdi" {
		t.Errorf("defaults: %+v", o)
	}
}

func TestValidChoicesParse(t *testing.T) {
	o := parse(t, "--prepare-delay=3s", "--devices-per-node=1", "--pools=2", "--slices-per-pool=3",
		"--status-devices=first", "--ready-condition=false", "--attribute-domain=dralab.dev", "--cdi-dir=/etc/cdi")
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if o.PrepareDelay != 3*time.Second || o.DevicesPerNode != 1 || o.Pools != 2 || o.SlicesPerPool != 3 ||
		o.StatusDevices != StatusDevicesFirst || o.ReadyCondition || o.AttributeDomain != "dralab.dev" || o.CDIDir != "/etc/cdi" {
		t.Errorf("parsed: %+v", o)
	}
}

func TestInvalidChoicesAreRefusedByFlag(t *testing.T) {
	for _, tc := range []struct{ arg, flag string }{
		{"--prepare-delay=-1s", "--prepare-delay"},
		{"--devices-per-node=-1", "--devices-per-node"},
		{"--pools=0", "--pools"},
		{"--slices-per-pool=0", "--slices-per-pool"},
		{"--status-devices=some", "--status-devices"},
		{"--attribute-domain=Not_A_Domain", "--attribute-domain"},
		{"--attribute-domain=" + strings.Repeat("a", 64), "--attribute-domain"},
		{"--cdi-dir=etc/cdi", "--cdi-dir"},
	} {
		err := parse(t, tc.arg).Validate()
		if err == nil || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("%s: got %v, want an error naming %s", tc.arg, err, tc.flag)
		}
	}
}

// The last value of a repeated flag wins: a profile variant's args come after the manifest's.
func TestAVariantsArgsOverrideTheManifests(t *testing.T) {
	o := parse(t, "--metadata-versions=metadata.resource.k8s.io/v1beta1,metadata.resource.k8s.io/v1alpha1",
		"--metadata-versions=metadata.resource.k8s.io/v1beta1")
	versions, err := o.metadataVersions()
	if err != nil || len(versions) != 1 || versions[0].Version != "v1beta1" {
		t.Errorf("metadata versions %v (%v), want only v1beta1", versions, err)
	}
}

// The correct driver looks for its devices each time; static-inventory publishes those it found
// at start, whatever the node has since.
func TestStaticInventoryPublishesWhatItFoundAtStart(t *testing.T) {
	atStart := []resourceapi.Device{{Name: "gpu-0"}, {Name: "gpu-1"}}
	now := func() ([]resourceapi.Device, error) { return atStart[:1], nil }
	for args, want := range map[string]int{"": 1, "--break=" + VariantStaticInventory: 2} {
		o := parse(t, strings.Fields(args)...)
		found, _ := o.discovery(atStart, now)()
		if len(found) != want {
			t.Errorf("%q: published %d devices once one was removed, want %d", args, len(found), want)
		}
	}
}

func TestPodsPerClaimRefusesAClaimReservedForMore(t *testing.T) {
	claim := &resourceapi.ResourceClaim{Status: resourceapi.ResourceClaimStatus{ReservedFor: []resourceapi.ResourceClaimConsumerReference{
		{Resource: "pods", Name: "a", UID: "1"}, {Resource: "pods", Name: "b", UID: "2"}}}}
	claim.Namespace, claim.Name = "ns", "shared"
	if err := parse(t).TooManyPods(claim); err != nil {
		t.Errorf("by default: %v, want any number of pods served", err)
	}
	err := parse(t, "--pods-per-claim=1").TooManyPods(claim)
	if err == nil || !strings.Contains(err.Error(), "claim ns/shared is reserved for 2 pods") {
		t.Errorf("--pods-per-claim=1: %v, want the claim of two pods refused", err)
	}
	claim.Status.ReservedFor = claim.Status.ReservedFor[:1]
	if err := parse(t, "--pods-per-claim=1").TooManyPods(claim); err != nil {
		t.Errorf("--pods-per-claim=1, one pod: %v, want it served", err)
	}
}
