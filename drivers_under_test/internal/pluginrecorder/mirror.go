package pluginrecorder

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// Mirror keeps, for every registration socket in the driver registry, a recording stand-in of
// the same name in the kubelet's registry: created when the plugin's appears, replaced when the
// plugin's is (a restarted plugin listens anew: the kubelet must see a new socket too, as it
// would have), removed when the plugin's goes (the kubelet unregisters it).
type Mirror struct {
	DriverRegistry  string   // where plugins put their registration sockets
	KubeletRegistry string   // the kubelet's plugins_registry
	ServiceDir      string   // where the stand-ins of the plugins' service sockets go
	CDIDirs         []string // the container runtime's CDI spec directories, recorded with each prepare and unprepare
	Recorder        *Recorder

	mu      sync.Mutex
	plugins map[string]*standIn
}

// poll is how often the driver registry is looked at: a socket's appearance reaches the kubelet
// this much later than it would without the recorder.
const poll = 50 * time.Millisecond

func (m *Mirror) Run(ctx context.Context) error {
	for _, dir := range []string{m.DriverRegistry, m.KubeletRegistry, m.ServiceDir} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return err
		}
	}
	m.plugins = map[string]*standIn{}
	defer m.stopAll()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		m.sync()
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// identity tells a socket made anew from the one it replaced: the inode number alone does not,
// the kernel hands a freed one out again at once.
type identity struct {
	inode uint64
	ctime syscall.Timespec
}

func identify(info os.FileInfo) identity {
	st := info.Sys().(*syscall.Stat_t)
	return identity{st.Ino, st.Ctim}
}

// sync compares the driver registry's sockets (by name and identity) with the stand-ins.
func (m *Mirror) sync() {
	found := map[string]identity{}
	entries, _ := os.ReadDir(m.DriverRegistry)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || e.Type()&os.ModeSocket == 0 { // as the kubelet's watcher skips them
			continue
		}
		if info, err := e.Info(); err == nil {
			found[e.Name()] = identify(info)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, s := range m.plugins {
		if id, ok := found[name]; !ok || id != s.id {
			s.stop()
			delete(m.plugins, name)
			m.event(name, "socket removed")
		}
	}
	for name, id := range found {
		if _, ok := m.plugins[name]; ok {
			continue
		}
		s, err := m.start(name, id)
		if err != nil {
			m.event(name, "stand-in not started", err)
			continue
		}
		m.plugins[name] = s
		m.event(name, "socket created")
	}
}

func (m *Mirror) event(socket, what string, errs ...error) {
	now := time.Now()
	rec := Record{Start: now, End: now, Socket: socket, Method: what}
	if len(errs) > 0 {
		rec.Error = errs[0].Error()
	}
	m.Recorder.write(rec)
}

func (m *Mirror) stopAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.plugins {
		s.stop()
	}
}

// standIn is one plugin's: its registration socket in the kubelet's registry, and a socket for
// each service endpoint its registration names.
type standIn struct {
	name     string
	id       identity
	mirror   *Mirror
	conns    []*grpc.ClientConn
	servers  []*grpc.Server
	sockets  []string
	mu       sync.Mutex
	services map[string]string // the plugin's endpoint -> the stand-in's
}

func (m *Mirror) start(name string, id identity) (*standIn, error) {
	s := &standIn{name: name, id: id, mirror: m, services: map[string]string{}}
	conn, err := dial(filepath.Join(m.DriverRegistry, name))
	if err != nil {
		return nil, err
	}
	s.conns = append(s.conns, conn)
	f := &forwarder{backend: conn, rec: m.Recorder, socket: name, rewrite: s.endpoint}
	if err := s.serve(f.server(), filepath.Join(m.KubeletRegistry, name)); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

func (s *standIn) serve(server *grpc.Server, socket string) error {
	_ = os.Remove(socket)
	l, err := net.Listen("unix", socket)
	if err != nil {
		return err
	}
	s.servers = append(s.servers, server)
	s.sockets = append(s.sockets, socket)
	go func() { _ = server.Serve(l) }()
	return nil
}

// endpoint puts the stand-in's service socket in the plugin's registration answer, started the
// first time the plugin names that endpoint.
func (s *standIn) endpoint(method string, answer []byte) []byte {
	if method != registerapi.Registration_GetInfo_FullMethodName {
		return answer
	}
	info := &registerapi.PluginInfo{}
	if proto.Unmarshal(answer, info) != nil || info.Endpoint == "" {
		return answer
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ours, ok := s.services[info.Endpoint]
	if !ok {
		ours = filepath.Join(s.mirror.ServiceDir, fmt.Sprintf("%s-%d.sock", strings.TrimSuffix(s.name, ".sock"), len(s.services)))
		conn, err := dial(info.Endpoint)
		if err == nil {
			s.conns = append(s.conns, conn)
			f := &forwarder{backend: conn, rec: s.mirror.Recorder, socket: s.name, cdiDirs: s.mirror.CDIDirs}
			err = s.serve(f.server(), ours)
		}
		if err != nil { // the kubelet then talks to the plugin unrecorded: say so in the trace
			s.mirror.event(s.name, "service stand-in not started", err)
			return answer
		}
		s.services[info.Endpoint] = ours
	}
	info.Endpoint = ours
	if b, err := proto.Marshal(info); err == nil {
		return b
	}
	return answer
}

func (s *standIn) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, server := range s.servers {
		server.Stop()
	}
	for _, socket := range s.sockets {
		_ = os.Remove(socket)
	}
	for _, c := range s.conns {
		_ = c.Close()
	}
}
