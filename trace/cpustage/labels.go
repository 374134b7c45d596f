package cpustage

import (
	"context"
	"runtime/pprof"
)

// Stage is a part of the pipeline whose CPU is measured apart.
type Stage uint8

// The stages, in pipeline order. Rest is what no stage's label covers.
const (
	Fetch     Stage = iota // fetch's socket readers and actor
	Sigverify              // deduplication and signature checks
	Banking                // the banking scheduler's actor
	Execution              // the banking workers executing transactions
	Commit                 // slot commits and the ledger's goroutines
	RPC                    // the JSON-RPC and PubSub services
	Generator              // the built-in load generator's sender
	Rest                   // GC workers, the runtime, unlabelled goroutines
	NumStages
)

// Key is the pprof label that names a goroutine's stage.
const Key = "stage"

var names = [NumStages]string{"fetch", "sigverify", "banking", "execution", "commit", "rpc", "generator", "rest"}

// String returns the stage's name, its label value.
func (s Stage) String() string {
	if s >= NumStages {
		return "unknown"
	}
	return names[s]
}

// Parse returns the stage a label value names; Rest for any other.
func Parse(name string) Stage {
	for s, n := range names {
		if n == name {
			return Stage(s)
		}
	}
	return Rest
}

// ctxs are the label sets, made once: Set allocates nothing.
var ctxs = func() (c [NumStages]context.Context) {
	for s := range NumStages {
		c[s] = pprof.WithLabels(context.Background(), pprof.Labels(Key, s.String()))
	}
	return c
}()

// Set labels the calling goroutine with s: its CPU from now on, and that
// of the goroutines it starts, counts for s. It costs a pointer store.
func Set(s Stage) { pprof.SetGoroutineLabels(ctxs[min(s, Rest)]) }

// Do runs f with the calling goroutine labelled s, and leaves it
// unlabelled after: goroutines f starts keep s.
func Do(s Stage, f func()) {
	pprof.Do(context.Background(), pprof.Labels(Key, s.String()), func(context.Context) { f() })
}
