package stages

import (
	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/banking/scheduler"
	"github.com/tpugo/tpu/packet"
	"github.com/tpugo/tpu/trace"
)

// The messages between the stages. A message that carries a batch owns
// one reference to it: sending it consumes the sender's reference
// (DESIGN.md, "Ownership of a batch"); the receiver must release it or
// pass it on. None has a GetMessages method: protoactor's mailbox would
// take such a message for a batch of messages and split it.

// Sigverify hands a verified batch to every consumer at once (fanout):
// banking as a BatchMsg and the forwarder on its bounded queue (a
// channel, not an actor: it drops when full), each consuming one
// reference (refcount) or a copy of its own (copy). Banking hands the
// banking trace its batches as its driver takes them (Recorder.Batch).

// BatchMsg carries packets one hop down the graph:
// fetch -> sigverify, and sigverify -> banking. It owns one reference to
// Batch. Span is the sender's span for the batch (the parent of the
// receiver's), Sent the packet.Now() of the send (the receiver's queue
// wait starts there).
type BatchMsg struct {
	Batch *packet.Batch
	Span  trace.SpanContext
	Sent  int64
}

// readMsg: a fetch reader -> fetch. A batch read off a socket, owning one
// reference to Batch; Span is fetch's span for it, still open (fetch ends
// it when it forwards or drops the batch), First the packet.Now() of its
// first packet.
type readMsg struct {
	Batch *packet.Batch
	Span  trace.Span
	First int64
}

// readerDoneMsg: a fetch reader -> fetch. The reader returned; panic is
// what it panicked with (nil: it was stopped), stack where.
type readerDoneMsg struct {
	panic any
	stack []byte
}

// spareRetryMsg: fetch's retry timer -> fetch. Try again to send the
// spare batch (fairshare.go) on to sigverify.
type spareRetryMsg struct{}

// drainMsg: an actor -> itself. Process what has queued up (sigverify
// starts a pass over the batches received since the last one, if fewer
// than sigverify.MaxPasses are under way; otherwise the next passDoneMsg
// starts it).
type drainMsg struct{}

// passDoneMsg: a sigverify worker -> sigverify. The workers are done with
// pass; its batches are the stage's again.
type passDoneMsg struct{ pass *svPass }

// flushMsg: the graph -> a stage. Finish everything received before it,
// pass it on, then reply (fetch: when its readers have stopped and their
// last batches are forwarded; banking: when its buffer is empty and the
// slot committed).
type flushMsg struct{}

// abortMsg: the graph -> banking, when a flush did not finish in time.
// Drop what is buffered, then reply once the work in flight is back.
type abortMsg struct{}

// flushedMsg: a stage -> the graph, in reply to flushMsg or abortMsg.
type flushedMsg struct{ err error }

// workDoneMsg: a banking worker -> banking (SchedulerConfig.OnComplete,
// on the worker's goroutine). The worker finished batch; it owns nothing
// of the packets (banking does).
type workDoneMsg struct{ batch *scheduler.WorkBatch }

// slotTickMsg: banking's slot clock (its own timer) -> banking. End the
// working slot. At most one is pending: banking tells the clock it took
// each (slotClock.handled), and the periods before that are coalesced.
type slotTickMsg struct{}

// committedMsg: the ledger's committer -> banking. Slot is durable, since
// at (packet.Now() on the committer, when it reported the commit after
// its sync).
type committedMsg struct {
	record ledger.SlotRecord
	at     int64
}

// statsReq: the graph -> a stage, answered with the stage's counters
// (sigverify: *stageCounts; banking: scheduler.Stats).
type statsReq struct{}

// finalStatsReq: the graph -> banking, as it stops: banking stops its
// slot clock, then answers with scheduler.Stats, so that no slot ends
// after the counters the graph keeps (a tick sent before the clock
// stopped is dropped).
type finalStatsReq struct{}

// blockhashReq: the graph -> banking, answered with the bank's latest
// blockhash ([32]byte).
type blockhashReq struct{}
