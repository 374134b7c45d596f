// Package procstats reads the process's allocation and CPU counters from
// runtime/metrics, for the reports of tpu run and tpu bench banking: how
// many heap allocations and bytes a run made per packet, and what share
// of the CPU the garbage collector took; and the calling thread's CPU
// clock (ThreadCPU), for the fan-out's timing and the benchmarks.
//
// It imports the standard library only, so that any package of the
// module may measure with it (banking's benchmark harness too, which may
// not import trace).
package procstats
