// Package cpustage measures the CPU each stage of the pipeline spends:
// fetch's readers, sigverify's workers, the banking scheduler, the
// execution workers, commit and the ledger, the RPC and PubSub
// services, the load generator, and the rest (the garbage collector's
// workers, the runtime, anything unlabelled).
//
// The stages' goroutines carry a pprof label (Key, the stage's name):
// set on the goroutine that runs a stage's code (Set), or inherited by
// the goroutines started under Do. A Sampler runs Go's CPU profiler in
// windows (Rotate ends one and starts the next), sums each window's
// samples by label, and scales the sums so that they add up to the CPU
// time the kernel charged the whole process over the window
// (getrusage; where the OS cannot tell, the sampled total). The parts therefore add up to the process's CPU by
// construction; what the profile itself saw of that CPU is Window.Coverage,
// reported beside them (typically 75-97%: the profiler's timer signals
// are lost while a thread runs with signals blocked, and nothing is
// sampled in the moment between two windows).
//
// # Accuracy
//
//   - Each window's share of a stage is a count of 10 ms samples: with n
//     samples in the window a share p is within about 2*sqrt(p(1-p)/n) (two
//     standard errors); over a 10 s run on 2 cores (about 2000 samples) a
//     20% share is within 2 points.
//   - Labels follow goroutines, not code: work one stage does on
//     another's goroutine counts for the goroutine's stage. The actors'
//     mailboxes are started by the sender's goroutine and relabelled when
//     their receive runs, so a mailbox's start-up counts for the sender;
//     the ledger's Pebble goroutines count for commit; the garbage
//     collector's assists count for the goroutine that allocated, its
//     background workers for rest.
//   - Only one CPU profile runs in a process at a time: Start fails
//     while another runs (go test -cpuprofile, say).
package cpustage
