package dradriver

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"

	"google.golang.org/grpc"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// contractOptions are the framework's hooks into its gRPC calls and sockets that the kubelet
// plugin contract's variants bend (duplicate-device acts in Run, leave-cdi-spec in
// RemoveClaimCDISpec); none for the correct driver.
func (o *Options) contractOptions() []kubeletplugin.Option {
	v := o.Variant
	switch {
	case v.Is(VariantRemoveRegistrationSocket):
		return []kubeletplugin.Option{kubeletplugin.GRPCInterceptor(o.removeRegistrationSocket)}
	case v.Is(VariantUnresolvableCDIID):
		return []kubeletplugin.Option{kubeletplugin.GRPCInterceptor(unresolvableCDIIDs)}
	case v.Is(VariantLeaveSocket):
		return []kubeletplugin.Option{kubeletplugin.PluginListener(listenLeavingSocket)}
	}
	return nil
}

// removeRegistrationSocket intercepts the registration service: once the kubelet reports the
// driver registered, the registration socket leaves plugins_registry, so a kubelet that
// restarts finds no driver to register. The kubelet's plugin watcher deregisters a plugin whose
// socket is deleted, but ignores renames and hidden files: renamed to a hidden name before it
// is deleted, the socket's removal goes unnoticed by the running kubelet, which keeps the driver.
func (o *Options) removeRegistrationSocket(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if status, ok := req.(*registerapi.RegistrationStatus); !ok || err != nil || !status.PluginRegistered {
		return resp, err
	}
	socket := o.RegistrationSocket()
	hidden := filepath.Join(filepath.Dir(socket), "."+filepath.Base(socket))
	logger := klog.FromContext(ctx)
	if rmErr := errors.Join(os.Rename(socket, hidden), os.Remove(hidden)); rmErr != nil {
		logger.Error(rmErr, "Removing the registration socket", "socket", socket)
	} else {
		logger.Info("Registered; registration socket removed", "socket", socket, "variant", o.Variant.Describe())
	}
	return resp, err
}

// unresolvableSuffix makes a CDI device ID one that no spec defines.
const unresolvableSuffix = "-unresolvable"

// unresolvableCDIIDs intercepts NodePrepareResources (v1, the kubelet's): every CDI device ID of
// the answer, the driver's and the framework's metadata ones, gets unresolvableSuffix.
func unresolvableCDIIDs(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	answer, ok := resp.(*drapb.NodePrepareResourcesResponse)
	if !ok {
		return resp, err
	}
	for _, claim := range answer.Claims {
		for _, device := range claim.Devices {
			// New slices: the old ones may be the driver's, kept in its checkpoint.
			ids := make([]string, len(device.CdiDeviceIds))
			for i, id := range device.CdiDeviceIds {
				ids[i] = id + unresolvableSuffix
			}
			device.CdiDeviceIds = ids
		}
	}
	return resp, err
}

// listenLeavingSocket creates the DRA service socket as the framework does (removing a stale
// one first), but the framework's Stop leaves it in the plugin data dir when it closes the
// listener, as a driver that skips its cleanup does.
func listenLeavingSocket(ctx context.Context, path string) (net.Listener, error) {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	l, err := (&net.ListenConfig{}).Listen(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	// Go removes the socket file it created when the listener closes, unless told not to.
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	return l, nil
}
