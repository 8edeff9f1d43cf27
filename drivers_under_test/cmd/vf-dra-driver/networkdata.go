package main

import (
	"fmt"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
)

// The fields of status.devices networkData (KEP-4817), every one optional in the API.
const (
	fieldInterfaceName   = "interfaceName"
	fieldIPs             = "ips"
	fieldHardwareAddress = "hardwareAddress"
)

var allNetworkFields = []string{fieldInterfaceName, fieldIPs, fieldHardwareAddress}

// networkFields are the networkData fields the driver reports (--network-data-fields), in
// status.devices and in the deferred metadata alike.
type networkFields map[string]bool

// Set parses a comma-separated list of field names (flag.Value).
func (f *networkFields) Set(list string) error {
	chosen := networkFields{}
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(allNetworkFields, name) {
			return fmt.Errorf("%q is not a networkData field (%s)", name, strings.Join(allNetworkFields, ", "))
		}
		chosen[name] = true
	}
	*f = chosen
	return nil
}

func (f *networkFields) String() string {
	var names []string
	for _, name := range allNetworkFields {
		if (*f)[name] {
			names = append(names, name)
		}
	}
	return strings.Join(names, ",")
}

// of is nd with only the chosen fields.
func (f networkFields) of(nd resourceapi.NetworkDeviceData) *resourceapi.NetworkDeviceData {
	if !f[fieldInterfaceName] {
		nd.InterfaceName = ""
	}
	if !f[fieldIPs] {
		nd.IPs = nil
	}
	if !f[fieldHardwareAddress] {
		nd.HardwareAddress = ""
	}
	return &nd
}
