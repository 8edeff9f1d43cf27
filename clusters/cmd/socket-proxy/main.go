// Command socket-proxy stands in for csi-driver-host-path's hostpathplugin in its proxy mode,
// which Kubernetes' DRA e2e suite runs inside a pod on each node (`/hostpathplugin --endpoint=
// <unix socket> --proxy-endpoint=tcp://:<port>`): it listens on both, pairs each connection to the
// socket (the kubelet's) with the next one on the port (the e2e binary's, through port-forward)
// and copies bytes both ways, so the test driver running in e2e.test serves the kubelet. The
// real image cannot be had here (no registry, its module not served). Other hostpathplugin
// flags are accepted and ignored: the suite runs only this mode.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	endpoint := flag.String("endpoint", "", "unix socket (path or unix://path) to listen on")
	proxyEndpoint := flag.String("proxy-endpoint", "", "tcp://[host]:port to listen on for the other side")
	flag.Int("v", 0, "log verbosity (accepted for compatibility)")
	flag.Parse()
	if *endpoint == "" || *proxyEndpoint == "" {
		fmt.Fprintln(os.Stderr, "socket-proxy: only the proxy mode is emulated: give --endpoint and --proxy-endpoint")
		os.Exit(2)
	}
	socketPath := strings.TrimPrefix(*endpoint, "unix://")
	if err := os.Remove(socketPath); err != nil && !os.IsNotExist(err) {
		log.Fatalf("removing stale socket %s: %v", socketPath, err)
	}
	kubeletSide, err := net.Listen("unix", socketPath)
	if err != nil {
		log.Fatalf("listen %s: %v", socketPath, err)
	}
	addr, ok := strings.CutPrefix(*proxyEndpoint, "tcp://")
	if !ok {
		log.Fatalf("--proxy-endpoint %q: want tcp://[host]:port", *proxyEndpoint)
	}
	remoteSide, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatalf("listen %s: %v", addr, err)
	}
	log.Printf("proxy listening on %s and %s", socketPath, addr)
	go pair(kubeletSide, remoteSide)
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	<-signals
	kubeletSide.Close() // unlinks the socket
	remoteSide.Close()
}

// pair blocks on the socket; the kernel meanwhile queues the other side's connections, of which
// the next is taken for each connection to the socket.
func pair(first, second net.Listener) {
	for {
		c1, err := first.Accept()
		if err != nil {
			return
		}
		c2, err := second.Accept()
		if err != nil {
			c1.Close()
			return
		}
		log.Printf("connected %s with %s", first.Addr(), c2.RemoteAddr())
		go pipe(c1, c2)
		go pipe(c2, c1)
	}
}

// pipe copies until EOF, then closes the destination, which tells its reader no more is coming.
func pipe(from, to net.Conn) {
	defer to.Close()
	_, _ = io.Copy(to, from)
}
