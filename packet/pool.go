package packet

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
)

// MaxBatchCap is the largest batch capacity a Pool accepts.
const MaxBatchCap = 1024

// Config configures a Pool.
type Config struct {
	// BatchCap is the number of packets a batch holds. Zero means 64;
	// at most MaxBatchCap.
	BatchCap int
	// MaxIdle is the most released batches the pool keeps for reuse;
	// batches released beyond it are left to the garbage collector and
	// counted in Stats.Dropped. Zero means 1024; negative keeps none.
	MaxIdle int
	// LeakHook, when not nil, is called in the invariants build with a
	// description of each batch collected while still referenced. Nil
	// logs the description with log/slog at error level.
	LeakHook func(msg string)
}

// DefaultBatchCap is the batch capacity used when Config.BatchCap is zero.
const DefaultBatchCap = 64

// DefaultMaxIdle is the idle limit used when Config.MaxIdle is zero.
const DefaultMaxIdle = 1024

// Validate reports a configuration that NewPool would reject.
func (c Config) Validate() error {
	if c.BatchCap < 0 || c.BatchCap > MaxBatchCap {
		return fmt.Errorf("packet: batch capacity %d: want 1 to %d, or 0 for the default", c.BatchCap, MaxBatchCap)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.BatchCap == 0 {
		c.BatchCap = DefaultBatchCap
	}
	if c.MaxIdle == 0 {
		c.MaxIdle = DefaultMaxIdle
	} else if c.MaxIdle < 0 {
		c.MaxIdle = 0
	}
	return c
}

// Stats is a snapshot of a pool's counters.
type Stats struct {
	Gets           uint64 // batches handed out by Get
	Puts           uint64 // batches returned by a last Release
	Allocs         uint64 // batches newly allocated (Get found none idle, or Warm)
	Warmed         uint64 // of Allocs, those Warm made ahead of use
	Live           uint64 // handed out and not yet returned: Gets - Puts
	Peak           uint64 // the most batches out at once: Live's high-water mark
	Idle           uint64 // kept for reuse now
	Dropped        uint64 // returned while MaxIdle were idle, left to the GC
	DoubleReleases uint64 // releases or retains of a released batch (counted when not panicking)
	Leaks          uint64 // batches collected while referenced (invariants build)
}

// Pool recycles batches. It is safe for concurrent use.
type Pool struct {
	cfg Config

	mu   sync.Mutex
	idle []*Batch
	live uint64 // under mu: Gets - Puts
	peak uint64 // under mu: live's high-water mark

	seq            atomic.Uint64
	gets           atomic.Uint64
	puts           atomic.Uint64
	allocs         atomic.Uint64
	warmed         atomic.Uint64
	dropped        atomic.Uint64
	doubleReleases atomic.Uint64
	leaks          atomic.Uint64
}

// ErrConfig is returned by NewPool for an invalid Config.
var ErrConfig = errors.New("packet: invalid pool config")

// NewPool returns a pool for cfg.
func NewPool(cfg Config) (*Pool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	cfg = cfg.withDefaults()
	return &Pool{cfg: cfg, idle: make([]*Batch, 0, min(cfg.MaxIdle, 4096))}, nil
}

// BatchCap returns the capacity of the pool's batches.
func (p *Pool) BatchCap() int { return p.cfg.BatchCap }

// Get returns an empty batch with one reference, owned by the caller.
func (p *Pool) Get() *Batch {
	var b *Batch
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		b = p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
	}
	p.live++
	p.peak = max(p.peak, p.live)
	p.mu.Unlock()
	if b == nil {
		b = &Batch{pkts: make([]Packet, p.cfg.BatchCap), pool: p}
		p.allocs.Add(1)
	}
	b.n = 0
	b.seq = p.seq.Add(1)
	b.refs.Store(1)
	p.gets.Add(1)
	armLeakCheck(b)
	return b
}

// put takes a batch whose last reference was released.
func (p *Pool) put(b *Batch) {
	disarmLeakCheck(b)
	poison(b)
	p.puts.Add(1)
	p.mu.Lock()
	p.live--
	if len(p.idle) < p.cfg.MaxIdle {
		p.idle = append(p.idle, b)
		b = nil
	}
	p.mu.Unlock()
	if b != nil {
		p.dropped.Add(1)
	}
}

// Warm allocates batches until n are idle (at most MaxIdle) and writes a
// byte to every page of their packets, so that the first packets read
// into them do not each take the page fault that maps fresh memory in (a
// few microseconds on bare metal, tens in some virtual machines; Agave's
// fetch stage warms its packet recycler likewise). It returns how many
// batches it made idle, counted in Stats.Warmed (and Stats.Allocs, with
// any it made that a concurrent Release left no room for: Stats.Dropped).
func (p *Pool) Warm(n int) int {
	page := os.Getpagesize()
	made := 0
	for {
		p.mu.Lock()
		room := len(p.idle) < min(n, p.cfg.MaxIdle)
		p.mu.Unlock()
		if !room {
			return made
		}
		// Made and touched outside the lock: Get and Release go on.
		b := &Batch{pkts: make([]Packet, p.cfg.BatchCap), pool: p}
		for j := range b.pkts {
			buf := b.pkts[j].Buffer()
			for k := 0; k < len(buf); k += page {
				buf[k] = 0
			}
			buf[len(buf)-1] = 0
		}
		poison(b)
		p.allocs.Add(1)
		p.mu.Lock()
		if len(p.idle) < p.cfg.MaxIdle {
			p.idle = append(p.idle, b)
			b = nil
		}
		p.mu.Unlock()
		if b != nil {
			// Releases filled the idle list meanwhile: left to the GC,
			// as a release beyond MaxIdle is.
			p.dropped.Add(1)
			return made
		}
		p.warmed.Add(1)
		made++
	}
}

// violation handles a broken ownership rule: it panics in the invariants
// build and is counted otherwise.
func (p *Pool) violation(b *Batch, what string) {
	p.doubleReleases.Add(1)
	if Invariants {
		panic(fmt.Sprintf("packet: %s (batch seq %d)", what, b.seq))
	}
}

// loggedLeaks counts the leaks of every pool that has no LeakHook.
var loggedLeaks atomic.Uint64

// LoggedLeaks returns how many batches of pools without a LeakHook the
// invariants build has reported leaked in this process (always 0
// without the tag). packettest.Main fails a test binary on any.
func LoggedLeaks() uint64 { return loggedLeaks.Load() }

// Stats returns a snapshot of the pool's counters.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	idle, peak := len(p.idle), p.peak
	p.mu.Unlock()
	// Read puts before gets so that Live never underflows.
	puts := p.puts.Load()
	gets := p.gets.Load()
	return Stats{
		Gets:           gets,
		Puts:           puts,
		Allocs:         p.allocs.Load(),
		Warmed:         p.warmed.Load(),
		Live:           gets - puts,
		Peak:           peak,
		Idle:           uint64(idle),
		Dropped:        p.dropped.Load(),
		DoubleReleases: p.doubleReleases.Load(),
		Leaks:          p.leaks.Load(),
	}
}
