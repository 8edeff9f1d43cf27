package main

import (
	"flag"
	"reflect"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"dralab.dev/drivers_under_test/internal/netdev"
)

var full = resourceapi.NetworkDeviceData{InterfaceName: "net1", IPs: []string{"10.97.0.5/24"}, HardwareAddress: "02:aa:bb:cc:dd:01"}

// parsed is the driver's command line with args.
func parsed(t *testing.T, args ...string) *config {
	t.Helper()
	fs := flag.NewFlagSet("vf-dra-driver", flag.ContinueOnError)
	c := newConfig(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return c
}

func fields(t *testing.T, args ...string) networkFields {
	t.Helper()
	return parsed(t, args...).fields
}

func TestEveryNetworkDataFieldByDefault(t *testing.T) {
	if got := fields(t).of(full); !reflect.DeepEqual(*got, full) {
		t.Errorf("got %+v, want %+v", *got, full)
	}
}

func TestNetworkDataWithTheChosenFieldsOnly(t *testing.T) {
	got := fields(t, "--network-data-fields=interfaceName,ips").of(full)
	want := resourceapi.NetworkDeviceData{InterfaceName: "net1", IPs: []string{"10.97.0.5/24"}}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("got %+v, want %+v", *got, want)
	}
	if full.HardwareAddress == "" {
		t.Error("of changed its argument")
	}
}

func TestUnknownNetworkDataFieldsAreRefused(t *testing.T) {
	for _, list := range []string{"mac", "", "ips,addresses"} {
		fs := flag.NewFlagSet("vf-dra-driver", flag.ContinueOnError)
		fs.SetOutput(new(strings.Builder))
		newConfig(fs)
		if err := fs.Parse([]string{"--network-data-fields=" + list}); err == nil || !strings.Contains(err.Error(), "networkData field") {
			t.Errorf("%q: got %v", list, err)
		}
	}
}

func TestTheTemplateVariantReportsAnotherIPForClaimsOfTemplatesOnly(t *testing.T) {
	c := parsed(t, "--break="+variantTemplateNetworkData)
	d := &vfDriver{opts: c.opts, fields: c.fields}
	attached := &netdev.Attached{InterfaceName: "net1", IPs: []string{"10.97.0.5/24"}, HardwareAddress: "02:aa:bb:cc:dd:01"}
	if got := d.networkData(&preparedClaim{}, attached); !reflect.DeepEqual(*got, full) {
		t.Errorf("a named claim: got %+v, want %+v", *got, full)
	}
	if got := d.networkData(&preparedClaim{Template: true}, attached); !reflect.DeepEqual(got.IPs, []string{"10.97.0.6/24"}) {
		t.Errorf("a claim of a template: got ips %v, want the next address", got.IPs)
	}
}

func TestTheSwapAndDuplicateVariantsReportAnotherDevicesInterface(t *testing.T) {
	a, b := &resourceapi.NetworkDeviceData{InterfaceName: "net1"}, &resourceapi.NetworkDeviceData{InterfaceName: "ens1f0v1"}
	for variant, want := range map[string][]*resourceapi.NetworkDeviceData{
		"":                          {a, b},
		variantSwapNetworkData:      {b, a},
		variantDuplicateNetworkData: {a, a},
	} {
		var args []string
		if variant != "" {
			args = []string{"--break=" + variant}
		}
		d := &vfDriver{opts: parsed(t, args...).opts}
		if got := d.misreported([]*resourceapi.NetworkDeviceData{a, b}); !reflect.DeepEqual(got, want) {
			t.Errorf("%q: got %v, want %v", variant, got, want)
		}
		if got := d.misreported([]*resourceapi.NetworkDeviceData{a}); !reflect.DeepEqual(got, []*resourceapi.NetworkDeviceData{a}) {
			t.Errorf("%q: one device: got %v, want its own", variant, got)
		}
	}
}
