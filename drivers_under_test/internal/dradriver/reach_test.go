package dradriver

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
)

// answering is a prepare handler: each claim gets devices gpu-0 of r0, gpu-1 and gpu-2 of r1.
func answering(_ context.Context, req any) (any, error) {
	resp := &drapb.NodePrepareResourcesResponse{Claims: map[string]*drapb.NodePrepareResourceResponse{}}
	for _, c := range req.(*drapb.NodePrepareResourcesRequest).Claims {
		var devices []*drapb.Device
		for name, request := range map[string]string{"gpu-0": "r0", "gpu-1": "r1", "gpu-2": "r1"} {
			devices = append(devices, &drapb.Device{PoolName: "node-1", DeviceName: name, RequestNames: []string{request},
				CdiDeviceIds: []string{"gpu.dralab.dev/gpu=" + c.Uid + "-" + name}})
		}
		resp.Claims[c.Uid] = &drapb.NodePrepareResourceResponse{Devices: devices}
	}
	return resp, nil
}

func prepareOf(t *testing.T, intercept grpc.UnaryServerInterceptor, uids ...string) *drapb.NodePrepareResourcesResponse {
	t.Helper()
	req := &drapb.NodePrepareResourcesRequest{}
	for _, uid := range uids {
		req.Claims = append(req.Claims, &drapb.Claim{Uid: uid, Namespace: "ns", Name: uid})
	}
	resp, err := intercept(context.Background(), req, nil, answering)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*drapb.NodePrepareResourcesResponse)
}

func TestThirdClaimVariantsBendOnlyCallsOfThreeClaims(t *testing.T) {
	drop := onThirdClaim(func(answer *drapb.NodePrepareResourcesResponse, _, last string) { delete(answer.Claims, last) })
	if got := prepareOf(t, drop, "a", "b"); len(got.Claims) != 2 {
		t.Fatalf("two claims: answered as the driver does, got %v", got.Claims)
	}
	if got := prepareOf(t, drop, "a", "b", "c"); len(got.Claims) != 2 || got.Claims["c"] != nil {
		t.Fatalf("three claims: the last is left out, got %v", got.Claims)
	}
}

func TestLateRequestVariantsBendOnlyALaterRequestOfSeveralDevices(t *testing.T) {
	got := prepareOf(t, onLateRequest(func(d *drapb.Device, first string) { d.RequestNames = []string{first} }), "a")
	for _, d := range got.Claims["a"].Devices {
		if d.RequestNames[0] != "r0" {
			t.Fatalf("r1's two devices are answered as r0's: %v", d)
		}
	}
}
