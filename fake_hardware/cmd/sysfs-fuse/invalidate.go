package main

import (
	"io/fs"
	"log"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"
)

// The kernel may then cache lookups and attributes: every change the lab makes to the backing
// files (entries created, removed or renamed in, as the lab makes all of its changes) is seen
// through inotify and dropped from the kernel's caches of every view. After an acted write the
// writer waits until the changes it caused are dropped (drain), so the next read sees them;
// changes made outside any write (a fault) are dropped as their events arrive, in milliseconds.
const watched = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_CLOSE_WRITE |
	unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW

type invalidator struct {
	mu      sync.Mutex
	fd      int
	backing string
	dirs    map[int32]string // watch descriptor -> directory, relative to backing ("." for its root)
	roots   []*gofs.Inode    // one per view
}

func newInvalidator(backing string) (*invalidator, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, err
	}
	inv := &invalidator{fd: fd, backing: backing, dirs: map[int32]string{}}
	inv.watchTree(".")
	go inv.loop()
	return inv, nil
}

// watchTree watches a directory and every one under it (a VF's, renamed in whole).
func (inv *invalidator) watchTree(rel string) {
	_ = filepath.WalkDir(filepath.Join(inv.backing, rel), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil // gone meanwhile, or a file: its directory's watch covers it
		}
		if wd, err := unix.InotifyAddWatch(inv.fd, p, watched); err == nil {
			r, _ := filepath.Rel(inv.backing, p)
			inv.dirs[int32(wd)] = r
		}
		return nil
	})
}

func (inv *invalidator) loop() {
	for {
		fds := []unix.PollFd{{Fd: int32(inv.fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err != nil && err != unix.EINTR {
			log.Fatalf("polling inotify: %v", err)
		}
		inv.drain()
	}
}

// drain handles every event queued now.
func (inv *invalidator) drain() {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	buf := make([]byte, 64*1024)
	for {
		n, err := unix.Read(inv.fd, buf)
		if err != nil || n <= 0 {
			return // EAGAIN: nothing more queued
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)]), "\x00")
			off += unix.SizeofInotifyEvent + int(ev.Len)
			inv.handle(ev.Wd, ev.Mask, name)
		}
	}
}

func (inv *invalidator) handle(wd int32, mask uint32, name string) {
	switch {
	case mask&unix.IN_Q_OVERFLOW != 0:
		log.Printf("inotify queue overflowed: dropping every cached entry")
		for _, root := range inv.roots {
			forgetAll(root)
		}
		return
	case mask&unix.IN_IGNORED != 0:
		delete(inv.dirs, wd)
		return
	}
	dir, ok := inv.dirs[wd]
	if !ok || hidden(name) {
		return
	}
	if mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 && mask&unix.IN_ISDIR != 0 {
		inv.watchTree(filepath.Join(dir, name))
	}
	for _, root := range inv.roots {
		parent := root
		for _, part := range strings.Split(dir, string(filepath.Separator)) {
			if parent != nil && part != "." {
				parent = parent.GetChild(part)
			}
		}
		if parent == nil {
			continue // the kernel never looked that directory up: it caches nothing of it
		}
		if child := parent.GetChild(name); child != nil {
			child.NotifyContent(0, 0) // its attributes (a size)
		}
		parent.NotifyEntry(name)
	}
}

func forgetAll(n *gofs.Inode) {
	for name, child := range n.Children() {
		forgetAll(child)
		n.NotifyEntry(name)
	}
}
