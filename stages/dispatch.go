package stages

import (
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tpugo/tpu/trace/cpustage"
)

// ownGoroutine is a protoactor dispatcher that runs one actor's mailbox
// on a goroutine of its own, started once. protoactor's default starts a
// goroutine each time the mailbox goes from idle to busy; for banking,
// whose mailbox idles between most messages (a verified batch, a
// worker's batch back), that was a goroutine a message, each growing
// its stack afresh to the depth of a scheduler call (runtime.newstack and
// copystack were 8% of banking's CPU in tpu run, issue 25). Here the
// goroutine and its grown stack are kept, and each run of the mailbox is
// a channel handoff to it.
//
// A mailbox schedules itself only when it goes from idle to running, and
// marks itself idle only inside a run, so at most one run waits in the
// channel while another executes; should a Schedule ever find the
// channel full, it starts a goroutine, as the default does (the
// mailbox's own status keeps runs from overlapping). After stop every
// run gets a goroutine of its own.
type ownGoroutine struct {
	runs   chan func()
	exited chan struct{}

	mu      sync.Mutex
	stopped bool
}

// throughput is how many messages a mailbox run takes before it yields
// the processor (runtime.Gosched): protoactor's default.
const throughput = 300

var _ actor.Dispatcher = (*ownGoroutine)(nil)

// newOwnGoroutine starts the dispatcher's goroutine, labelled st for the
// CPU by stage. Stop it with stop once its actor has stopped.
func newOwnGoroutine(st cpustage.Stage) *ownGoroutine {
	d := &ownGoroutine{runs: make(chan func(), 1), exited: make(chan struct{})}
	go func() {
		defer close(d.exited)
		cpustage.Set(st)
		for fn := range d.runs {
			fn()
		}
	}()
	return d
}

// Schedule runs fn, a mailbox's run, on the dispatcher's goroutine.
func (d *ownGoroutine) Schedule(fn func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.stopped {
		select {
		case d.runs <- fn:
			return
		default: // cannot happen (see the type): the default's way
		}
	}
	go fn()
}

// Throughput is how many messages a run takes before yielding.
func (d *ownGoroutine) Throughput() int { return throughput }

// stop ends the goroutine once the run waiting for it, if any, is done.
// Runs scheduled later get goroutines of their own.
func (d *ownGoroutine) stop() {
	d.mu.Lock()
	if !d.stopped {
		d.stopped = true
		close(d.runs)
	}
	d.mu.Unlock()
	<-d.exited
}
