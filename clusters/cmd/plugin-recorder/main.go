// Command plugin-recorder stands between a node's kubelet and its kubelet plugins and records
// every call between them as JSON lines (internal/pluginrecorder): the trace the suites check
// their invariants on. It runs where the kubelet's paths are the node's (the node's mount
// namespace), beside the kubelet.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"dralab.dev/clusters/internal/pluginrecorder"
)

func main() {
	driverRegistry := flag.String("driver-registry", "", "directory the plugins put their registration sockets in")
	kubeletRegistry := flag.String("kubelet-registry", "/var/lib/kubelet/plugins_registry", "the kubelet's plugins_registry")
	serviceDir := flag.String("service-dir", "/var/lib/kubelet/plugins/dralab-recorder", "directory for the stand-ins of the plugins' service sockets")
	node := flag.String("node", "", "node name written in every record")
	trace := flag.String("trace", "", "file the records are appended to (default: stdout)")
	var cdiDirs []string
	flag.Func("cdi-dir", "a CDI spec directory of the container runtime, recorded with each prepare and unprepare (repeatable)",
		func(dir string) error { cdiDirs = append(cdiDirs, dir); return nil })
	flag.Parse()
	if *driverRegistry == "" || *node == "" {
		fmt.Fprintln(os.Stderr, "plugin-recorder: --driver-registry and --node are required")
		os.Exit(2)
	}
	out := os.Stdout
	if *trace != "" {
		f, err := os.OpenFile(*trace, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "plugin-recorder:", err)
			os.Exit(1)
		}
		defer f.Close()
		out = f
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	m := &pluginrecorder.Mirror{DriverRegistry: *driverRegistry, KubeletRegistry: *kubeletRegistry,
		ServiceDir: *serviceDir, CDIDirs: cdiDirs, Recorder: pluginrecorder.NewRecorder(out, *node)}
	if err := m.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "plugin-recorder:", err)
		os.Exit(1)
	}
}
