package cpupin

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// onCPU is the CPU the calling thread runs on.
func onCPU() int {
	var cpu, node uint32
	if _, _, e := unix.Syscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&cpu)), uintptr(unsafe.Pointer(&node)), 0); e != 0 {
		return -1
	}
	return int(cpu)
}
