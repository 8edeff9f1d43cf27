package dradriver

import (
	"context"
	"fmt"
	"sort"
	"testing"

	"google.golang.org/grpc"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
)

// answering is a prepare handler: each claim gets devices gpu-0 of r0, gpu-1 and gpu-2 of r1,
// each with its CDI device and its request's metadata one, as the framework answers.
func answering(_ context.Context, req any) (any, error) {
	resp := &drapb.NodePrepareResourcesResponse{Claims: map[string]*drapb.NodePrepareResourceResponse{}}
	for _, c := range req.(*drapb.NodePrepareResourcesRequest).Claims {
		var devices []*drapb.Device
		for name, request := range map[string]string{"gpu-0": "r0", "gpu-1": "r1", "gpu-2": "r1"} {
			devices = append(devices, &drapb.Device{PoolName: "node-1", DeviceName: name, RequestNames: []string{request},
				CdiDeviceIds: []string{"gpu.dralab.dev/gpu=" + c.Uid + "-" + name, "gpu.dralab.dev/metadata=" + c.Uid + "_" + request}})
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
	var late, first []string
	got := prepareOf(t, onLateRequest(func(l, f []*drapb.Device) {
		for _, d := range l {
			late = append(late, d.DeviceName)
		}
		for _, d := range f {
			first = append(first, d.DeviceName)
		}
	}), "a")
	sort.Strings(late)
	if len(got.Claims["a"].Devices) != 3 || fmt.Sprint(late) != "[gpu-1 gpu-2]" || fmt.Sprint(first) != "[gpu-0]" {
		t.Fatalf("r1's two devices are the later request's, r0's one the first's: late %v, first %v", late, first)
	}
}

func TestLateRequestMetadataSharedMountsEachRequestsFileWithTheOther(t *testing.T) {
	o := parse(t, "--break="+VariantLateRequestMetadataShared)
	for _, d := range prepareOf(t, o.reachOption(), "a").Claims["a"].Devices {
		want := map[string]string{"gpu-0": "[gpu.dralab.dev/gpu=a-gpu-0 gpu.dralab.dev/metadata=a_r0 gpu.dralab.dev/metadata=a_r1]",
			"gpu-1": "[gpu.dralab.dev/gpu=a-gpu-1 gpu.dralab.dev/metadata=a_r1 gpu.dralab.dev/metadata=a_r0]",
			"gpu-2": "[gpu.dralab.dev/gpu=a-gpu-2 gpu.dralab.dev/metadata=a_r1 gpu.dralab.dev/metadata=a_r0]"}
		if got := fmt.Sprint(d.CdiDeviceIds); got != want[d.DeviceName] {
			t.Errorf("%s: CDI devices %s, want %s", d.DeviceName, got, want[d.DeviceName])
		}
	}
}
