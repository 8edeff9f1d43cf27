// Command sysfs-fuse serves a node's emulated sysfs tree through FUSE, so that writes to the
// attributes the kernel acts on (sriov_numvfs, driver_override, a driver's bind, ...) are handled
// before write(2) returns and a refused one fails with the kernel's errno, as on a real node.
//
// The tree's state lives in plain files (--backing) that the hardware lab writes; every other
// access passes through to them, and what the kernel caches of them is dropped as the lab
// changes them (invalidate.go), so reads show the state at that moment. A
// write to an acted attribute is not stored: it is handed to the kernel stand-in, the hardware
// agent that started this process (fake_hardware/agent.py), as one JSON line on stdout
// ({"path": relative path, "value": bytes written}), and its answer on stdin ({"errno": N}) is
// what the writer gets. One write at a time, in the order they arrive, as the kernel's device
// lock orders them.
//
// Each --mount is made with mount(8) on an opened /dev/fuse (fd=3), inside the mount namespace
// given (a node's) or this one, so the same tree is at the node's path for its pods and at the
// lab's host path for dralab and its user; this process serves all of them.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

const cacheTimeout = 10 * time.Second

// kernel hands acted writes to the hardware agent, one at a time.
type kernel struct {
	mu      sync.Mutex
	answers *bufio.Reader
	acted   map[string]bool
	caches  *invalidator
}

type request struct {
	Path  string `json:"path"`
	Value string `json:"value"`
}

type answer struct {
	Errno int `json:"errno"`
}

func (k *kernel) write(rel string, value []byte) syscall.Errno {
	k.mu.Lock()
	defer k.mu.Unlock()
	line, err := json.Marshal(request{Path: rel, Value: string(value)})
	if err == nil {
		_, err = os.Stdout.Write(append(line, '\n'))
	}
	var got answer
	if err == nil {
		var text string
		if text, err = k.answers.ReadString('\n'); err == nil {
			err = json.Unmarshal([]byte(text), &got)
		}
	}
	if err != nil { // the agent is gone: the device does not answer
		log.Printf("write of %q to %s: no answer from the hardware agent: %v", value, rel, err)
		return syscall.EIO
	}
	return syscall.Errno(got.Errno)
}

// node is a loopback node whose acted attributes go to the kernel.
type node struct {
	fs.LoopbackNode
	k *kernel
}

func (n *node) rel() string { return n.Path(n.Root()) }

func (n *node) isActed() bool { return n.k.acted[filepath.Base(n.rel())] }

// The lab assembles entries under dot names and renames them in (sysfs.write_atomic): sysfs has
// no dot names, so a reader never sees a half-made entry.
func hidden(name string) bool { return strings.HasPrefix(name, ".") }

var _ = (fs.NodeLookuper)((*node)(nil))

func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if hidden(name) {
		return nil, syscall.ENOENT
	}
	return n.LoopbackNode.Lookup(ctx, name, out)
}

var _ = (fs.NodeOpendirHandler)((*node)(nil))

// OpendirHandle lists the directory as it is at opendir, less the dot names.
func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	stream, errno := fs.NewLoopbackDirStream(filepath.Join(n.RootData.Path, n.rel()))
	if errno != 0 {
		return nil, 0, errno
	}
	defer stream.Close()
	var entries []fuse.DirEntry
	for stream.HasNext() {
		entry, errno := stream.Next()
		if errno != 0 {
			return nil, 0, errno
		}
		if !hidden(entry.Name) || entry.Name == "." || entry.Name == ".." {
			entries = append(entries, entry)
		}
	}
	return fs.NewListDirStream(entries).(fs.FileHandle), 0, 0
}

var _ = (fs.NodeOpener)((*node)(nil))

// Open: a file's content stays in the kernel's page cache from one open to the next (a driver
// polling its devices reads the same files every few seconds: each read a round trip here cost
// the lab a third of a core per node); the lab's changes to a file drop it (invalidate.go). An
// acted attribute is read anew each time and never truncated by O_TRUNC (`echo 5 > sriov_numvfs`
// opens with it), its writes go to the kernel.
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if n.isActed() {
		return &attribute{n}, fuse.FOPEN_DIRECT_IO, 0
	}
	h, fuseFlags, errno := n.LoopbackNode.Open(ctx, flags)
	return h, fuseFlags | fuse.FOPEN_KEEP_CACHE, errno
}

var _ = (fs.NodeSetattrer)((*node)(nil))

func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if _, truncating := in.GetSize(); truncating && n.isActed() {
		return n.Getattr(ctx, nil, out)
	}
	if a, ok := f.(*attribute); ok && a != nil {
		f = nil // the attribute's handle holds no file: change the backing file by path
	}
	return n.LoopbackNode.Setattr(ctx, f, in, out)
}

// attribute is an open acted attribute: reads show the backing file now, writes go to the kernel.
type attribute struct{ n *node }

var _ = (fs.FileReader)((*attribute)(nil))
var _ = (fs.FileWriter)((*attribute)(nil))
var _ = (fs.FileFlusher)((*attribute)(nil))

func (a *attribute) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	data, err := os.ReadFile(filepath.Join(a.n.RootData.Path, a.n.rel()))
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	if off >= int64(len(data)) {
		return fuse.ReadResultData(nil), 0
	}
	return fuse.ReadResultData(data[off:min(int64(len(data)), off+int64(len(dest)))]), 0
}

func (a *attribute) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	errno := a.n.k.write(a.n.rel(), data)
	a.n.k.caches.drain() // what the write changed is seen by the writer's next read
	if errno != 0 {
		return 0, errno
	}
	return uint32(len(data)), 0
}

func (a *attribute) Flush(ctx context.Context) syscall.Errno { return 0 }

// mountPoint is where one view of the tree is mounted: a path, in a mount namespace or in ours.
type mountPoint struct{ namespace, path string }

func (m mountPoint) command(script string, extra ...*os.File) *exec.Cmd {
	argv := []string{"sh", "-c", script, "sh", m.path}
	if m.namespace != "" {
		argv = append([]string{"nsenter", "--mount=" + m.namespace, "--"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.ExtraFiles, cmd.Stderr = extra, os.Stderr
	return cmd
}

func (m mountPoint) String() string {
	if m.namespace == "" {
		return m.path
	}
	return m.namespace + ":" + m.path
}

// serve mounts one view and serves it until the mount goes away.
func serve(k *kernel, backing string, m mountPoint) (*fuse.Server, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(backing, &st); err != nil {
		return nil, err
	}
	root := &fs.LoopbackRoot{Path: backing, Dev: uint64(st.Dev)}
	root.NewNode = func(r *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
		return &node{LoopbackNode: fs.LoopbackNode{RootData: r}, k: k}
	}
	root.RootNode = root.NewNode(root, nil, "", &st)

	device, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("%w (is the fuse module loaded? `modprobe fuse`)", err)
	}
	defer device.Close() // the server keeps its own copy
	// Lazily unmount a view left by an earlier agent (its server gone, the mount dead) first.
	mount := `umount -l "$1" 2>/dev/null || true
mount -t fuse.dralab-sysfs -o fd=3,rootmode=40000,user_id=0,group_id=0,allow_other dralab-sysfs "$1"`
	if err := m.command(mount, device).Run(); err != nil {
		return nil, fmt.Errorf("mounting at %s: %w", m, err)
	}
	fd, err := unix.Dup(int(device.Fd()))
	if err != nil {
		return nil, err
	}
	// Cached, as the lab's changes invalidate them (invalidate.go); the timeout is a safety net.
	cached := cacheTimeout
	server, err := fuse.NewServer(fs.NewNodeFS(root.RootNode, &fs.Options{
		EntryTimeout: &cached, AttrTimeout: &cached, NegativeTimeout: &cached,
	}), fmt.Sprintf("/dev/fd/%d", fd), &fuse.MountOptions{AllowOther: true, FsName: "dralab-sysfs", Name: "dralab-sysfs"})
	if err != nil {
		return nil, err
	}
	go server.Serve()
	if err := server.WaitMount(); err != nil {
		return nil, err
	}
	k.caches.mu.Lock()
	k.caches.roots = append(k.caches.roots, root.RootNode.EmbeddedInode())
	k.caches.mu.Unlock()
	return server, nil
}

type mountFlags []mountPoint

func (f *mountFlags) String() string { return fmt.Sprint(*f) }

func (f *mountFlags) Set(v string) error {
	namespace, path, found := strings.Cut(v, ":")
	if !found {
		namespace, path = "", v
	}
	if !filepath.IsAbs(path) {
		return fmt.Errorf("%q: the mount point must be an absolute path", v)
	}
	*f = append(*f, mountPoint{namespace, path})
	return nil
}

func main() {
	backing := flag.String("backing", "", "the tree's plain files")
	acted := flag.String("acted", "", "comma-separated names of the attributes the kernel acts on")
	var mounts mountFlags
	flag.Var(&mounts, "mount", "[MOUNT-NAMESPACE-FILE:]PATH to mount the tree at (repeatable)")
	flag.Parse()
	if *backing == "" || len(mounts) == 0 {
		fmt.Fprintln(os.Stderr, "sysfs-fuse: give --backing and at least one --mount")
		os.Exit(2)
	}
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	// The agent that answers writes is our parent: when it dies, so does the tree.
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0, 0, 0); err != nil {
		log.Fatalf("prctl: %v", err)
	}
	caches, err := newInvalidator(*backing)
	if err != nil {
		log.Fatalf("watching %s: %v", *backing, err)
	}
	k := &kernel{answers: bufio.NewReader(os.Stdin), acted: map[string]bool{}, caches: caches}
	for _, name := range strings.Split(*acted, ",") {
		k.acted[name] = name != ""
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	k.mu.Lock() // writes wait for the ready line: it is the first the agent reads
	for _, m := range mounts {
		if _, err := serve(k, *backing, m); err != nil {
			unmountAll(mounts)
			log.Fatalf("serving %s at %s: %v", *backing, m, err)
		}
		log.Printf("serving %s at %s", *backing, m)
	}
	fmt.Fprintln(os.Stdout, `{"ready": true}`)
	k.mu.Unlock()
	<-stop
	unmountAll(mounts)
}

func unmountAll(mounts []mountPoint) {
	for _, m := range mounts {
		// A node already gone took its mounts with it: nothing to report.
		_ = m.command(`umount -l "$1" 2>/dev/null || true`).Run()
	}
}
