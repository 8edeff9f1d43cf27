package dradriver

import (
	"reflect"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"
)

func TestAttributeDomainQualifiesOnlyTheDriversOwnNames(t *testing.T) {
	attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		"index":                           {IntValue: ptr.To(int64(3))},
		"resource.kubernetes.io/pciBusID": {StringValue: ptr.To("0000:3b:00.0")},
	}
	if got := parse(t).Attributes(attrs); !reflect.DeepEqual(got, attrs) {
		t.Errorf("without --attribute-domain: %v", got)
	}
	o := parse(t, "--attribute-domain=dralab.dev")
	want := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		"dralab.dev/index":                {IntValue: ptr.To(int64(3))},
		"resource.kubernetes.io/pciBusID": {StringValue: ptr.To("0000:3b:00.0")},
	}
	if got := o.Attributes(attrs); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := o.AttributeName("index"); got != "dralab.dev/index" {
		t.Errorf("AttributeName(index) = %s", got)
	}
}
