//go:build !linux

package cpupin

// onCPU is unknown here.
func onCPU() int { return -1 }
