// Package bankingbench is the banking stage's benchmark harness, after
// Agave's banking-bench: Run generates 1-lamport transfers, hands them to
// a scheduler.Scheduler in packet batches through a scheduler.Driver (as the
// banking actor does, with no actor in between), and measures throughput,
// allocations and GC time. tpu bench banking is its command line.
package bankingbench
