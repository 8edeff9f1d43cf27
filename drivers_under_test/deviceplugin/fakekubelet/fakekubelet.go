// Package fakekubelet is kubelet's device plugin Registration service on kubelet.sock, for the
// unit tests of dralab's device plugins.
package fakekubelet

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"dralab.dev/drivers_under_test/deviceplugin"
)

// Kubelet records each registration request and answers it with Refuse's error, if any.
type Kubelet struct {
	pluginapi.UnimplementedRegistrationServer
	Requests chan *pluginapi.RegisterRequest
	Refuse   func(*pluginapi.RegisterRequest) error
}

func New() *Kubelet {
	return &Kubelet{Requests: make(chan *pluginapi.RegisterRequest, 10)}
}

func (k *Kubelet) Register(_ context.Context, req *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	k.Requests <- req
	if k.Refuse != nil {
		if err := k.Refuse(req); err != nil {
			return nil, err
		}
	}
	return &pluginapi.Empty{}, nil
}

// Serve starts kubelet's socket in dir; stopping the server removes it.
func (k *Kubelet) Serve(t testing.TB, dir string) *grpc.Server {
	t.Helper()
	lis, err := net.Listen("unix", filepath.Join(dir, deviceplugin.KubeletSocket))
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	pluginapi.RegisterRegistrationServer(srv, k)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return srv
}

// Registered is the next registration request, failing the test if none comes within timeout.
func (k *Kubelet) Registered(t testing.TB, timeout time.Duration) *pluginapi.RegisterRequest {
	t.Helper()
	select {
	case req := <-k.Requests:
		return req
	case <-time.After(timeout):
		t.Fatal("the plugin did not register")
		return nil
	}
}
