// Package e2edra is Kubernetes' own DRA e2e suite (k8s.io/kubernetes/test/e2e/dra) as a test
// binary of its own: upstream's e2e.test links every e2e package, which costs far more time to
// build on 2 cores than the DRA package and the framework it uses. Set-up follows test/e2e's
// e2e_test.go and e2e.go, minus what only other packages need.
package e2edra

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/logs"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/test/e2e/framework"
	"k8s.io/kubernetes/test/e2e/framework/config"
	e2enode "k8s.io/kubernetes/test/e2e/framework/node"
	"k8s.io/kubernetes/test/e2e/framework/testfiles"
	e2etestingmanifests "k8s.io/kubernetes/test/e2e/testing-manifests"
	imageutils "k8s.io/kubernetes/test/utils/image"

	_ "k8s.io/kubernetes/test/e2e/dra"
	_ "k8s.io/kubernetes/test/e2e/feature"
	_ "k8s.io/kubernetes/test/e2e/framework/debug/init"
	_ "k8s.io/kubernetes/test/e2e/framework/node/init"

	_ "k8s.io/client-go/plugin/pkg/client/auth"
	_ "k8s.io/component-base/logs/testinit"
)

// describe, for dralab: the images the specs run, by upstream's own lookup, so that the lab builds
// and tags stand-ins for exactly these names at every Kubernetes version; and each feature gate's
// default at this version, which tells the gate a spec labelled Feature:OffByDefault needs on.
var describe = flag.Bool("dralab-describe", false, "Print the images the DRA specs use and the feature gates' defaults as JSON, and exit.")

func TestMain(m *testing.M) {
	config.CopyFlags(config.Flags, flag.CommandLine)
	framework.RegisterCommonFlags(flag.CommandLine)
	framework.RegisterClusterFlags(flag.CommandLine)
	flag.Parse()
	testfiles.AddFileSource(e2etestingmanifests.GetE2ETestingManifestsFS())
	if *describe {
		if err := printDescription(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	framework.AfterReadingAllFlags(&framework.TestContext)
	os.Exit(m.Run())
}

// The manifest test/e2e/dra's device plugin specs deploy (e2enode.SampleDevicePluginDSYAML from
// v1.36; a literal before): the one file this suite reads at every version it is built at.
const sampleDevicePluginYAML = "test/e2e/testing-manifests/sample-device-plugin/sample-device-plugin.yaml"

func printDescription() error {
	images := map[string]string{
		"busybox": imageutils.GetE2EImage(imageutils.BusyBox),
		"pause":   imageutils.GetPauseImageName(),
	}
	// As test/e2e/dra/utils/deploy.go picks it: the newest hostpathplugin of the storage manifests.
	const hostPath = "registry.k8s.io/sig-storage/hostpathplugin"
	for _, c := range imageutils.GetOriginalImageConfigs() {
		name, version, ok := strings.Cut(c.GetE2EImage(), ":")
		if ok && name == hostPath && (images["hostpathplugin"] == "" || images["hostpathplugin"] < c.GetE2EImage()) {
			images["hostpathplugin"] = name + ":" + version
		}
	}
	data, err := testfiles.Read(sampleDevicePluginYAML)
	if err != nil {
		return err
	}
	var ds struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct{ Image string } `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &ds); err != nil || len(ds.Spec.Template.Spec.Containers) == 0 {
		return fmt.Errorf("%s: no container image found (%v)", sampleDevicePluginYAML, err)
	}
	images["sample-device-plugin"] = ds.Spec.Template.Spec.Containers[0].Image
	defaults := map[string]bool{}
	for gate, spec := range utilfeature.DefaultMutableFeatureGate.GetAll() {
		defaults[string(gate)] = spec.Default
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{"images": images, "gate_defaults": defaults})
}

var _ = ginkgo.SynchronizedBeforeSuite(func(ctx ginkgo.SpecContext) []byte {
	c, err := framework.LoadClientset()
	framework.ExpectNoError(err, "loading the client")
	framework.ExpectNoError(e2enode.WaitForAllNodesSchedulable(ctx, c, framework.NewTimeoutContext().NodeSchedulable))
	return nil
}, func() {})

func TestE2E(t *testing.T) {
	logs.InitLogs()
	defer logs.FlushLogs()
	klog.EnableContextualLogging(true)
	gomega.RegisterFailHandler(framework.Fail)
	suiteConfig, reporterConfig := framework.CreateGinkgoConfig()
	ginkgo.RunSpecs(t, "Kubernetes DRA e2e suite", suiteConfig, reporterConfig)
}
