// Package cpupin pins benchmark threads to CPUs and reads a thread's CPU
// time, for the benchmarks that measure work on one core handed to
// another (a packet batch written on one core and read on the other, as
// the pipeline's stages do) or a core's own rate on a shared machine.
// Both are Linux calls; elsewhere Two says no and ThreadCPU is wall-clock
// time.
package cpupin
