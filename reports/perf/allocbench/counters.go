package allocbench

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Counters measure the calling goroutine's work beyond wall time: its thread's CPU time, which
// a busy shared machine inflates far less than wall time (waiting for a core is not in it, nor
// are the GC's background workers; GC assists are), and, where the CPU's counters are exposed
// (not in most VMs), the instructions the thread retired in user space.
type Counters struct {
	fd int // perf event of the instruction counter, -1 without one
	// Unavailable says why instructions are not counted ("" when they are).
	Unavailable string
}

// epoch makes Sample.Wall monotonic.
var epoch = time.Now()

// Sample is what the counters read at one moment.
type Sample struct {
	Wall, CPU    time.Duration
	Instructions uint64 // 0 without an instruction counter
}

// Sub returns the work between an earlier sample and s.
func (s Sample) Sub(earlier Sample) Sample {
	return Sample{Wall: s.Wall - earlier.Wall, CPU: s.CPU - earlier.CPU, Instructions: s.Instructions - earlier.Instructions}
}

// OpenCounters locks the goroutine to its thread, since both counters are per thread; call
// Close on the same goroutine.
func OpenCounters() *Counters {
	runtime.LockOSThread()
	attr := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_HARDWARE,
		Config: unix.PERF_COUNT_HW_INSTRUCTIONS,
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Bits:   unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv,
	}
	fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return &Counters{fd: -1, Unavailable: fmt.Sprintf("perf_event_open(instructions): %v", err)}
	}
	return &Counters{fd: fd}
}

// Read samples the counters.
func (c *Counters) Read() Sample {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		panic(err) // every Linux has this clock
	}
	s := Sample{Wall: time.Since(epoch), CPU: time.Duration(ts.Nano())}
	if c.fd >= 0 {
		var value [8]byte
		if n, err := unix.Read(c.fd, value[:]); err != nil || n != len(value) {
			c.Unavailable = fmt.Sprintf("read instruction counter: %d bytes, %v", n, err)
			c.closeCounter()
		} else {
			s.Instructions = binary.NativeEndian.Uint64(value[:])
		}
	}
	return s
}

// Close stops counting and unlocks the goroutine from its thread.
func (c *Counters) Close() {
	c.closeCounter()
	runtime.UnlockOSThread()
}

func (c *Counters) closeCounter() {
	if c.fd >= 0 {
		unix.Close(c.fd)
		c.fd = -1
	}
}
