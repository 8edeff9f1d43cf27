// Command dra-probe calls a DRA driver's kubelet plugin service as the kubelet does, for checks
// that need a call the kubelet does not make in their scenario (KP-05: NodePrepareResources again
// for a claim the driver has prepared, NodeUnprepareResources again for one the kubelet has
// unprepared). It finds the driver's service through the registration sockets in the kubelet's
// plugins_registry, as the kubelet's plugin watcher does, calls it and prints one JSON line: the
// endpoint, the versions the driver registered and its answer.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	drapbv1beta1 "k8s.io/kubelet/pkg/apis/dra/v1beta1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

type result struct {
	Endpoint string          `json:"endpoint"`
	Versions []string        `json:"versions"`
	Answer   json.RawMessage `json:"answer,omitempty"`
	Error    string          `json:"error,omitempty"` // the call's error, or why there was none
}

type claims []*drapb.Claim

func (c *claims) String() string { return fmt.Sprint(len(*c)) }

func (c *claims) Set(v string) error {
	parts := strings.Split(v, "/")
	if len(parts) != 3 || slices.Contains(parts, "") {
		return fmt.Errorf("%q: want namespace/name/uid", v)
	}
	*c = append(*c, &drapb.Claim{Namespace: parts[0], Name: parts[1], Uid: parts[2]})
	return nil
}

func main() {
	registry := flag.String("registry-dir", "", "the kubelet's plugins_registry directory")
	driver := flag.String("driver", "", "the DRA driver's name")
	var prepare, unprepare claims
	flag.Var(&prepare, "prepare", "a claim to prepare, namespace/name/uid (repeatable)")
	flag.Var(&unprepare, "unprepare", "a claim to unprepare, namespace/name/uid (repeatable; not with --prepare)")
	timeout := flag.Duration("timeout", 45*time.Second, "the call's deadline (the kubelet's is 45s)")
	flag.Parse()
	if *registry == "" || *driver == "" || (len(prepare) == 0) == (len(unprepare) == 0) {
		fmt.Fprintln(os.Stderr, "dra-probe: give --registry-dir, --driver and at least one --prepare or --unprepare, not both")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	out := call(ctx, *registry, *driver, prepare, unprepare)
	line, _ := json.Marshal(out)
	fmt.Println(string(line))
}

// call makes one call to the driver: NodePrepareResources of prepare, or else
// NodeUnprepareResources of unprepare.
func call(ctx context.Context, registry, driver string, prepare, unprepare claims) result {
	info, err := find(ctx, registry, driver)
	if err != nil {
		return result{Error: err.Error()}
	}
	out := result{Endpoint: info.Endpoint, Versions: info.SupportedVersions}
	conn, err := grpc.NewClient("unix:"+info.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		out.Error = err.Error()
		return out
	}
	defer conn.Close()
	var answer proto.Message
	// The kubelet's choice: v1 where the driver serves it, else v1beta1 (same messages).
	switch {
	case slices.Contains(info.SupportedVersions, drapb.DRAPluginService):
		answer, err = v1(ctx, drapb.NewDRAPluginClient(conn), prepare, unprepare)
	case slices.Contains(info.SupportedVersions, drapbv1beta1.DRAPluginService):
		answer, err = v1beta1(ctx, drapbv1beta1.NewDRAPluginClient(conn), prepare, unprepare)
	default:
		err = fmt.Errorf("the driver serves neither %s nor %s", drapb.DRAPluginService, drapbv1beta1.DRAPluginService)
	}
	if err != nil {
		out.Error = err.Error()
		return out
	}
	out.Answer, _ = protojson.Marshal(answer)
	return out
}

func v1(ctx context.Context, c drapb.DRAPluginClient, prepare, unprepare claims) (proto.Message, error) {
	if len(prepare) > 0 {
		return c.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: prepare})
	}
	return c.NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: unprepare})
}

func v1beta1(ctx context.Context, c drapbv1beta1.DRAPluginClient, prepare, unprepare claims) (proto.Message, error) {
	if len(prepare) > 0 {
		return c.NodePrepareResources(ctx, &drapbv1beta1.NodePrepareResourcesRequest{Claims: beta(prepare)})
	}
	return c.NodeUnprepareResources(ctx, &drapbv1beta1.NodeUnprepareResourcesRequest{Claims: beta(unprepare)})
}

func beta(c claims) []*drapbv1beta1.Claim {
	out := make([]*drapbv1beta1.Claim, len(c))
	for i, claim := range c {
		out[i] = &drapbv1beta1.Claim{Namespace: claim.Namespace, Name: claim.Name, Uid: claim.Uid}
	}
	return out
}

// find asks every socket of the registry directory who it is, as the kubelet's plugin watcher
// does, and returns the DRA registration of driver.
func find(ctx context.Context, registry, driver string) (*registerapi.PluginInfo, error) {
	entries, err := os.ReadDir(registry)
	if err != nil {
		return nil, err
	}
	var seen []string
	for _, e := range entries {
		if e.Type()&os.ModeSocket == 0 {
			continue
		}
		info, err := getInfo(ctx, filepath.Join(registry, e.Name()))
		if err != nil {
			seen = append(seen, fmt.Sprintf("%s: %v", e.Name(), err))
			continue
		}
		seen = append(seen, fmt.Sprintf("%s: %s %s", e.Name(), info.Type, info.Name))
		if info.Type == registerapi.DRAPlugin && info.Name == driver {
			return info, nil
		}
	}
	return nil, errors.New("no registration socket of DRA driver " + driver + " in " + registry + ": " + strings.Join(seen, "; "))
}

func getInfo(ctx context.Context, socket string) (*registerapi.PluginInfo, error) {
	conn, err := grpc.NewClient("unix:"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return registerapi.NewRegistrationClient(conn).GetInfo(ctx, &registerapi.InfoRequest{})
}
