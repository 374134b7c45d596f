package quic

import (
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	quicgo "github.com/quic-go/quic-go"

	"github.com/tpugo/tpu/packet"
)

// Reading streams. A connection's accept loop reads each stream it
// accepts itself ("inline"), straight into a slot of the batch being
// filled: a transaction's stream has usually arrived whole, FIN and all,
// by the time quic-go lets it be accepted (it comes in one packet, often
// with others), so reading it takes no wait. Handing each stream to
// another goroutine instead cost a goroutine wake-up and a park per
// stream, the Go scheduler's work between them and a timer reset: about
// a quarter of the QUIC reader's CPU (docs/BENCHMARKS.md).
//
// A stream whose bytes have not all come within inlineWait of its
// accept (a lost or late packet, a stalled or slow sender) is handed
// off, read so far, to a reader goroutine that finishes it under the
// stream's own deadline, so that one slow stream holds its connection's
// next ones back for inlineWait at most. The reader goroutines are
// shared by the server's connections (at most maxIdleReaders idle, each
// exiting after readerIdle idle): a goroutine per stream allocates, and
// its stack grows on its first read through quic-go.

// inlineWait is how long an accept loop waits on a stream's missing
// bytes before it hands the stream off.
const inlineWait = 500 * time.Microsecond

// maxIdleReaders bounds the readers kept waiting for a stream (each a
// goroutine with a stack of a few KiB).
const maxIdleReaders = 256

// readerIdle is how long a reader waits for a stream before it exits, so
// that readers come back down after a burst.
const readerIdle = time.Second

// eventHandoff is readStream's answer when an inline read would wait:
// not a stream event, the stream goes on to a reader goroutine.
const eventHandoff = NumEvents

// connStreams reads one connection's streams.
type connStreams struct {
	s        *Server
	c        *quicgo.Conn
	e        *connEntry
	meta     packet.Meta
	limit    int64         // concurrent streams
	busy     atomic.Int64  // streams handed off, not finished
	freed    chan struct{} // a handed-off stream finished (cap 1)
	withhold atomic.Int64  // stream credits still to keep back
	wg       sync.WaitGroup
	credit   *creditBatch
}

// streamReader is one stream being read, and how far: the accept loop
// starts it, and a reader goroutine finishes it if it is handed off. The
// assembler may kick it while it holds a slot.
type streamReader struct {
	cs     *connStreams
	str    *quicgo.ReceiveStream
	at     int64 // packet.Now() of its accept: its deadline is StreamTimeout after
	kicked atomic.Bool

	// The read so far.
	f    *fill // the batch its slot is in; nil: none held
	slot int
	buf  []byte // where its bytes go: the slot's packet's buffer, or own
	own  []byte // its bytes, once moved off a kicked slot
	n    int
}

func (r *streamReader) kick() {
	r.kicked.Store(true)
	r.str.SetReadDeadline(time.Now())
}

// readers are the server's spare streamReaders.
var readers = sync.Pool{New: func() any { return new(streamReader) }}

// wait blocks until fewer than cs.limit of its streams are handed off,
// reporting false if ctx is done first.
func (cs *connStreams) wait(done <-chan struct{}) bool {
	for cs.busy.Load() >= cs.limit {
		select {
		case <-cs.freed:
		case <-done:
			return false
		}
	}
	return true
}

// read reads str, accepted at at (packet.Now()), inline, or hands it off
// to a reader goroutine. r is the accept loop's streamReader; read
// returns the one to use for the next stream (r, or a fresh one when r
// went with a handoff).
func (cs *connStreams) read(r *streamReader, str *quicgo.ReceiveStream, at int64) *streamReader {
	r.cs, r.str, r.at = cs, str, at
	r.kicked.Store(false)
	until := packet.Time(at + int64(min(inlineWait, cs.s.cfg.StreamTimeout)))
	str.SetReadDeadline(until)
	ev := r.readStream(until)
	if ev != eventHandoff {
		cs.finish(r, ev)
		return r
	}
	cs.busy.Add(1)
	cs.wg.Add(1)
	cs.s.handoffs.Add(1)
	cs.s.dispatch(r)
	return readers.Get().(*streamReader)
}

// finish ends r's stream in ev: counts it (a received stream was counted
// before its packet was handed on) and gives its credit back.
func (cs *connStreams) finish(r *streamReader, ev Event) {
	if ev != EventStreamReceived {
		cs.s.counts.add(ev)
	}
	// Credit: the first (MaxStreams - this connection's limit) streams'
	// are kept, so that its concurrent streams settle at its limit.
	if cs.withhold.Add(-1) < 0 {
		cs.credit.release(r.str)
	}
	r.str, r.f, r.buf, r.own, r.n = nil, nil, nil, nil, 0
}

// dispatch hands r, a stream handed off, to an idle reader, or starts
// one. The caller has added it to r.cs.wg and busy.
func (s *Server) dispatch(r *streamReader) {
	select {
	case s.jobs <- r:
	default:
		s.readers.Add(1)
		go s.reader(r)
	}
}

// reader finishes r, then the streams dispatched to it, until the server
// closes (jobs is closed), enough readers are idle, or none came for
// readerIdle.
func (s *Server) reader(r *streamReader) {
	defer s.readers.Done()
	s.started.Add(1)
	idle := time.NewTimer(readerIdle)
	for {
		cs := r.cs
		deadline := r.deadline()
		r.str.SetReadDeadline(deadline)
		if r.kicked.Load() {
			// Kicked before the deadline above was set: the kick's
			// must win, or the slot would be held to the deadline.
			r.str.SetReadDeadline(time.Now())
		}
		cs.finish(r, r.readStream(deadline))
		readers.Put(r)
		if cs.busy.Add(-1) == cs.limit-1 {
			select {
			case cs.freed <- struct{}{}:
			default:
			}
		}
		cs.wg.Done()
		if s.idle.Add(1) > maxIdleReaders {
			s.idle.Add(-1)
			return
		}
		idle.Reset(readerIdle)
		var ok bool
		select {
		case r, ok = <-s.jobs:
		case <-idle.C:
		}
		s.idle.Add(-1)
		if !ok {
			return
		}
	}
}

// deadline returns r's stream's deadline.
func (r *streamReader) deadline() time.Time {
	return packet.Time(r.at + int64(r.cs.s.cfg.StreamTimeout))
}

// readStream reads r's stream, one transaction, into a packet, and ends
// in exactly one stream event, or eventHandoff when a read would wait
// past until, which is before the stream's deadline (an inline read).
// The stream's read deadline is until. The assembler holds r only while
// r holds a slot: not after readStream returns a stream event.
func (r *streamReader) readStream(until time.Time) Event {
	cs := r.cs
	a := cs.s.asm
	str := r.str
	deadline := r.deadline()
	if r.buf == nil { // a new stream
		var p *packet.Packet
		var ok bool
		if r.f, r.slot, p, ok = a.reserve(r); !ok {
			str.CancelRead(0)
			return EventStreamLost
		}
		r.buf = p.Buffer()
	}
	giveUp := func() {
		if r.f != nil {
			a.cancel(r.f, r.slot)
			r.f = nil
		}
	}
	for {
		m, err := str.Read(r.buf[r.n:])
		r.n += m
		if err == nil && r.n == len(r.buf) {
			var one [1]byte
			m, err = str.Read(one[:])
			if m > 0 {
				giveUp()
				cs.c.CloseWithError(CodeInvalidStream, "invalid_stream")
				return EventStreamTooLarge
			}
		}
		switch {
		case err == nil:
			continue
		case errors.Is(err, io.EOF):
			if r.n == 0 {
				giveUp()
				cs.c.CloseWithError(CodeInvalidStream, "invalid_stream")
				return EventStreamEmpty
			}
			if r.f == nil {
				f, slot, p, ok := a.reserve(r)
				if !ok {
					return EventStreamLost
				}
				copy(p.Buffer(), r.own[:r.n])
				r.f, r.slot = f, slot
			}
			// Counted before the packet can reach the sink: whoever
			// sees the packet sees it counted.
			cs.s.counts.add(EventStreamReceived)
			cs.s.peers.received(cs.e)
			a.commit(r.f, r.slot, r.n, cs.meta)
			r.f = nil
			return EventStreamReceived
		case errors.Is(err, os.ErrDeadlineExceeded):
			now := time.Now()
			if r.kicked.Swap(false) && r.f != nil && now.Before(deadline) {
				// The batch is due: keep the bytes, give the slot up.
				r.own = make([]byte, packet.Size)
				copy(r.own, r.buf[:r.n])
				r.buf = r.own
				giveUp()
				str.SetReadDeadline(until)
				continue
			}
			if now.Before(until) {
				// A kick meant for a slot already given up; its
				// deadline may have landed after ours.
				str.SetReadDeadline(until)
				continue
			}
			if now.Before(deadline) {
				return eventHandoff
			}
			giveUp()
			str.CancelRead(0)
			return EventStreamTimeout
		}
		giveUp()
		var se *quicgo.StreamError
		if errors.As(err, &se) && se.Remote {
			return EventStreamReset
		}
		return EventStreamLost
	}
}
