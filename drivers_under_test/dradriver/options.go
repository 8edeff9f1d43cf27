// Package dradriver holds what the reference DRA drivers share: their command-line options,
// start-up on the upstream kubeletplugin framework, the broken metadata-file and kubelet plugin
// contract variants, CDI specs, claim status and ResourceSlice publishing.
package dradriver

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"dralab.dev/drivers_under_test/internal/variant"
)

// Options are the flags every reference DRA driver takes.
type Options struct {
	DriverName     string
	NodeName       string
	KubeletRootDir string
	CDIDir         string
	SysfsRoot      string
	Kubeconfig     string
	// The framework reads every claim it prepares and the driver writes its status: at
	// client-go's default 5 requests/s, a node starting 8 pods at once waits seconds.
	KubeAPIQPS   float64
	KubeAPIBurst int
	HTTPEndpoint string // serves /metrics: the prepare phases (PF-06)
	// The framework has no flag for device metadata (KEP-5304 promised one): each driver adds its own.
	EnableDeviceMetadata bool
	MetadataVersions     string
	ReportStatus         bool
	// Choices a correct driver may make otherwise than the reference one (MUT-02): the suites
	// must PASS whichever it makes.
	PrepareDelay    time.Duration
	DevicesPerNode  int
	Pools           int
	SlicesPerPool   int
	StatusDevices   string
	StatusWrite     string
	PodsPerClaim    int
	ReadyCondition  bool
	AttributeDomain string
	Variant         *variant.Selected
	// HealthStream: the driver implements WatchHealthStatus (KEP-4680); set by the driver, not a flag.
	HealthStream bool
	// lastStatus: what the status-for-stale-allocation variant remembers of its last status write.
	lastStatus *statusMemory
}

// What --status-devices takes.
const (
	StatusDevicesAll   = "all"
	StatusDevicesFirst = "first"
)

// TooManyPods is the refusal of a claim reserved for more pods than --pods-per-claim allows; nil if it is not.
func (o *Options) TooManyPods(claim *resourceapi.ResourceClaim) error {
	if n := len(claim.Status.ReservedFor); o.PodsPerClaim > 0 && n > o.PodsPerClaim {
		return fmt.Errorf("claim %s/%s is reserved for %d pods: %s serves at most %d pod(s) a claim", claim.Namespace,
			claim.Name, n, o.DriverName, o.PodsPerClaim)
	}
	return nil
}

// What --status-write takes.
const (
	StatusWriteUpdate = "update"
	StatusWriteApply  = "apply"
)

// Variants every reference DRA driver has: they break what the framework does with metadata
// files, and the kubelet plugin contract (KP) every DRA driver owes.
var Variants = map[string]string{
	VariantLeaveFiles:        "metadata dirs and CDI specs are left behind after unprepare (breaks MD-14)",
	VariantWritableMount:     "the metadata file is bind-mounted read-write (breaks MD-11)",
	VariantWrongPath:         "the metadata file is mounted at the KEP text's container path (breaks MD-01)",
	VariantStaleGeneration:   "metadata updates keep generation 1 (breaks MD-17)",
	VariantFixedCDIVersion:   "metadata CDI specs always say cdiVersion 0.6.0, not the minimum the spec needs (breaks MD-13)",
	VariantNoSubrequestName:  "the metadata's requests[].name drops the /subrequest of a firstAvailable request (breaks MD-09)",
	VariantTemplateClaimPath: "template claims' metadata is mounted at the resourceclaims container path, not resourceclaimtemplates (breaks MD-08)",
	VariantOtherHostDir:      "metadata files are kept under the plugin data dir's device-metadata/, not dra-device-metadata/; the CDI specs mount them from there (breaks MD-12)",
	VariantSharedBuffer:      "metadata files are rendered through one shared buffer, so claims prepared at once get each other's file (breaks MD-20)",
	VariantStatusOtherNode:   "status.devices is written for claims allocated on other nodes, with arbitrary-node RBAC (breaks ST-01, ST-04, ST-06)",
	VariantCrashAtStart:      "exits at start-up with an error, so its pods crash-loop (breaks DEP-01)",

	// The kubelet plugin contract.
	VariantRemoveRegistrationSocket: "once the kubelet has registered it, the registration socket is removed from plugins_registry, so a restarted kubelet never finds the driver again (breaks KP-01)",
	VariantStaticInventory:          "the devices found at start are published for as long as the driver runs: a device removed from the node stays in its slice, one plugged in is never published (breaks KP-02)",
	VariantDuplicateDevice:          "one more pool is published as two ResourceSlices that both list the node's first device, so a device name repeats within the pool (breaks KP-02)",
	VariantUnresolvableCDIID:        "NodePrepareResources answers CDI device IDs with a suffix that no CDI spec on the node defines, while the specs are written as usual (breaks KP-03)",
	VariantLeaveCDISpec:             "unprepare drops the claim from the checkpoint but leaves the driver's own CDI spec of the claim behind; metadata files and their specs go (breaks KP-06)",
	VariantLeaveSocket:              "the DRA service socket dra.sock stays in the plugin data dir when the driver stops, so an uninstall leaves a socket behind (breaks KP-11)",
	VariantReplaceStatus:            "a status write replaces status.devices with the driver's own entries, deleting those other drivers wrote for the claim (breaks ST-08)",
	VariantClobberOtherConditions:   "a status write keeps other drivers' entries but replaces their conditions with the driver's own Ready condition; its RBAC lets it write every driver's entries (breaks ST-08)",
	VariantStatusForStaleAllocation: "once a claim's entries are written, they are written again with the entries of the claim written before (devices of an earlier allocation); the API server refuses that write, which is logged and ignored (breaks ST-01)",
	VariantAnyRequest:               "NodePrepareResources answers every device without its request names, which tells the kubelet that it serves all requests of the claim: a container using one request gets the CDI devices of the others (breaks KP-04, MD-04)",
	VariantFailWholeCall:            "a NodePrepareResources call in which one claim fails is answered with an error for the whole call, not for that claim (breaks KP-09)",
	VariantWedgeAfterError:          "once a claim has failed to prepare, every claim prepared later is answered with an error (breaks KP-09)",
	VariantStrictUnprepare:          "NodeUnprepareResources answers an error for a claim this driver process never prepared, so a claim whose prepare failed is never unprepared (breaks KP-05)",
	VariantPrepareOnce:              "NodePrepareResources answers an error for a claim this driver process has prepared already, so the kubelet's second call (after it restarts) fails (breaks KP-05, KP-07)",
	VariantOmitLastDevice:           "NodePrepareResources leaves out of a claim's answer its last device of a request with two or more devices; the claim's CDI spec still defines it and the metadata still lists it, so only the answer lacks it (breaks KP-03)",
	VariantFailRepeatUnprepare:      "NodeUnprepareResources answers an error, once, for a claim this driver process was never asked to prepare or has unprepared already (a repeated unprepare, or one after a driver restart); it unprepares it all the same, and the kubelet's retry succeeds (breaks KP-05)",
}

const (
	VariantLeaveFiles        = "leave-files"
	VariantWritableMount     = "writable-mount"
	VariantWrongPath         = "wrong-path"
	VariantStaleGeneration   = "stale-generation"
	VariantFixedCDIVersion   = "fixed-cdi-version"
	VariantNoSubrequestName  = "no-subrequest-name"
	VariantTemplateClaimPath = "template-claim-path"
	VariantOtherHostDir      = "other-host-dir"
	VariantSharedBuffer      = "shared-buffer"
	VariantStatusOtherNode   = "status-other-node"
	VariantCrashAtStart      = "crash-at-start"

	VariantRemoveRegistrationSocket = "remove-registration-socket"
	VariantDuplicateDevice          = "duplicate-device"
	VariantStaticInventory          = "static-inventory"
	VariantUnresolvableCDIID        = "unresolvable-cdi-id"
	VariantLeaveCDISpec             = "leave-cdi-spec"
	VariantLeaveSocket              = "leave-socket"
	VariantAnyRequest               = "any-request"
	VariantReplaceStatus            = "replace-status"
	VariantClobberOtherConditions   = "clobber-other-conditions"
	VariantStatusForStaleAllocation = "status-for-stale-allocation"
	VariantFailWholeCall            = "fail-whole-call"
	VariantWedgeAfterError          = "wedge-after-error"
	VariantStrictUnprepare          = "strict-unprepare"
	VariantPrepareOnce              = "prepare-once"
	VariantOmitLastDevice           = "omit-last-device"
	VariantFailRepeatUnprepare      = "fail-repeat-unprepare"
)

// RegisterFlags adds the shared flags to fs; own lists the variants only this driver has.
func RegisterFlags(fs *flag.FlagSet, driverName string, own map[string]string) *Options {
	o := &Options{lastStatus: &statusMemory{}}
	fs.StringVar(&o.DriverName, "driver-name", driverName, "DRA driver name (a second instance uses another)")
	fs.StringVar(&o.NodeName, "node-name", os.Getenv("NODE_NAME"), "this node (default $NODE_NAME)")
	fs.StringVar(&o.KubeletRootDir, "kubelet-root-dir", "/var/lib/kubelet", "kubelet's --root-dir; mounted at the same path in the driver container")
	fs.StringVar(&o.CDIDir, "cdi-dir", "/var/run/cdi", "directory the container runtime reads CDI specs from")
	fs.StringVar(&o.SysfsRoot, "sysfs-root", "/sys", "where sysfs is (a prefix for a tree that is not at /sys)")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster service account)")
	fs.Float64Var(&o.KubeAPIQPS, "kube-api-qps", 50, "requests per second to the API server (client-go's default is 5)")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", 100, "burst of requests to the API server (client-go's default is 10)")
	fs.StringVar(&o.HTTPEndpoint, "http-endpoint", "", "host:port to serve Prometheus metrics at /metrics, e.g. :8090 (default: none)")
	fs.BoolVar(&o.EnableDeviceMetadata, "enable-device-metadata", false, "write KEP-5304 device metadata files")
	fs.StringVar(&o.MetadataVersions, "metadata-versions", "metadata.resource.k8s.io/v1beta1",
		"comma-separated metadata API versions, written in this order")
	fs.BoolVar(&o.ReportStatus, "report-status", false, "write ResourceClaim status.devices (KEP-4817)")
	fs.DurationVar(&o.PrepareDelay, "prepare-delay", 0,
		"wait this long in every NodePrepareResources call before preparing, as a driver that configures hardware slowly does (the kubelet gives a call 45s)")
	fs.IntVar(&o.DevicesPerNode, "devices-per-node", 0, "publish at most this many of the node's healthy devices, the first discovered (0: all)")
	fs.IntVar(&o.Pools, "pools", 1, "spread the node's devices over this many pools: one is named after the node, several <node>/pool-<i>")
	fs.IntVar(&o.SlicesPerPool, "slices-per-pool", 1, "publish each pool in this many ResourceSlices")
	fs.StringVar(&o.StatusDevices, "status-devices", StatusDevicesAll, "with --report-status, the allocated devices of a claim that get a status.devices entry: "+
		StatusDevicesAll+", or "+StatusDevicesFirst+" (only the first of the claim's devices on this node)")
	fs.StringVar(&o.StatusWrite, "status-write", StatusWriteUpdate, "with --report-status, how status.devices is written: "+
		StatusWriteUpdate+" (read, modify, update) or "+StatusWriteApply+" (server-side apply as the driver's field manager, as dranet writes it)")
	fs.IntVar(&o.PodsPerClaim, "pods-per-claim", 0, "refuse to prepare a claim reserved for more pods than this, as a driver "+
		"whose device moves into one pod's namespace does (0: any number); its profile declares claimsServeOnePod")
	fs.BoolVar(&o.ReadyCondition, "ready-condition", true, "give status.devices entries a Ready condition once the device is configured (the API says they should)")
	fs.StringVar(&o.AttributeDomain, "attribute-domain", "",
		"publish the driver's own device attributes qualified with this domain, e.g. dralab.dev/index (default: unqualified, in the driver name's domain)")
	all := map[string]string{}
	for _, m := range []map[string]string{Variants, reachVariants, own} {
		maps.Copy(all, m)
	}
	o.Variant = variant.Flag(fs, all)
	return o
}

// Validate checks what flag parsing cannot.
func (o *Options) Validate() error {
	if o.NodeName == "" {
		return fmt.Errorf("--node-name (or $NODE_NAME) is required")
	}
	if !filepath.IsAbs(o.KubeletRootDir) {
		return fmt.Errorf("--kubelet-root-dir %q must be an absolute path", o.KubeletRootDir)
	}
	if !filepath.IsAbs(o.CDIDir) {
		return fmt.Errorf("--cdi-dir %q must be an absolute path", o.CDIDir)
	}
	switch {
	case o.KubeAPIQPS <= 0 || o.KubeAPIBurst < 1:
		return fmt.Errorf("--kube-api-qps %g and --kube-api-burst %d must be positive", o.KubeAPIQPS, o.KubeAPIBurst)
	case o.PrepareDelay < 0:
		return fmt.Errorf("--prepare-delay %s must not be negative", o.PrepareDelay)
	case o.DevicesPerNode < 0:
		return fmt.Errorf("--devices-per-node %d must not be negative", o.DevicesPerNode)
	case o.Pools < 1:
		return fmt.Errorf("--pools %d: a driver publishes at least one pool", o.Pools)
	case o.SlicesPerPool < 1:
		return fmt.Errorf("--slices-per-pool %d: a pool has at least one slice", o.SlicesPerPool)
	case o.StatusDevices != StatusDevicesAll && o.StatusDevices != StatusDevicesFirst:
		return fmt.Errorf("--status-devices %q: want %s or %s", o.StatusDevices, StatusDevicesAll, StatusDevicesFirst)
	case o.PodsPerClaim < 0:
		return fmt.Errorf("--pods-per-claim %d must not be negative", o.PodsPerClaim)
	case o.StatusWrite != StatusWriteUpdate && o.StatusWrite != StatusWriteApply:
		return fmt.Errorf("--status-write %q: want %s or %s", o.StatusWrite, StatusWriteUpdate, StatusWriteApply)
	}
	// The domain of a qualified attribute name is a DNS subdomain of at most 63 characters.
	if d := o.AttributeDomain; d != "" && (len(d) > 63 || len(validation.IsDNS1123Subdomain(d)) > 0) {
		return fmt.Errorf("--attribute-domain %q must be a DNS subdomain of at most 63 characters", d)
	}
	_, err := o.metadataVersions()
	return err
}

// metadataVersions parses --metadata-versions; the framework itself refuses unknown ones at Start.
func (o *Options) metadataVersions() ([]schema.GroupVersion, error) {
	var out []schema.GroupVersion
	for _, v := range strings.Split(o.MetadataVersions, ",") {
		gv, err := schema.ParseGroupVersion(strings.TrimSpace(v))
		if err != nil || gv.Group == "" {
			return nil, fmt.Errorf("--metadata-versions: %q is not a group/version", v)
		}
		out = append(out, gv)
	}
	return out, nil
}

// RegistrationSocket is the socket the kubelet registers the driver through: the framework
// creates it under its default name in the kubelet's plugins_registry.
func (o *Options) RegistrationSocket() string {
	return filepath.Join(o.KubeletRootDir, "plugins_registry", o.DriverName+"-reg.sock")
}

// PluginDataDir is where the framework keeps the DRA socket and the metadata files.
func (o *Options) PluginDataDir() string {
	return filepath.Join(o.KubeletRootDir, "plugins", o.DriverName)
}
