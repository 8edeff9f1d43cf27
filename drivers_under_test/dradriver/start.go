package dradriver

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"
)

// Client is the driver's API client: in-cluster, whose service-account token the API server
// binds to this node (what `associated-node:` status permissions require), or --kubeconfig.
func (o *Options) Client() (kubernetes.Interface, error) {
	var cfg *rest.Config
	var err error
	if o.Kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("API client: %w", err)
	}
	cfg.UserAgent = o.DriverName + "/" + o.NodeName
	cfg.QPS, cfg.Burst = float32(o.KubeAPIQPS), o.KubeAPIBurst
	return kubernetes.NewForConfig(cfg)
}

// Start registers plugin with the kubelet through the upstream framework, with the kubelet
// root dir, CDI dir and metadata options of o.
func (o *Options) Start(ctx context.Context, plugin kubeletplugin.DRAPlugin, client kubernetes.Interface) (*kubeletplugin.Helper, error) {
	opts := []kubeletplugin.Option{
		kubeletplugin.DriverName(o.DriverName),
		kubeletplugin.NodeName(o.NodeName),
		kubeletplugin.KubeClient(client),
		kubeletplugin.RegistrarDirectoryPath(filepath.Dir(o.RegistrationSocket())),
		kubeletplugin.PluginDataDirectoryPath(o.PluginDataDir()),
		kubeletplugin.CDIDirectory(o.CDIDir),
		// A driver that does not implement WatchHealthStatus tells of faults only by withdrawing
		// devices from its slice: the kubelet is then not told to watch a health stream.
		kubeletplugin.HealthService(o.HealthStream),
		kubeletplugin.GRPCInterceptor(timePrepare),
		// The drivers lock only what their claims share. Serialized, a node starting 8 pods at
		// once queued each prepare behind the others' API writes and fsyncs (PF-06).
		kubeletplugin.Serialize(false),
	}
	opts = append(opts, o.contractOptions()...)
	if o.EnableDeviceMetadata {
		versions, err := o.metadataVersions()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kubeletplugin.EnableDeviceMetadata(true, versions),
			kubeletplugin.MetadataFileOps(o.metadataFileOps()))
	}
	if o.PrepareDelay > 0 {
		plugin = slowPrepare{DRAPlugin: plugin, delay: o.PrepareDelay}
	}
	plugin = timedPlugin{DRAPlugin: plugin}
	klog.FromContext(ctx).Info("Starting DRA driver", "driver", o.DriverName, "node", o.NodeName,
		"kubeletRootDir", o.KubeletRootDir, "cdiDir", o.CDIDir, "metadata", o.EnableDeviceMetadata, "metadataVersions", o.MetadataVersions,
		"reportStatus", o.ReportStatus, "statusDevices", o.StatusDevices, "readyCondition", o.ReadyCondition,
		"pools", o.Pools, "slicesPerPool", o.SlicesPerPool, "devicesPerNode", o.DevicesPerNode,
		"attributeDomain", o.AttributeDomain, "prepareDelay", o.PrepareDelay, "kubeAPIQPS", o.KubeAPIQPS, "kubeAPIBurst", o.KubeAPIBurst, "httpEndpoint", o.HTTPEndpoint, "variant", o.Variant.Describe())
	helper, err := kubeletplugin.Start(ctx, plugin, opts...)
	if err != nil {
		return nil, fmt.Errorf("start kubelet plugin %s: %w", o.DriverName, err)
	}
	return helper, nil
}

// slowPrepare is --prepare-delay: every NodePrepareResources call waits before the driver
// prepares, as one that configures hardware slowly does. A call the kubelet gives up on (its
// context ends) returns at once with the reason.
type slowPrepare struct {
	kubeletplugin.DRAPlugin
	delay time.Duration
}

func (s slowPrepare) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("preparing %d claim(s): %w", len(claims), context.Cause(ctx))
	case <-time.After(s.delay):
	}
	return s.DRAPlugin.PrepareResourceClaims(ctx, claims)
}
