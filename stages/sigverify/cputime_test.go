package sigverify

import (
	"time"

	"github.com/tpugo/tpu/internal/cpupin"
)

// threadCPU is the calling thread's CPU time (cpupin.ThreadCPU).
func threadCPU() time.Duration { return cpupin.ThreadCPU() }

// pinCPUs returns two CPUs and a function that pins the calling thread
// to one (cpupin.Two).
func pinCPUs() (cpus [2]int, pin func(cpu int) (unpin func(), err error), ok bool) {
	return cpupin.Two()
}
