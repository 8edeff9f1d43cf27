// Package deviceplugin holds what every device plugin in dralab does the same way: serve the
// device plugin API on a socket in kubelet's device plugin directory and register with kubelet.
package deviceplugin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// KubeletSocket is the name of kubelet's registration socket in the device plugin directory.
const KubeletSocket = "kubelet.sock"

// Serve serves the API on dir/endpoint until stop, which removes the socket.
func Serve(dir, endpoint string, server pluginapi.DevicePluginServer) (stop func(), err error) {
	return serve(dir, endpoint, server, true)
}

// ServeLeavingSocket is Serve as a plugin that never cleans up its socket: it cannot listen where
// a previous instance left one, and stop leaves its own. For broken variants (MUT-01) only.
func ServeLeavingSocket(dir, endpoint string, server pluginapi.DevicePluginServer) (stop func(), err error) {
	return serve(dir, endpoint, server, false)
}

func serve(dir, endpoint string, server pluginapi.DevicePluginServer, cleanup bool) (stop func(), err error) {
	sock := filepath.Join(dir, endpoint)
	// A socket left behind by a killed instance would make Listen fail.
	if cleanup {
		if err := os.Remove(sock); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	lis, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return nil, err
	}
	// stop removes the socket itself: the listener would unlink the path whenever grpc gets
	// to close it, possibly after the next server took that path.
	lis.SetUnlinkOnClose(false)
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, server)
	go func() {
		if err := srv.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			klog.ErrorS(err, "Serving the device plugin API")
		}
	}()
	return func() {
		srv.Stop()
		if !cleanup {
			return
		}
		if err := os.Remove(sock); err != nil && !errors.Is(err, fs.ErrNotExist) {
			klog.ErrorS(err, "Removing the plugin socket")
		}
	}, nil
}

// Register sends req to the kubelet serving dir/kubelet.sock and returns that socket as it
// was, to tell a restarted kubelet from the one registered with. The error carries kubelet's
// answer when it refuses.
func Register(ctx context.Context, dir string, req *pluginapi.RegisterRequest) (os.FileInfo, error) {
	sock := filepath.Join(dir, KubeletSocket)
	kubelet, err := os.Stat(sock)
	if err != nil {
		return nil, fmt.Errorf("register with kubelet: %w", err)
	}
	conn, err := grpc.NewClient("unix:"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := pluginapi.NewRegistrationClient(conn).Register(ctx, req); err != nil {
		return nil, fmt.Errorf("register %s (API %s) with kubelet at %s: %w", req.ResourceName, req.Version, sock, err)
	}
	klog.InfoS("Registered with kubelet", "resource", req.ResourceName, "endpoint", req.Endpoint, "version", req.Version)
	return kubelet, nil
}
