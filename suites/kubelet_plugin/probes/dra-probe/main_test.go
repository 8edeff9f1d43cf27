package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"dralab.dev/drivers_under_test/dradriver"
	"dralab.dev/drivers_under_test/dradriver/frameworktest"
)

// The probe finds the driver through plugins_registry as the kubelet does and its second
// NodePrepareResources of a prepared claim reaches the driver: the answer names the claim's device.
func TestTheProbeFindsTheDriverAndPreparesAgain(t *testing.T) {
	c := frameworktest.Claim("claim", "5d2e-uid", "r")
	n, o := frameworktest.StartStub(t, "", c)
	n.Prepare(t, c)
	registry := filepath.Dir(o.RegistrationSocket())
	again := &claims{}
	if err := again.Set("ns/claim/5d2e-uid"); err != nil {
		t.Fatal(err)
	}
	out := call(t.Context(), registry, frameworktest.Driver, *again, nil)
	if out.Error != "" || out.Endpoint != filepath.Join(o.PluginDataDir(), "dra.sock") {
		t.Fatalf("probe: %+v", out)
	}
	var answer struct {
		Claims map[string]struct {
			Devices []struct{ DeviceName string } `json:"devices"`
		} `json:"claims"`
	}
	if err := json.Unmarshal(out.Answer, &answer); err != nil {
		t.Fatal(err)
	}
	if got := answer.Claims["5d2e-uid"].Devices; len(got) != 1 || got[0].DeviceName != "gpu-0" {
		t.Errorf("answer to the second prepare: %s", out.Answer)
	}
	if other := call(t.Context(), registry, "other.dralab.dev", *again, nil); !strings.Contains(other.Error, "no registration socket of DRA driver other.dralab.dev") {
		t.Errorf("another driver's name: %+v", other)
	}
}

// The probe's NodeUnprepareResources reaches the driver: a claim the kubelet has unprepared,
// unprepared again, is answered without an error by a correct driver and with one by the variant
// that fails a repeated unprepare.
func TestTheProbeUnpreparesAgain(t *testing.T) {
	c := frameworktest.Claim("claim", "7c4d-uid", "r")
	for variant, refused := range map[string]bool{"": false, dradriver.VariantFailRepeatUnprepare: true} {
		n, o := frameworktest.StartStub(t, variant, c)
		n.Prepare(t, c)
		n.Unprepare(t, c) // the kubelet's
		again := &claims{}
		if err := again.Set("ns/claim/7c4d-uid"); err != nil {
			t.Fatal(err)
		}
		out := call(t.Context(), filepath.Dir(o.RegistrationSocket()), frameworktest.Driver, nil, *again)
		var answer struct {
			Claims map[string]struct {
				Error string `json:"error"`
			} `json:"claims"`
		}
		if err := json.Unmarshal(out.Answer, &answer); out.Error != "" || err != nil {
			t.Fatalf("variant %q: probe %+v (%v)", variant, out, err)
		}
		entry, ok := answer.Claims["7c4d-uid"]
		if !ok || (entry.Error != "") != refused {
			t.Errorf("variant %q: answer to the second unprepare %s, want an error %v", variant, out.Answer, refused)
		}
	}
}
