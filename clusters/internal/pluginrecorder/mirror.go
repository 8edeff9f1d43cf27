package pluginrecorder

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// Mirror keeps, for every registration socket in the driver registry, a recording stand-in of
// the same name in the kubelet's registry, and does to it what the plugin does to its own, event
// by event, so that the kubelet's plugin watcher sees what it would have seen: a socket created
// (or moved in) gets a stand-in, replaced when the plugin listens anew (the kubelet registers it
// again); a socket removed removes the stand-in (the kubelet unregisters it); a socket moved away
// moves the stand-in away, which the kubelet's watcher ignores (it keeps the plugin registered),
// while the plugin's services stay reachable through their stand-ins.
type Mirror struct {
	DriverRegistry  string   // where plugins put their registration sockets
	KubeletRegistry string   // the kubelet's plugins_registry
	ServiceDir      string   // where the stand-ins of the plugins' service sockets go
	CDIDirs         []string // the container runtime's CDI spec directories, recorded with each prepare and unprepare
	Recorder        *Recorder

	mu      sync.Mutex
	plugins map[string]*standIn
	moved   []*standIn   // moved away by their plugin: only their services are still served
	served  atomic.Int64 // names stand-in sockets apart (services, moved registrations), also across replaced ones
}

func (m *Mirror) Run(ctx context.Context) error {
	for _, dir := range []string{m.DriverRegistry, m.KubeletRegistry, m.ServiceDir} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return err
		}
	}
	m.removeLeftStandIns()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.Add(m.DriverRegistry); err != nil {
		return err
	}
	m.plugins = map[string]*standIn{}
	defer m.stopAll()
	// Sockets there before the watch, as the kubelet's watcher walks its directory when it starts.
	entries, _ := os.ReadDir(m.DriverRegistry)
	for _, e := range entries {
		m.created(e.Name())
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			name := filepath.Base(ev.Name)
			switch {
			case ev.Has(fsnotify.Create): // also a socket moved in
				m.created(name)
			case ev.Has(fsnotify.Remove):
				m.removed(name)
			case ev.Has(fsnotify.Rename):
				m.movedAway(name)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			m.event("", "watch error", err) // an overflowed queue: the trace must say events were lost
		}
	}
}

// A service stand-in's socket: the plugin's registration socket's name and the mirror's counter.
var serviceSocket = regexp.MustCompile(`-[0-9]+\.sock$`)

// removeLeftStandIns removes the service stand-ins' sockets an earlier recorder left: one killed
// with its node (a reboot) leaves them, under numbers this run may never reach again.
func (m *Mirror) removeLeftStandIns() {
	entries, _ := os.ReadDir(m.ServiceDir)
	for _, e := range entries {
		if e.Type()&os.ModeSocket != 0 && serviceSocket.MatchString(e.Name()) {
			_ = os.Remove(filepath.Join(m.ServiceDir, e.Name()))
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

func (m *Mirror) created(name string) {
	info, err := os.Lstat(filepath.Join(m.DriverRegistry, name))
	if strings.HasPrefix(name, ".") || err != nil || info.Mode()&os.ModeSocket == 0 { // as the kubelet's watcher skips them
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	id := identify(info)
	if s, ok := m.plugins[name]; ok {
		if s.id == id { // seen by the first walk and by the watch
			return
		}
		s.stop()
		delete(m.plugins, name)
	}
	s, err := m.start(name, id)
	if err != nil {
		m.event(name, "stand-in not started", err)
		return
	}
	m.plugins[name] = s
	m.event(name, "socket created")
}

func (m *Mirror) removed(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.plugins[name]; ok {
		s.stop()
		delete(m.plugins, name)
		m.event(name, "socket removed")
	}
}

func (m *Mirror) movedAway(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.plugins[name]
	if !ok {
		return
	}
	delete(m.plugins, name)
	s.moveAway()
	m.moved = append(m.moved, s)
	m.event(name, "socket moved away")
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
	for _, s := range m.moved {
		s.stop()
	}
}

// standIn is one plugin's: its registration socket in the kubelet's registry, and a socket for
// each service endpoint its registration names.
type standIn struct {
	name         string
	id           identity
	mirror       *Mirror
	mu           sync.Mutex
	registration *served
	services     map[string]*served // by the plugin's endpoint
}

// served is a stand-in socket and the connection it forwards to.
type served struct {
	server  *grpc.Server
	socket  string
	backend *grpc.ClientConn
}

func (s *served) stop() {
	s.server.Stop()
	_ = os.Remove(s.socket)
	_ = s.backend.Close()
}

func (m *Mirror) start(name string, id identity) (*standIn, error) {
	s := &standIn{name: name, id: id, mirror: m, services: map[string]*served{}}
	f := &forwarder{rec: m.Recorder, socket: name, rewrite: s.endpoint}
	reg, err := serve(f, filepath.Join(m.DriverRegistry, name), filepath.Join(m.KubeletRegistry, name))
	if err != nil {
		return nil, err
	}
	s.registration = reg
	return s, nil
}

// serve puts a stand-in at socket that forwards to backend.
func serve(f *forwarder, backend, socket string) (*served, error) {
	conn, err := dial(backend)
	if err != nil {
		return nil, err
	}
	f.backend = conn
	_ = os.Remove(socket)
	l, err := net.Listen("unix", socket)
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	// Removed by stop, by name: a moved stand-in's old name may be a new stand-in's by then.
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	server := f.server()
	go func() { _ = server.Serve(l) }()
	return &served{server: server, socket: socket, backend: conn}, nil
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
		socket := filepath.Join(s.mirror.ServiceDir, fmt.Sprintf("%s-%d.sock", strings.TrimSuffix(s.name, ".sock"), s.mirror.served.Add(1)))
		f := &forwarder{rec: s.mirror.Recorder, socket: s.name, cdiDirs: s.mirror.CDIDirs}
		var err error
		if ours, err = serve(f, info.Endpoint, socket); err != nil { // the kubelet then talks to the plugin unrecorded: say so in the trace
			s.mirror.event(s.name, "service stand-in not started", err)
			return answer
		}
		s.services[info.Endpoint] = ours
	}
	info.Endpoint = ours.socket
	if b, err := proto.Marshal(info); err == nil {
		return b
	}
	return answer
}

// moveAway does to the registration stand-in what the plugin did to its socket: the kubelet's
// watcher sees it renamed, to a hidden name it ignores, and keeps the plugin registered. The
// stand-in keeps serving, as the plugin's own server does: a plugin may move its socket within
// a call (NotifyRegistrationStatus), whose answer must still reach the kubelet. Nothing dials a
// hidden socket, so its file goes at once.
func (s *standIn) moveAway() {
	s.mu.Lock()
	defer s.mu.Unlock()
	hidden := filepath.Join(s.mirror.KubeletRegistry, fmt.Sprintf(".%s.moved-%d", s.name, s.mirror.served.Add(1)))
	if os.Rename(s.registration.socket, hidden) == nil {
		s.registration.socket = hidden
		_ = os.Remove(hidden)
	}
}

func (s *standIn) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.registration.stop()
	for _, service := range s.services {
		service.stop()
	}
}
