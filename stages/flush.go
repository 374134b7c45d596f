package stages

import "github.com/asynkron/protoactor-go/actor"

// flushWaiters are the senders of the flushes (flushMsg; banking's
// abortMsg too) that a stage has not answered yet. Every stage answers
// its flushes alike: it notes each sender (wait), and once it has
// nothing left of what it received before them, it answers them all at
// once with flushedMsg (answer). When that is differs by stage: fetch,
// once its readers have returned; sigverify, once nothing is pending or
// under way; banking, when its driver says the flush or the abort is
// done.
type flushWaiters []*actor.PID

// wait notes the sender of ctx's message, to be answered later.
func (w *flushWaiters) wait(ctx actor.Context) { *w = append(*w, ctx.Sender()) }

// answer sends every waiter flushedMsg{err} through s (the actor's
// context, or its system's root from a callback outside Receive) and
// forgets them.
func (w *flushWaiters) answer(s sender, err error) {
	for _, pid := range *w {
		s.Send(pid, flushedMsg{err: err})
	}
	clear(*w)
	*w = (*w)[:0]
}

// sender sends a message to an actor: an actor.Context, or an
// *actor.RootContext.
type sender interface {
	Send(pid *actor.PID, message any)
}
