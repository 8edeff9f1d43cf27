package dradriver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc"
	"k8s.io/klog/v2"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
)

// Variants whose fault shows only on shapes no fixed scenario of the suites makes (MUT-03):
// written after the checks over the recorded calls, to prove those reach further. Each breaks a
// call with three or more claims (the fixed scenarios give a pod at most two), or a claim whose
// later request has several devices (theirs have several only in the first).
const (
	VariantThirdClaimUnanswered      = "third-claim-unanswered"
	VariantThirdClaimForeignDevices  = "third-claim-foreign-devices"
	VariantThirdClaimUnresolvable    = "third-claim-unresolvable"
	VariantThirdClaimDeviceTwice     = "third-claim-device-twice"
	VariantThirdClaimRefused         = "third-claim-refused"
	VariantThirdClaimLateSpec        = "third-claim-late-spec"
	VariantUnprepareFirstClaimOnly   = "unprepare-first-claim-only"
	VariantLateRequestNoNames        = "late-request-no-names"
	VariantLateRequestMisnamed       = "late-request-misnamed"
	VariantLateRequestUnresolvable   = "late-request-unresolvable"
	VariantLateRequestMetadataShared = "late-request-metadata-shared"
)

var reachVariants = map[string]string{
	VariantThirdClaimUnanswered:      "a NodePrepareResources call with three or more claims has no answer for the last of them (breaks KP-03)",
	VariantThirdClaimForeignDevices:  "a NodePrepareResources call with three or more claims answers the last of them with the first one's devices (breaks KP-03)",
	VariantThirdClaimUnresolvable:    "a NodePrepareResources call with three or more claims answers the last of them with CDI device IDs no spec defines (breaks KP-03)",
	VariantThirdClaimDeviceTwice:     "a NodePrepareResources call with three or more claims answers the first device of the last of them twice (breaks KP-03)",
	VariantThirdClaimRefused:         "a NodePrepareResources call with three or more claims answers the last of them with an error, though it could prepare it (breaks KP-03)",
	VariantThirdClaimLateSpec:        "a NodePrepareResources call with three or more claims writes the last one's CDI spec 3 s after answering (breaks KP-03)",
	VariantUnprepareFirstClaimOnly:   "a NodeUnprepareResources call with three or more claims removes the CDI spec of the first only (breaks KP-06)",
	VariantLateRequestNoNames:        "the devices of a claim's later request, when it has several, are answered with no request names (breaks KP-04)",
	VariantLateRequestMisnamed:       "the devices of a claim's later request, when it has several, are answered with the first request's name (breaks KP-04)",
	VariantLateRequestUnresolvable:   "the devices of a claim's later request, when it has several, are answered with CDI device IDs no spec defines (breaks KP-03)",
	VariantLateRequestMetadataShared: "the metadata CDI devices of a claim whose later request has several devices are answered with every device of its first and later request: a container using one of them mounts the other's file too (breaks MD-04)",
}

// reachOption is the interceptor of the selected variant of these, nil for none.
func (o *Options) reachOption() grpc.UnaryServerInterceptor {
	v := o.Variant
	switch {
	case v.Is(VariantThirdClaimUnanswered):
		return onThirdClaim(func(answer *drapb.NodePrepareResourcesResponse, _, last string) { delete(answer.Claims, last) })
	case v.Is(VariantThirdClaimForeignDevices):
		return onThirdClaim(func(answer *drapb.NodePrepareResourcesResponse, first, last string) {
			answer.Claims[last].Devices = answer.Claims[first].Devices
		})
	case v.Is(VariantThirdClaimUnresolvable):
		return onThirdClaim(func(answer *drapb.NodePrepareResourcesResponse, _, last string) {
			unresolvable(answer.Claims[last].Devices)
		})
	case v.Is(VariantThirdClaimDeviceTwice):
		return onThirdClaim(func(answer *drapb.NodePrepareResourcesResponse, _, last string) {
			if devices := answer.Claims[last].Devices; len(devices) > 0 {
				answer.Claims[last].Devices = append(devices, devices[0])
			}
		})
	case v.Is(VariantThirdClaimRefused):
		return onThirdClaim(func(answer *drapb.NodePrepareResourcesResponse, _, last string) {
			answer.Claims[last] = &drapb.NodePrepareResourceResponse{Error: "claim " + last + ": out of device contexts"}
		})
	case v.Is(VariantThirdClaimLateSpec):
		return onThirdClaim(func(_ *drapb.NodePrepareResourcesResponse, _, last string) { o.writeLater(last, 3*time.Second) })
	case v.Is(VariantUnprepareFirstClaimOnly):
		return o.unprepareFirstOnly
	case v.Is(VariantLateRequestNoNames):
		return onLateRequest(func(late, _ []*drapb.Device) {
			for _, d := range late {
				d.RequestNames = nil
			}
		})
	case v.Is(VariantLateRequestMisnamed):
		return onLateRequest(func(late, first []*drapb.Device) {
			for _, d := range late {
				d.RequestNames = first[0].RequestNames
			}
		})
	case v.Is(VariantLateRequestUnresolvable):
		return onLateRequest(func(late, _ []*drapb.Device) { unresolvable(late) })
	case v.Is(VariantLateRequestMetadataShared):
		return onLateRequest(func(late, first []*drapb.Device) {
			lateIDs, firstIDs := o.metadataIDs(late[0]), o.metadataIDs(first[0])
			for _, d := range first {
				d.CdiDeviceIds = append(d.CdiDeviceIds, lateIDs...)
			}
			for _, d := range late {
				d.CdiDeviceIds = append(d.CdiDeviceIds, firstIDs...)
			}
		})
	}
	return nil
}

// onThirdClaim bends the answer of a prepare call of three or more claims, given the UIDs of
// the first and last claim it was asked (each answered without an error).
func onThirdClaim(bend func(answer *drapb.NodePrepareResourcesResponse, first, last string)) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		prepare, isPrepare := req.(*drapb.NodePrepareResourcesRequest)
		answer, ok := prepareAnswer(resp, err)
		if !isPrepare || !ok || len(prepare.Claims) < 3 {
			return resp, err
		}
		first, last := prepare.Claims[0].Uid, prepare.Claims[len(prepare.Claims)-1].Uid
		if a, b := answer.Claims[first], answer.Claims[last]; a == nil || b == nil || a.Error != "" || b.Error != "" {
			return resp, err
		}
		bend(answer, first, last)
		return answer, nil
	}
}

// onLateRequest bends a claim's later request (the last by name of two or more) when that
// request has several devices, given its devices and those of the claim's first request.
func onLateRequest(bend func(late, first []*drapb.Device)) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		answer, ok := prepareAnswer(resp, err)
		if !ok {
			return resp, err
		}
		for _, claim := range answer.Claims {
			byRequest := map[string][]*drapb.Device{}
			for _, d := range claim.Devices {
				if len(d.RequestNames) == 1 {
					byRequest[d.RequestNames[0]] = append(byRequest[d.RequestNames[0]], d)
				}
			}
			names := make([]string, 0, len(byRequest))
			for name := range byRequest {
				names = append(names, name)
			}
			sort.Strings(names)
			if len(names) < 2 || len(byRequest[names[len(names)-1]]) < 2 {
				continue
			}
			bend(byRequest[names[len(names)-1]], byRequest[names[0]])
		}
		return resp, err
	}
}

// metadataIDs are the CDI device IDs of a device's answer that mount the framework's metadata
// file of its request (kind <driver>/metadata).
func (o *Options) metadataIDs(d *drapb.Device) []string {
	var ids []string
	for _, id := range d.CdiDeviceIds {
		if strings.HasPrefix(id, o.DriverName+"/metadata=") {
			ids = append(ids, id)
		}
	}
	return ids
}

func unresolvable(devices []*drapb.Device) {
	for _, d := range devices {
		ids := make([]string, len(d.CdiDeviceIds))
		for i, id := range d.CdiDeviceIds {
			ids[i] = id + unresolvableSuffix
		}
		d.CdiDeviceIds = ids
	}
}

// claimSpecs are the driver's own CDI specs of a claim (cdiSpecPath's, any class).
func (o *Options) claimSpecs(uid string) []string {
	found, _ := filepath.Glob(filepath.Join(o.CDIDir, fmt.Sprintf("%s_*_%s.json", o.DriverName, uid)))
	return found
}

// aside renames a spec out of the runtime's sight (it reads .json and .yaml files) and back.
func aside(spec string) string {
	return filepath.Join(filepath.Dir(spec), "."+filepath.Base(spec)+".aside")
}

// writeLater takes the claim's specs away as the answer goes back and puts them in place after
// `delay`, as a driver that writes them in the background does.
func (o *Options) writeLater(uid string, delay time.Duration) {
	specs := o.claimSpecs(uid)
	for _, spec := range specs {
		_ = os.Rename(spec, aside(spec))
	}
	go func() {
		time.Sleep(delay)
		for _, spec := range specs {
			_ = os.Rename(aside(spec), spec)
		}
	}()
}

// unprepareFirstOnly keeps the specs of every claim but the first of an unprepare call of three
// or more, which the driver otherwise unprepares as usual.
func (o *Options) unprepareFirstOnly(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	unprepare, ok := req.(*drapb.NodeUnprepareResourcesRequest)
	if !ok || len(unprepare.Claims) < 3 {
		return handler(ctx, req)
	}
	var kept []string
	for _, claim := range unprepare.Claims[1:] {
		for _, spec := range o.claimSpecs(claim.Uid) {
			if os.Rename(spec, aside(spec)) == nil {
				kept = append(kept, spec)
			}
		}
	}
	resp, err := handler(ctx, req)
	for _, spec := range kept {
		_ = os.Rename(aside(spec), spec)
	}
	klog.FromContext(ctx).V(2).Info("Unprepared; CDI specs kept", "specs", kept, "variant", o.Variant.Describe())
	return resp, err
}
