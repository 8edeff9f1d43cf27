package main

import (
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	drahealthv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"

	"dralab.dev/drivers_under_test/dradriver/frameworktest"
)

// The kubelet's health stream (KEP-4680) through the framework: the prepared GPU is reported
// healthy, then unhealthy once it faults.
func TestTheHealthStreamReportsAPreparedGPUsFault(t *testing.T) {
	d := newTestDriver(t, frameworktest.Dir(t), "--poll=50ms")
	c := testClaim(d.opts)
	frameworktest.Start(t, d.opts, d, c).Prepare(t, c)
	conn, err := grpc.NewClient("unix://"+filepath.Join(d.opts.PluginDataDir(), "dra.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	stream, err := drahealthv1.NewDRAResourceHealthClient(conn).NodeWatchResources(t.Context(), &drahealthv1.NodeWatchResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	health := func() drahealthv1.HealthStatus {
		resp, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, dev := range resp.Devices {
			if dev.Device.DeviceName == "gpu-1" && dev.Device.PoolName == "node-1" {
				return dev.Health
			}
		}
		t.Fatalf("gpu-1 not in the report %v", resp.Devices)
		return 0
	}
	if got := health(); got != drahealthv1.HealthStatus_HEALTHY {
		t.Errorf("before the fault: %v", got)
	}
	d.discover = twoGPUs(false)
	deadline := time.Now().Add(5 * time.Second)
	for health() != drahealthv1.HealthStatus_UNHEALTHY {
		if time.Now().After(deadline) {
			t.Fatal("the fault never reached the stream")
		}
	}
}
