// Package frameworktest prepares and unprepares claims through the upstream kubeletplugin
// framework as the kubelet does (gRPC on the driver's socket), so that a test sees the metadata
// files and CDI specs the framework writes from a driver's prepare results, through its
// variant's file operations. The claims come from a fake API; no kubelet is needed.
package frameworktest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"

	"dralab.dev/drivers_under_test/dradriver"
)

// Dir is a new temporary directory for a kubelet root and CDI dir, short enough for the unix
// sockets the framework creates under it (at most 108 bytes), removed after the test.
func Dir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "dra")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// Node is a driver started through the framework.
type Node struct {
	opts   *dradriver.Options
	helper *kubeletplugin.Helper
	client drapb.DRAPluginClient
}

// Start starts plugin with opts (dradriver.Options.Start), serving claims from a fake API;
// it stops with the test.
func Start(t *testing.T, opts *dradriver.Options, plugin kubeletplugin.DRAPlugin, claims ...*resourceapi.ResourceClaim) *Node {
	t.Helper()
	for _, dir := range []string{opts.PluginDataDir(), filepath.Dir(opts.RegistrationSocket())} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	api := fake.NewClientset()
	for _, claim := range claims {
		if _, err := api.ResourceV1().ResourceClaims(claim.Namespace).Create(t.Context(), claim, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	helper, err := opts.Start(t.Context(), plugin, api)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(helper.Stop)
	conn, err := grpc.NewClient("unix://"+filepath.Join(opts.PluginDataDir(), "dra.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &Node{opts: opts, helper: helper, client: drapb.NewDRAPluginClient(conn)}
}

// Stop stops the driver as SIGTERM does, with the framework's Stop; stopping again at the end of
// the test does nothing.
func (n *Node) Stop() { n.helper.Stop() }

func request(claims []*resourceapi.ResourceClaim) []*drapb.Claim {
	var out []*drapb.Claim
	for _, c := range claims {
		out = append(out, &drapb.Claim{Namespace: c.Namespace, Name: c.Name, Uid: string(c.UID)})
	}
	return out
}

// Prepare calls NodePrepareResources for claims in one call, as the kubelet does for a pod,
// and returns the devices of each claim by claim UID; an error fails the test.
func (n *Node) Prepare(t *testing.T, claims ...*resourceapi.ResourceClaim) map[string][]*drapb.Device {
	t.Helper()
	devices, err := n.TryPrepare(claims...)
	if err != nil {
		t.Fatal(err)
	}
	return devices
}

// PrepareCall is NodePrepareResources for claims in one call, its answer as the kubelet gets it.
func (n *Node) PrepareCall(claims ...*resourceapi.ResourceClaim) (*drapb.NodePrepareResourcesResponse, error) {
	return n.client.NodePrepareResources(context.Background(), &drapb.NodePrepareResourcesRequest{Claims: request(claims)})
}

// UnprepareCall is NodeUnprepareResources for claims in one call, its answer as the kubelet gets it.
func (n *Node) UnprepareCall(claims ...*resourceapi.ResourceClaim) (*drapb.NodeUnprepareResourcesResponse, error) {
	return n.client.NodeUnprepareResources(context.Background(), &drapb.NodeUnprepareResourcesRequest{Claims: request(claims)})
}

// TryPrepare is Prepare for goroutines other than the test's: it returns the error.
func (n *Node) TryPrepare(claims ...*resourceapi.ResourceClaim) (map[string][]*drapb.Device, error) {
	resp, err := n.PrepareCall(claims...)
	if err != nil {
		return nil, fmt.Errorf("NodePrepareResources: %w", err)
	}
	out := map[string][]*drapb.Device{}
	for uid, result := range resp.Claims {
		if result.Error != "" {
			return nil, fmt.Errorf("NodePrepareResources, claim %s: %s", uid, result.Error)
		}
		out[uid] = result.Devices
	}
	return out, nil
}

// Unprepare calls NodeUnprepareResources for claims; a claim's error fails the test.
func (n *Node) Unprepare(t *testing.T, claims ...*resourceapi.ResourceClaim) {
	t.Helper()
	resp, err := n.UnprepareCall(claims...)
	if err != nil {
		t.Fatalf("NodeUnprepareResources: %v", err)
	}
	for uid, result := range resp.Claims {
		if result.Error != "" {
			t.Fatalf("NodeUnprepareResources, claim %s: %s", uid, result.Error)
		}
	}
}

// MetadataFile is where the framework puts a request's metadata file on the host.
func (n *Node) MetadataFile(claim *resourceapi.ResourceClaim, request string) string {
	return filepath.Join(n.opts.PluginDataDir(), "dra-device-metadata", claim.Namespace+"_"+claim.Name, request, "metadata.json")
}

// CDISpec is where the framework puts the CDI spec that mounts a request's metadata file.
func (n *Node) CDISpec(claim *resourceapi.ResourceClaim, request string) string {
	return filepath.Join(n.opts.CDIDir, n.opts.DriverName+"_metadata_"+string(claim.UID)+"_"+request+".json")
}
