package dradriver

import (
	"strings"

	resourceapi "k8s.io/api/resource/v1"
)

// AttributeName is how the driver publishes its own attribute name: as it is (in the driver
// name's domain) or qualified with --attribute-domain.
func (o *Options) AttributeName(name string) resourceapi.QualifiedName {
	if o.AttributeDomain == "" || strings.Contains(name, "/") {
		return resourceapi.QualifiedName(name)
	}
	return resourceapi.QualifiedName(o.AttributeDomain + "/" + name)
}

// Attributes are attrs under the names the driver publishes (AttributeName): names that already
// carry a domain, such as the standard resource.kubernetes.io ones, stay as they are.
func (o *Options) Attributes(attrs map[resourceapi.QualifiedName]resourceapi.DeviceAttribute) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
	out := make(map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, len(attrs))
	for name, value := range attrs {
		out[o.AttributeName(string(name))] = value
	}
	return out
}
