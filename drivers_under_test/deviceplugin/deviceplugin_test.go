package deviceplugin_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"dralab.dev/drivers_under_test/deviceplugin"
	"dralab.dev/drivers_under_test/deviceplugin/fakekubelet"
)

func TestRegisterCarriesKubeletsAnswer(t *testing.T) {
	dir := t.TempDir()
	kubelet := fakekubelet.New()
	kubelet.Refuse = func(req *pluginapi.RegisterRequest) error {
		if req.Version != pluginapi.Version {
			return fmt.Errorf("requested API version %q is not supported", req.Version)
		}
		return nil
	}
	kubelet.Serve(t, dir)

	req := &pluginapi.RegisterRequest{Version: pluginapi.Version, Endpoint: "p.sock", ResourceName: "dralab.dev/x"}
	if _, err := deviceplugin.Register(context.Background(), dir, req); err != nil {
		t.Fatalf("accepted registration: %v", err)
	}
	if got := kubelet.Registered(t, time.Second); got.Endpoint != "p.sock" || got.ResourceName != "dralab.dev/x" {
		t.Errorf("kubelet got %v", got)
	}
	req.Version = "v1alpha1"
	_, err := deviceplugin.Register(context.Background(), dir, req)
	if err == nil || !strings.Contains(err.Error(), `requested API version "v1alpha1" is not supported`) {
		t.Errorf("refused registration: want kubelet's answer in the error, got %v", err)
	}
}

func TestRegisterWithoutKubelet(t *testing.T) {
	_, err := deviceplugin.Register(context.Background(), t.TempDir(), &pluginapi.RegisterRequest{})
	if err == nil || !strings.Contains(err.Error(), "register with kubelet") {
		t.Errorf("want an error naming kubelet's missing socket, got %v", err)
	}
}

type server struct {
	pluginapi.UnimplementedDevicePluginServer
}

func TestServeTakesOverAStaleSocketAndStopRemovesIt(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "p.sock")
	if err := os.WriteFile(sock, nil, 0o600); err != nil { // what a killed instance leaves behind
		t.Fatal(err)
	}
	stop, err := deviceplugin.Serve(dir, "p.sock", server{})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient("unix:"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err = pluginapi.NewDevicePluginClient(conn).GetDevicePluginOptions(ctx, &pluginapi.Empty{})
	if status.Code(err) != codes.Unimplemented { // the server answered
		t.Errorf("calling the served socket: %v", err)
	}
	stop()
	if _, err := os.Stat(sock); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket left after stop: %v", err)
	}
}
