// Package stages holds the actor shells of the pipeline (fetch,
// sigverify, banking), the messages between them (messages.go, each with
// its direction), and the wiring of the stage graph, with its counters
// (Snapshot) and its gauges on the trace provider's meter (metrics.go);
// rendering them is cmd's. It is the only
// package that imports protoactor-go; the logic each actor runs lives in
// plain types, tested without actors: the sigverify logic in
// stages/sigverify, the scheduler and its calling protocol
// (scheduler.Driver) in banking, the span and tracer bookkeeping
// (links to source batches, per-slot commit spans) in tracers.go.
//
// # The actors
//
// fetch owns its readers (one goroutine per socket): it starts them,
// stops them at a flush (answered once each has handed over its last
// batch), and the fetch -> sigverify credits: every batch read passes
// through it and is forwarded or dropped (no credit) there, but for the
// packets of light sources, spared in a spare batch that takes the next
// credit (fairshare.go); the memory
// bound (FetchConfig.MaxLiveBatches) is checked by the readers. A reader's
// panic is re-raised in the actor.
//
// banking is the scheduler's goroutine: sigverify's batches, the
// workers' completions (SchedulerConfig.OnComplete sends them as
// messages), the ticks of its own slot timer and the ledger's commits all
// arrive as messages, and its scheduler.Driver makes the scheduler's calls.
// Nothing in it sleeps or waits: a flush is answered when the commit of
// the last slot arrives.
//
// # Fan-out
//
// Sigverify hands each verified batch to every enabled consumer
// (fanout.go): banking and the forwarder (Config.Forward, forwarder.go:
// verified non-vote packets to another TPU over UDP, rate-limited, on its
// own goroutine). The banking trace (Config.Recorder) gets its batches
// from banking, as banking's driver takes them, in order with every other
// driver call (scheduler.Event), so that a replay can make the same
// calls. With the refcount handoff each consumer holds a reference to the
// same batch, which returns to the pool at the last release; with the
// copy handoff each gets a copy of its own (packet.Batch.Clone) and the
// original is released. The copy is the only difference between the
// modes: banking holds its batch by reference in both. Each consumer
// counts what it did with every packet: banking its outcomes
// (Snapshot.Outcomes), the forwarder its own (Snapshot.Forward), the
// recorder its own. Stop stops sigverify, then lets the forwarder finish
// its queue; the recorder is
// the caller's to close after Stop.
//
// # Configs
//
// Each stage's config has one shape (config.go): a field left zero means
// its documented default, and Validate reports what the graph would
// reject, wrapping ErrConfig.
//
// # Supervision
//
// Every actor runs under the graph's supervision (Graph.spawn): a panic
// is logged to Config.Logger with its stack, counted (Graph.Panics), and
// fails the graph (Graph.Done closes, Graph.Err and Stop return the
// failure); the actor is stopped, never restarted on the state the panic
// left. protoactor's own logs go to Config.Logger too, its Info lines at
// Debug.
//
// # Stopping
//
// Graph.Stop flushes the stages in order (fetch's readers, sigverify,
// banking, whose flush ends with the last slot durable; each stage
// answers its flushes alike, with flushWaiters, flush.go); when banking's
// flush does not finish in time, it aborts: what is buffered is dropped,
// counted (packet.OutcomeShutdown; packet.OutcomeLedgerFailed when the
// ledger failed), and the work in flight is waited for,
// its completions still arriving as messages. Every datagram received
// ends in one outcome. A datagram the kernel drops at fetch's socket (a
// full receive buffer) is never received and has no outcome: it is
// counted apart (Snapshot.SocketDropped, from the kernel's SO_RXQ_OVFL
// count on Linux; 0, unknown, elsewhere), so that for any load
// sent = socket dropped + received.
package stages
