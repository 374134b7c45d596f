package quic

import (
	"sync"
	"time"

	"github.com/tpugo/tpu/packet"
)

// The assembler fills pooled packet batches from many streams at once,
// each stream read straight into a packet's buffer: a stream reserves the
// next slot of the batch being filled, reads into it, and commits it (or
// cancels it: a hole). A batch goes out when every slot is taken and
// resolved, or when it has waited Coalesce since its first packet was
// committed. Streams still reading then are kicked: their Read returns at
// once, they move the bytes read so far to a buffer of their own (the
// one copy on this slow path), give their slot up, and commit to a later
// batch once their FIN comes. So a stalled stream never holds a batch
// back; holes are squeezed out before the batch is delivered.

// kicker is a stream reader holding a slot, which the assembler can tell
// to give it up.
type kicker interface{ kick() }

type slotState uint8

const (
	slotPending slotState = iota
	slotOK
	slotHole
)

// fill is one batch being filled.
type fill struct {
	b       *packet.Batch
	spare   []packet.Packet // b.Spare() when the fill began
	state   []slotState
	owners  []kicker // the readers of pending slots
	next    int      // slots handed out
	pending int      // handed out, not resolved
	first   int64    // packet.Now() of the first commit; 0: none yet
	sealed  bool     // no more slots: out once pending is 0
}

// assembler is shared by a server's streams. deliver consumes a batch
// and is called from a stream's goroutine or the coalescing timer,
// without the assembler's lock held.
type assembler struct {
	pool     *packet.Pool
	deliver  func(b *packet.Batch, first int64)
	coalesce time.Duration

	mu     sync.Mutex
	cur    *fill // nil: the next reserve starts one
	free   []*fill
	timer  *time.Timer
	closed bool
}

func newAssembler(pool *packet.Pool, coalesce time.Duration, deliver func(*packet.Batch, int64)) *assembler {
	a := &assembler{pool: pool, deliver: deliver, coalesce: coalesce}
	a.timer = time.AfterFunc(time.Hour, a.due)
	a.timer.Stop()
	return a
}

// reserve hands k the next slot: the packet whose buffer k may write
// until it commits or cancels the slot. ok is false once the assembler
// is closed.
func (a *assembler) reserve(k kicker) (f *fill, i int, p *packet.Packet, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, 0, nil, false
	}
	f = a.cur
	if f == nil {
		f = a.newFill()
		a.cur = f
	}
	i = f.next
	f.next++
	f.pending++
	f.state[i], f.owners[i] = slotPending, k
	if f.next == len(f.spare) {
		f.sealed = true
		a.cur = nil
	}
	return f, i, &f.spare[i], true
}

// newFill returns a fill over a fresh batch. Called with mu held.
func (a *assembler) newFill() *fill {
	var f *fill
	if n := len(a.free); n > 0 {
		f, a.free = a.free[n-1], a.free[:n-1]
	} else {
		c := a.pool.BatchCap()
		f = &fill{state: make([]slotState, c), owners: make([]kicker, c)}
	}
	f.b = a.pool.Get()
	f.spare = f.b.Spare()
	f.next, f.pending, f.first, f.sealed = 0, 0, 0, false
	return f
}

// commit resolves slot i of f: its packet holds n bytes, described by m
// (Size and Parsed are set here, RecvNanos to now).
func (a *assembler) commit(f *fill, i, n int, m packet.Meta) {
	now := packet.Now()
	p := &f.spare[i]
	a.mu.Lock()
	p.Meta = m
	p.Meta.RecvNanos = now
	p.SetSize(n)
	f.state[i], f.owners[i] = slotOK, nil
	if f.first == 0 {
		f.first = now
		if f == a.cur {
			a.timer.Reset(a.coalesce)
		}
	}
	a.resolved(f)
}

// cancel resolves slot i of f as a hole.
func (a *assembler) cancel(f *fill, i int) {
	a.mu.Lock()
	f.state[i], f.owners[i] = slotHole, nil
	a.resolved(f)
}

// resolved ends a commit or cancel: it unlocks mu, and delivers f if it
// is sealed and complete.
func (a *assembler) resolved(f *fill) {
	f.pending--
	done := f.sealed && f.pending == 0
	a.mu.Unlock()
	if done {
		a.finish(f)
	}
}

// due is the coalescing timer: the batch being filled has waited long
// enough. It is sealed; readers still on it are kicked.
func (a *assembler) due() {
	a.mu.Lock()
	f := a.cur
	if f == nil || f.first == 0 {
		a.mu.Unlock()
		return
	}
	if wait := time.Duration(f.first + int64(a.coalesce) - packet.Now()); wait > 0 {
		a.timer.Reset(wait) // armed for an earlier fill
		a.mu.Unlock()
		return
	}
	a.seal(f)
	done := f.pending == 0
	a.mu.Unlock()
	if done {
		a.finish(f)
	}
}

// seal closes f to new slots and kicks its pending readers. Called with
// mu held.
func (a *assembler) seal(f *fill) {
	f.sealed = true
	if a.cur == f {
		a.cur = nil
	}
	for i := 0; i < f.next; i++ {
		if f.state[i] == slotPending {
			f.owners[i].kick()
		}
	}
}

// finish delivers f's committed packets, squeezing out holes, and
// recycles f. f is sealed with nothing pending: no reader touches it.
func (a *assembler) finish(f *fill) {
	k := 0
	for i := 0; i < f.next; i++ {
		if f.state[i] != slotOK {
			continue
		}
		if k != i {
			f.spare[k].Meta = f.spare[i].Meta
			copy(f.spare[k].Buffer(), f.spare[i].Data())
		}
		k++
	}
	b, first := f.b, f.first
	f.b, f.spare = nil, nil
	clear(f.owners)
	a.mu.Lock()
	a.free = append(a.free, f)
	a.mu.Unlock()
	if k == 0 {
		b.Release()
		return
	}
	b.Grow(k)
	a.deliver(b, first)
}

// close delivers the batch being filled once its readers are done
// (call it after every reader has returned) and refuses new slots.
func (a *assembler) close() {
	a.mu.Lock()
	a.closed = true
	a.timer.Stop()
	f := a.cur
	if f == nil {
		a.mu.Unlock()
		return
	}
	a.seal(f)
	done := f.pending == 0
	a.mu.Unlock()
	if done {
		a.finish(f)
	}
}
