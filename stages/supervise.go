package stages

import (
	"fmt"
	"runtime/debug"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tpugo/tpu/trace/cpustage"
)

// The stages' supervision: how an actor is spawned, what a panic in it
// does to the graph.

// spawn starts a stage's actor under the graph's supervision: a panic in
// it is logged with its stack, counted, and fails the graph (Done, Err);
// the actor is then stopped, never restarted (protoactor's default would
// call the producer again, which hands back the same struct, its state
// as the panic left it, and the batch the message held would be lost).
func (g *Graph) spawn(name string, a actor.Actor, opts ...actor.PropsOption) *actor.PID {
	st := cpustage.Parse(name) // fetch, sigverify, banking
	props := actor.PropsFromProducer(func() actor.Actor { return supervised{name: name, stage: st, a: a, g: g} },
		append([]actor.PropsOption{actor.WithGuardian(stopOnPanic)}, opts...)...)
	return g.system.Root.Spawn(props)
}

// stopOnPanic is the guardian of the stages' actors: a failure stops the
// actor.
var stopOnPanic = actor.NewOneForOneStrategy(0, 0, func(any) actor.Directive { return actor.StopDirective })

// supervised is a stage's actor with a recover that reports a panic to
// the graph before protoactor's guardian sees it (protoactor's own
// recover has no stack to log).
type supervised struct {
	name  string
	stage cpustage.Stage // its goroutine's label while it receives
	a     actor.Actor
	g     *Graph
}

func (s supervised) Receive(ctx actor.Context) {
	// protoactor runs a mailbox on a goroutine the sender starts, which
	// inherits the sender's labels: the actor's CPU is its own from here.
	cpustage.Set(s.stage)
	defer func() {
		if r := recover(); r != nil {
			s.g.fail(s.name, r, ctx.Message(), debug.Stack())
			panic(r) // on to the guardian, which stops the actor
		}
	}()
	s.a.Receive(ctx)
}

// fail records an actor's panic: logged with its stack, counted, and the
// first one fails the graph.
func (g *Graph) fail(name string, r, msg any, stack []byte) {
	g.panics.Add(1)
	err := fmt.Errorf("stages: the %s actor panicked: %v", name, r)
	g.log.Error("stage panicked", "stage", name, "panic", fmt.Sprint(r), "message", fmt.Sprintf("%T", msg), "stack", string(stack))
	g.failOnce.Do(func() {
		g.err = err
		close(g.failed)
	})
	g.panicOnce.Do(func() { close(g.panicked) })
}

// ledgerFailed fails the graph with the ledger's failure (the ledger
// has logged it): banking can commit nothing more, so the pipeline stops
// rather than buffer transactions that will never commit.
func (g *Graph) ledgerFailed(err error) {
	g.failOnce.Do(func() {
		g.err = err
		close(g.failed)
	})
}
