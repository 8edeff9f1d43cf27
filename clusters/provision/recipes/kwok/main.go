// Command kwok-stages prints kwok's default stages at the pinned kwok version, as one YAML
// stream for `kwok --config`: the kwok controller runs no stage unless given some, and these
// are the ones kwokctl gives it (nodes Ready with their leases renewed, pods Running, deleted
// pods removed), so the lab's kwok nodes behave as a kwokctl cluster's do.
package main

import (
	"fmt"
	"strings"

	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodeheartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
)

func main() {
	stages := []string{
		nodefast.DefaultNodeInit,
		nodeheartbeat.DefaultNodeHeartbeatWithLease,
		podfast.DefaultPodReady,
		podfast.DefaultPodComplete,
		podfast.DefaultPodDelete,
	}
	for i, stage := range stages {
		if i > 0 {
			fmt.Println("---")
		}
		fmt.Println(strings.TrimSpace(stage))
	}
}
