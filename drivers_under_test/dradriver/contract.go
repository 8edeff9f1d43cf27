package dradriver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

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
	if reach := o.reachOption(); reach != nil {
		return []kubeletplugin.Option{kubeletplugin.GRPCInterceptor(reach)}
	}
	v := o.Variant
	switch {
	case v.Is(VariantRemoveRegistrationSocket):
		return []kubeletplugin.Option{kubeletplugin.GRPCInterceptor(o.removeRegistrationSocket)}
	case v.Is(VariantUnresolvableCDIID):
		return []kubeletplugin.Option{kubeletplugin.GRPCInterceptor(unresolvableCDIIDs)}
	case v.Is(VariantLeaveSocket):
		return []kubeletplugin.Option{kubeletplugin.PluginListener(listenLeavingSocket)}
	case v.Is(VariantAnyRequest):
		return []kubeletplugin.Option{kubeletplugin.GRPCInterceptor(anyRequest)}
	case v.Is(VariantFailWholeCall):
		return []kubeletplugin.Option{kubeletplugin.GRPCInterceptor(failWholeCall)}
	case v.Is(VariantWedgeAfterError):
		return []kubeletplugin.Option{kubeletplugin.GRPCInterceptor((&wedge{}).intercept)}
	case v.Is(VariantStrictUnprepare):
		return []kubeletplugin.Option{kubeletplugin.GRPCInterceptor((&preparedClaims{prepared: map[string]bool{}}).strictUnprepare)}
	case v.Is(VariantPrepareOnce):
		return []kubeletplugin.Option{kubeletplugin.GRPCInterceptor((&preparedClaims{prepared: map[string]bool{}}).prepareOnce)}
	case v.Is(VariantOmitLastDevice):
		return []kubeletplugin.Option{kubeletplugin.GRPCInterceptor(omitLastDevice)}
	case v.Is(VariantFailRepeatUnprepare):
		return []kubeletplugin.Option{kubeletplugin.GRPCInterceptor((&askedClaims{asked: map[string]bool{}, refused: map[string]bool{}}).failRepeatUnprepare)}
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

// prepareAnswer is the answer of a NodePrepareResources call that succeeded as a call.
func prepareAnswer(resp any, err error) (*drapb.NodePrepareResourcesResponse, bool) {
	answer, ok := resp.(*drapb.NodePrepareResourcesResponse)
	return answer, ok && err == nil
}

// anyRequest answers each device without request names (the API: "If empty, the device is
// associated with all requests"), metadata CDI devices included.
func anyRequest(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if answer, ok := prepareAnswer(resp, err); ok {
		for _, claim := range answer.Claims {
			for _, device := range claim.Devices {
				device.RequestNames = nil
			}
		}
	}
	return resp, err
}

// failWholeCall turns the first claim error of a NodePrepareResources answer into an error of
// the call, cause kept: the kubelet then cannot tell which claim failed.
func failWholeCall(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	answer, ok := prepareAnswer(resp, err)
	if !ok {
		return resp, err
	}
	for uid, claim := range answer.Claims {
		if claim.Error != "" {
			return nil, fmt.Errorf("preparing claims failed: claim %s: %s", uid, claim.Error)
		}
	}
	return resp, err
}

// wedge remembers the first claim that failed to prepare and fails every claim prepared in a
// later call, as a driver whose error path leaves it broken does.
type wedge struct {
	mu     sync.Mutex
	failed string
}

func (w *wedge) intercept(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	answer, ok := prepareAnswer(resp, err)
	if !ok {
		return resp, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed != "" {
		for uid, claim := range answer.Claims {
			if claim.Error == "" {
				answer.Claims[uid] = &drapb.NodePrepareResourceResponse{Error: "driver unavailable since claim " + w.failed + " failed to prepare"}
			}
		}
		return answer, nil
	}
	for uid, claim := range answer.Claims {
		if claim.Error != "" {
			w.failed = uid
		}
	}
	return answer, nil
}

// preparedClaims follows, from the answers, which claims this process has prepared and not
// unprepared since: what the variants that break idempotency go by.
type preparedClaims struct {
	mu       sync.Mutex
	prepared map[string]bool
}

// before is the claims prepared before a call, then noted with that call's answer.
func (p *preparedClaims) around(ctx context.Context, req any, handler grpc.UnaryHandler) (map[string]bool, any, error) {
	p.mu.Lock()
	before := maps.Clone(p.prepared)
	p.mu.Unlock()
	resp, err := handler(ctx, req)
	p.mu.Lock()
	defer p.mu.Unlock()
	if answer, ok := prepareAnswer(resp, err); ok {
		for uid, claim := range answer.Claims {
			if claim.Error == "" {
				p.prepared[uid] = true
			}
		}
	}
	if unprepare, ok := req.(*drapb.NodeUnprepareResourcesRequest); ok && err == nil {
		for _, claim := range unprepare.Claims {
			delete(p.prepared, claim.Uid)
		}
	}
	return before, resp, err
}

// strictUnprepare answers NodeUnprepareResources with an error for each claim this process did
// not prepare successfully, where the API wants unprepare to be idempotent.
func (p *preparedClaims) strictUnprepare(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	before, resp, err := p.around(ctx, req, handler)
	unprepare, isUnprepare := req.(*drapb.NodeUnprepareResourcesRequest)
	answer, ok := resp.(*drapb.NodeUnprepareResourcesResponse)
	if !isUnprepare || !ok || err != nil {
		return resp, err
	}
	for _, claim := range unprepare.Claims {
		if !before[claim.Uid] {
			answer.Claims[claim.Uid] = &drapb.NodeUnprepareResourceResponse{Error: fmt.Sprintf("claim %s/%s (%s) was never prepared by this driver", claim.Namespace, claim.Name, claim.Uid)}
		}
	}
	return answer, nil
}

// prepareOnce answers NodePrepareResources with an error for each claim this process has
// prepared already, where the API wants prepare to be idempotent (the kubelet asks again after
// it restarts).
func (p *preparedClaims) prepareOnce(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	before, resp, err := p.around(ctx, req, handler)
	if answer, ok := prepareAnswer(resp, err); ok {
		for uid := range answer.Claims {
			if before[uid] {
				answer.Claims[uid] = &drapb.NodePrepareResourceResponse{Error: fmt.Sprintf("claim %s is prepared already", uid)}
			}
		}
	}
	return resp, err
}

// omitLastDevice leaves out of each claim's answer its last device answered for a request after
// another device of that request. The framework wrote the metadata files from the driver's whole
// answer and put each request's metadata CDI device on its first device, so containers still
// get their metadata, and the claim's CDI spec still defines the device: only the answer lacks it.
func omitLastDevice(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if answer, ok := prepareAnswer(resp, err); ok {
		for _, claim := range answer.Claims {
			if last := lastOfARequest(claim.Devices); last >= 0 {
				// The framework makes the answer's list for each call: nothing else holds it.
				claim.Devices = slices.Delete(claim.Devices, last, last+1)
			}
		}
	}
	return resp, err
}

// lastOfARequest is the index of the last device answered for the same requests as a device
// before it; -1 if each device has requests of its own.
func lastOfARequest(devices []*drapb.Device) int {
	seen, last := map[string]bool{}, -1
	for i, d := range devices {
		requests := strings.Join(d.RequestNames, ",")
		if seen[requests] {
			last = i
		}
		seen[requests] = true
	}
	return last
}

// askedClaims follows which claims this process was asked to prepare, whatever it answered, and
// has not unprepared since, and which unprepares it refused: what fail-repeat-unprepare goes by.
type askedClaims struct {
	mu      sync.Mutex
	asked   map[string]bool
	refused map[string]bool
}

// failRepeatUnprepare answers NodeUnprepareResources with an error for a claim this process has
// no record of, where the API wants unprepare to be idempotent: once for each claim, after
// unpreparing it as usual, so that the kubelet's retry lets its pod go and nothing but the
// answer breaks.
func (a *askedClaims) failRepeatUnprepare(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	a.mu.Lock()
	defer a.mu.Unlock()
	if prepare, ok := req.(*drapb.NodePrepareResourcesRequest); ok {
		for _, claim := range prepare.Claims {
			a.asked[claim.Uid] = true
		}
		return resp, err
	}
	unprepare, isUnprepare := req.(*drapb.NodeUnprepareResourcesRequest)
	answer, ok := resp.(*drapb.NodeUnprepareResourcesResponse)
	if !isUnprepare || !ok || err != nil {
		return resp, err
	}
	for _, claim := range unprepare.Claims {
		switch {
		case a.asked[claim.Uid]:
			if answer.Claims[claim.Uid].GetError() == "" {
				delete(a.asked, claim.Uid)
			}
		case !a.refused[claim.Uid]:
			a.refused[claim.Uid] = true
			answer.Claims[claim.Uid] = &drapb.NodeUnprepareResourceResponse{Error: fmt.Sprintf(
				"claim %s/%s (%s): no record of it to unprepare (never prepared by this process, or unprepared already)",
				claim.Namespace, claim.Name, claim.Uid)}
		}
	}
	return answer, nil
}
