// Package dradriver holds what the reference DRA drivers share: their command-line options,
// start-up on the upstream kubeletplugin framework, the broken metadata-file variants, CDI
// specs, claim status and ResourceSlice publishing.
package dradriver

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"dralab.dev/drivers/internal/variant"
)

// Options are the flags every reference DRA driver takes.
type Options struct {
	DriverName     string
	NodeName       string
	KubeletRootDir string
	CDIDir         string
	SysfsRoot      string
	Kubeconfig     string
	// The framework has no flag for device metadata (KEP-5304 promised one): each driver adds its own.
	EnableDeviceMetadata bool
	MetadataVersions     string
	ReportStatus         bool
	Variant              *variant.Selected
}

// Variants every reference DRA driver has: they break what the framework does with metadata files.
var Variants = map[string]string{
	VariantLeaveFiles:      "metadata dirs and CDI specs are left behind after unprepare (breaks MD-14)",
	VariantWritableMount:   "the metadata file is bind-mounted read-write (breaks MD-11)",
	VariantWrongPath:       "the metadata file is mounted at the KEP text's container path (breaks MD-01)",
	VariantStaleGeneration: "metadata updates keep generation 1 (breaks MD-17)",
	VariantStatusOtherNode: "status.devices is written for claims allocated on other nodes, with arbitrary-node RBAC (breaks ST-01, ST-04, ST-06)",
	VariantCrashAtStart:    "exits at start-up with an error, so its pods crash-loop (breaks DEP-01)",
}

const (
	VariantLeaveFiles      = "leave-files"
	VariantWritableMount   = "writable-mount"
	VariantWrongPath       = "wrong-path"
	VariantStaleGeneration = "stale-generation"
	VariantStatusOtherNode = "status-other-node"
	VariantCrashAtStart    = "crash-at-start"
)

// RegisterFlags adds the shared flags to fs; own lists the variants only this driver has.
func RegisterFlags(fs *flag.FlagSet, driverName string, own map[string]string) *Options {
	o := &Options{}
	fs.StringVar(&o.DriverName, "driver-name", driverName, "DRA driver name (a second instance uses another)")
	fs.StringVar(&o.NodeName, "node-name", os.Getenv("NODE_NAME"), "this node (default $NODE_NAME)")
	fs.StringVar(&o.KubeletRootDir, "kubelet-root-dir", "/var/lib/kubelet", "kubelet's --root-dir; mounted at the same path in the driver container")
	fs.StringVar(&o.CDIDir, "cdi-dir", "/var/run/cdi", "directory the container runtime reads CDI specs from")
	fs.StringVar(&o.SysfsRoot, "sysfs-root", "/sys", "where sysfs is (a prefix for a tree that is not at /sys)")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster service account)")
	fs.BoolVar(&o.EnableDeviceMetadata, "enable-device-metadata", false, "write KEP-5304 device metadata files")
	fs.StringVar(&o.MetadataVersions, "metadata-versions", "metadata.resource.k8s.io/v1beta1",
		"comma-separated metadata API versions, written in this order")
	fs.BoolVar(&o.ReportStatus, "report-status", false, "write ResourceClaim status.devices (KEP-4817)")
	all := map[string]string{}
	for k, v := range Variants {
		all[k] = v
	}
	for k, v := range own {
		all[k] = v
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

// PluginDataDir is where the framework keeps the DRA socket and the metadata files.
func (o *Options) PluginDataDir() string {
	return filepath.Join(o.KubeletRootDir, "plugins", o.DriverName)
}
