package allocbench

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Counters measure a stretch of work beyond wall time: the process's CPU time, which a busy
// shared machine inflates far less than wall time (time spent waiting for a core is not in
// it; the GC's work on other threads is), and, where the CPU's counters are exposed (not in
// most VMs), the instructions retired by the calling thread in user space.
type Counters struct {
	cpu          time.Duration
	instructions int // perf event fd, -1 without one
	retired      uint64
	// Unavailable says why instructions are not counted ("" when they are).
	Unavailable string
}

// StartCounters locks the goroutine to its thread (the instruction counter is per thread) and
// starts counting; call Stop on the same goroutine.
func StartCounters() *Counters {
	runtime.LockOSThread()
	c := &Counters{instructions: -1}
	attr := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_HARDWARE,
		Config: unix.PERF_COUNT_HW_INSTRUCTIONS,
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Bits:   unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv,
	}
	fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		c.Unavailable = fmt.Sprintf("perf_event_open(instructions): %v", err)
	} else {
		c.instructions = fd
		c.retired, err = c.read()
		if err != nil {
			c.close(err)
		}
	}
	c.cpu = processCPU()
	return c
}

// Stop returns the CPU time and the instructions (0 when unavailable) since StartCounters.
func (c *Counters) Stop() (cpu time.Duration, instructions uint64) {
	defer runtime.UnlockOSThread()
	cpu = processCPU() - c.cpu
	if c.instructions >= 0 {
		retired, err := c.read()
		if err == nil {
			instructions = retired - c.retired
		}
		c.close(err)
	}
	return cpu, instructions
}

func (c *Counters) read() (uint64, error) {
	var value [8]byte
	if n, err := unix.Read(c.instructions, value[:]); err != nil || n != len(value) {
		return 0, fmt.Errorf("read instruction counter: %d bytes, %v", n, err)
	}
	return binary.NativeEndian.Uint64(value[:]), nil
}

func (c *Counters) close(err error) {
	if err != nil {
		c.Unavailable = err.Error()
	}
	unix.Close(c.instructions)
	c.instructions = -1
}

func processCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		panic(err) // every Linux has this clock
	}
	return time.Duration(ts.Nano())
}
