package bankingtrace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"net/netip"
	"time"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/scheduler"

	"github.com/tpugo/tpu/packet"
)

// Version is the format version this package writes and reads. Version 2
// added the genesis blockhash seed to the header. Version 3 records the
// batches when banking's driver takes them, not when sigverify sends
// them, with every other driver call (step records) and the scheduler's
// config and the genesis validators in the header, so that a replay
// makes the same calls in the same order on the same genesis. Older traces are refused (ErrVersion): version 1 cannot name its
// genesis blockhash, version 2 puts slot ends out of order with the
// batches.
const Version = 3

// magic opens every trace file.
const magic = "TPUBTRC\x00"

// fileHeaderSize is the magic and the version.
const fileHeaderSize = len(magic) + 4

// frameSize is a record's length and checksum.
const frameSize = 8

// maxRecord bounds a record's length (kind + payload): a batch of
// packet.MaxBatchCap full packets and a little more. A longer length is
// damage.
const maxRecord = 1 + 8 + 2 + packet.MaxBatchCap*(packetHeaderSize+packet.Size) + 64

// packetHeaderSize is a recorded packet's metadata: size (2), flags (1),
// outcome (1), address family (1), address (16), port (2), receive time
// (8).
const packetHeaderSize = 31

// Kind is a record's type.
type Kind uint8

// The record kinds.
const (
	KindHeader Kind = 1 + iota // the first record of each file
	KindBatch                  // a batch that entered banking
	KindSlot                   // banking started a slot
	KindGap                    // the recorder dropped batches or slot starts here
	KindStep                   // another call to banking's driver (Record.Step)
)

func (k Kind) String() string {
	switch k {
	case KindHeader:
		return "header"
	case KindBatch:
		return "batch"
	case KindSlot:
		return "slot"
	case KindGap:
		return "gap"
	case KindStep:
		return "step"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Sentinel errors.
var (
	// ErrCorrupt reports a damaged trace; the error names the file and
	// the offset of the record.
	ErrCorrupt = errors.New("bankingtrace: corrupt trace")
	// ErrNoTrace reports a directory that holds no trace file.
	ErrNoTrace = errors.New("bankingtrace: no trace")
	// ErrExists reports a directory that already holds a trace: a new
	// recording would mix with it.
	ErrExists = errors.New("bankingtrace: directory already holds a trace")
	// ErrConfig reports an invalid Config.
	ErrConfig = errors.New("bankingtrace: invalid config")
	// ErrStopped reports a recording that stopped on a write failure.
	ErrStopped = errors.New("bankingtrace: recording stopped")
	// ErrVersion reports a trace file of another format version.
	ErrVersion = errors.New("bankingtrace: unsupported trace version")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header is the first record of each file: what replay needs to rebuild
// the bank, and the clock of the recording.
type Header struct {
	// Seq is the file's number, from 1.
	Seq uint64
	// Wall and Mono are the same instant, as wall-clock time and as
	// packet.Now in the recording process: a recorded time t was at
	// Wall + (t - Mono).
	Wall time.Time
	Mono int64
	// Genesis is the recorded bank's genesis config, defaults filled in.
	Genesis bank.GenesisConfig
	// BlockCostLimit and AccountCostLimit are the bank's cost limits
	// (bank.Config); zero means banking's defaults.
	BlockCostLimit, AccountCostLimit uint64
	// Scheduler is the recorded scheduler's config, defaults filled in:
	// what decides its choices (Method, Workers, Capacity, BatchSize,
	// LookAhead, MaxQueuedBatches, MaxAccountLocks). A replay with the
	// same makes the recorded calls exactly; its callbacks, handoff and
	// ExecDelay are not recorded.
	Scheduler scheduler.Config
	// Driven reports a trace of every call to banking's driver (recorded
	// through Recorder.Event, Config.Driven): batches, completions,
	// ticks, commits, flushes, in the driver's order. Only such a trace
	// can be replayed exactly.
	Driven bool
}

// WallOf returns the wall-clock time of a recorded time t.
func (h Header) WallOf(t int64) time.Time { return h.Wall.Add(time.Duration(t - h.Mono)) }

// sameBank reports whether two headers describe the same bank.
func (h Header) sameBank(o Header) bool {
	return h.Genesis == o.Genesis && h.BlockCostLimit == o.BlockCostLimit && h.AccountCostLimit == o.AccountCostLimit &&
		SameScheduler(h.Scheduler, o.Scheduler) && h.Driven == o.Driven
}

// SameScheduler reports whether two scheduler configs (defaults filled
// in) make the same choices for the same calls: the fields a header
// records are equal.
func SameScheduler(a, b scheduler.Config) bool {
	return a.Method == b.Method && a.Workers == b.Workers && a.Capacity == b.Capacity && a.BatchSize == b.BatchSize &&
		a.LookAhead == b.LookAhead && a.MaxQueuedBatches == b.MaxQueuedBatches && a.MaxAccountLocks == b.MaxAccountLocks
}

// schedulerSize is a header's scheduler config: method (1), workers (2),
// capacity, batch size, look-ahead, queued batches (4 each), account
// locks (2), and the Driven flag (1).
const schedulerSize = 1 + 2 + 4*4 + 2 + 1

func appendScheduler(b []byte, c scheduler.Config) []byte {
	b = append(b, byte(c.Method))
	b = binary.LittleEndian.AppendUint16(b, uint16(c.Workers))
	for _, v := range [...]int{c.Capacity, c.BatchSize, c.LookAhead, c.MaxQueuedBatches} {
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	return binary.LittleEndian.AppendUint16(b, uint16(c.MaxAccountLocks))
}

func decodeScheduler(p []byte) (scheduler.Config, error) {
	u32 := func(i int) int { return int(binary.LittleEndian.Uint32(p[3+4*i:])) }
	c := scheduler.Config{Method: scheduler.Method(p[0]), Workers: int(binary.LittleEndian.Uint16(p[1:])),
		Capacity: u32(0), BatchSize: u32(1), LookAhead: u32(2), MaxQueuedBatches: u32(3),
		MaxAccountLocks: int(binary.LittleEndian.Uint16(p[19:]))}
	if c.Workers == 0 || c.Capacity == 0 || c.BatchSize == 0 || c.MaxQueuedBatches == 0 || c.MaxAccountLocks == 0 {
		return c, errors.New("header scheduler config with a zero size")
	}
	return c, c.Validate()
}

func appendHeader(b []byte, h Header) []byte {
	b = append(b, byte(KindHeader))
	b = binary.LittleEndian.AppendUint64(b, h.Seq)
	b = binary.LittleEndian.AppendUint64(b, uint64(h.Wall.UnixNano()))
	b = binary.LittleEndian.AppendUint64(b, uint64(h.Mono))
	b = binary.LittleEndian.AppendUint64(b, uint64(h.Genesis.Accounts))
	b = binary.LittleEndian.AppendUint64(b, h.Genesis.Lamports)
	b = binary.LittleEndian.AppendUint64(b, h.Genesis.FaucetLamports)
	b = binary.LittleEndian.AppendUint64(b, h.BlockCostLimit)
	b = binary.LittleEndian.AppendUint64(b, h.AccountCostLimit)
	b = appendScheduler(b, h.Scheduler)
	var driven byte
	if h.Driven {
		driven = 1
	}
	b = append(b, driven)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(h.Genesis.Seed)))
	b = append(b, h.Genesis.Seed...)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(h.Genesis.BlockhashSeed)))
	b = append(b, h.Genesis.BlockhashSeed...)
	// The genesis validators.
	b = binary.LittleEndian.AppendUint64(b, uint64(h.Genesis.Validators))
	return binary.LittleEndian.AppendUint64(b, h.Genesis.ValidatorStake)
}

func decodeHeader(p []byte) (Header, error) {
	const fixed = 8*8 + schedulerSize
	if len(p) < fixed+2 {
		return Header{}, errors.New("short header")
	}
	u := func(i int) uint64 { return binary.LittleEndian.Uint64(p[8*i:]) }
	h := Header{Seq: u(0), Wall: time.Unix(0, int64(u(1))), Mono: int64(u(2)),
		Genesis:        bank.GenesisConfig{Accounts: int(u(3)), Lamports: u(4), FaucetLamports: u(5)},
		BlockCostLimit: u(6), AccountCostLimit: u(7)}
	var err error
	if h.Scheduler, err = decodeScheduler(p[8*8:]); err != nil {
		return Header{}, err
	}
	switch p[fixed-1] {
	case 0:
	case 1:
		h.Driven = true
	default:
		return Header{}, fmt.Errorf("header driven flag %d", p[fixed-1])
	}
	n := int(binary.LittleEndian.Uint16(p[fixed:]))
	if len(p) < fixed+2+n+2 {
		return Header{}, fmt.Errorf("header seed of %d bytes in %d", n, len(p)-fixed-2)
	}
	h.Genesis.Seed = string(p[fixed+2 : fixed+2+n])
	p = p[fixed+2+n:]
	m := int(binary.LittleEndian.Uint16(p))
	if len(p) != 2+m+16 {
		return Header{}, fmt.Errorf("header blockhash seed of %d bytes and validators in %d", m, len(p)-2)
	}
	v := p[2+m:]
	h.Genesis.Validators = int(binary.LittleEndian.Uint64(v))
	h.Genesis.ValidatorStake = binary.LittleEndian.Uint64(v[8:])
	h.Genesis.BlockhashSeed = string(p[2 : 2+m])
	if h.Genesis.Accounts < 0 || h.Genesis.Validators < 0 || h.Genesis.Validators > bank.MaxValidators {
		return Header{}, errors.New("negative account count, or validators out of range")
	}
	return h, nil
}

func appendSlot(b []byte, slot uint64, at int64) []byte {
	b = append(b, byte(KindSlot))
	b = binary.LittleEndian.AppendUint64(b, slot)
	return binary.LittleEndian.AppendUint64(b, uint64(at))
}

// appendStep encodes a driver call other than OnBatch: its kind, its
// argument (the worker, or the slot) and its time.
func appendStep(b []byte, step scheduler.EventKind, arg uint64, at int64) []byte {
	b = append(b, byte(KindStep), byte(step))
	b = binary.LittleEndian.AppendUint64(b, arg)
	return binary.LittleEndian.AppendUint64(b, uint64(at))
}

func appendGap(b []byte, batches, slots uint64) []byte {
	b = append(b, byte(KindGap))
	b = binary.LittleEndian.AppendUint64(b, batches)
	return binary.LittleEndian.AppendUint64(b, slots)
}

// appendBatch encodes b (borrowed) and its arrival time.
func appendBatch(buf []byte, b *packet.Batch, arrival int64) []byte {
	buf = append(buf, byte(KindBatch))
	buf = binary.LittleEndian.AppendUint64(buf, uint64(arrival))
	pkts := b.Packets()
	buf = binary.LittleEndian.AppendUint16(buf, uint16(len(pkts)))
	for i := range pkts {
		p := &pkts[i]
		m := &p.Meta
		buf = binary.LittleEndian.AppendUint16(buf, m.Size)
		buf = append(buf, byte(m.Flags), byte(m.Outcome))
		var family byte
		switch {
		case m.Addr.Addr().Is4():
			family = 4
		case m.Addr.Addr().IsValid():
			family = 6
		}
		ip := m.Addr.Addr().As16()
		buf = append(buf, family)
		buf = append(buf, ip[:]...)
		buf = binary.LittleEndian.AppendUint16(buf, m.Addr.Port())
		buf = binary.LittleEndian.AppendUint64(buf, uint64(m.RecvNanos))
		buf = append(buf, p.Data()...)
	}
	return buf
}

// Packet is a recorded packet. Data is valid until the reader's next
// call to Next.
type Packet struct {
	Meta packet.Meta
	Data []byte
}

// Record is one record read back. Its slices are valid until the
// reader's next call to Next.
type Record struct {
	Kind Kind
	// Slot is the slot started (KindSlot).
	Slot uint64
	// At is when the slot started (KindSlot), banking's driver took the
	// batch (KindBatch) or the call was made (KindStep), in the
	// recording's packet.Now units.
	At int64
	// Step is the driver call (KindStep): EventCompletion,
	// EventTick, EventCommitted, EventFlush or EventAbort; Arg its worker
	// (EventCompletion) or slot (EventCommitted).
	Step scheduler.EventKind
	Arg  uint64
	// Packets are the batch's packets (KindBatch).
	Packets []Packet
	// GapBatches and GapSlots are how many batches and slot starts the
	// recorder dropped just before this point (KindGap).
	GapBatches, GapSlots uint64
}

// decode fills r from a record's kind and payload (rec), reusing r's
// slices; the packets' Data point into rec.
func (r *Record) decode(rec []byte) error {
	*r = Record{Kind: Kind(rec[0]), Packets: r.Packets[:0]}
	p := rec[1:]
	switch r.Kind {
	case KindSlot, KindGap:
		if len(p) != 16 {
			return fmt.Errorf("%s record of %d bytes", r.Kind, len(p))
		}
		a, b := binary.LittleEndian.Uint64(p), binary.LittleEndian.Uint64(p[8:])
		if r.Kind == KindSlot {
			r.Slot, r.At = a, int64(b)
		} else {
			r.GapBatches, r.GapSlots = a, b
		}
		return nil
	case KindStep:
		if len(p) != 17 {
			return fmt.Errorf("step record of %d bytes", len(p))
		}
		r.Step, r.Arg, r.At = scheduler.EventKind(p[0]), binary.LittleEndian.Uint64(p[1:]), int64(binary.LittleEndian.Uint64(p[9:]))
		switch r.Step {
		case scheduler.EventCompletion:
			if r.Arg >= scheduler.MaxWorkers {
				return fmt.Errorf("completion of worker %d", r.Arg)
			}
		case scheduler.EventTick, scheduler.EventCommitted, scheduler.EventFlush, scheduler.EventAbort:
		default:
			return fmt.Errorf("step %s", r.Step)
		}
		return nil
	case KindBatch:
		if len(p) < 10 {
			return errors.New("short batch record")
		}
		r.At = int64(binary.LittleEndian.Uint64(p))
		n := int(binary.LittleEndian.Uint16(p[8:]))
		if n > packet.MaxBatchCap {
			return fmt.Errorf("batch of %d packets", n)
		}
		p = p[10:]
		r.Packets = r.Packets[:0]
		for i := 0; i < n; i++ {
			if len(p) < packetHeaderSize {
				return fmt.Errorf("packet %d cut short", i)
			}
			size := binary.LittleEndian.Uint16(p)
			if size > packet.Size || len(p) < packetHeaderSize+int(size) {
				return fmt.Errorf("packet %d: size %d in %d bytes", i, size, len(p)-packetHeaderSize)
			}
			var addr netip.Addr
			switch ip := [16]byte(p[5:21]); p[4] {
			case 0:
			case 4:
				addr = netip.AddrFrom16(ip).Unmap()
			case 6:
				addr = netip.AddrFrom16(ip)
			default:
				return fmt.Errorf("packet %d: address family %d", i, p[4])
			}
			r.Packets = append(r.Packets, Packet{
				Meta: packet.Meta{Size: size, Flags: packet.Flags(p[2]), Outcome: packet.Outcome(p[3]),
					Addr:      netip.AddrPortFrom(addr, binary.LittleEndian.Uint16(p[21:])),
					RecvNanos: int64(binary.LittleEndian.Uint64(p[23:]))},
				Data: p[packetHeaderSize : packetHeaderSize+int(size) : packetHeaderSize+int(size)],
			})
			p = p[packetHeaderSize+int(size):]
		}
		if len(p) != 0 {
			return fmt.Errorf("%d bytes after the last packet", len(p))
		}
		return nil
	}
	return fmt.Errorf("unknown record kind %d", rec[0])
}

// Fill puts the batch record's packets into b, which must be empty and
// hold the sole reference, and returns how many fitted.
func (r *Record) Fill(b *packet.Batch) int {
	n := 0
	for i := range r.Packets {
		p := b.Next()
		if p == nil {
			break
		}
		p.Fill(r.Packets[i].Data)
		p.Meta = r.Packets[i].Meta
		n++
	}
	return n
}

// fileName returns the name of trace file seq.
func fileName(seq uint64) string { return fmt.Sprintf("trace-%010d.btr", seq) }

// parseName returns the sequence number of a trace file's name.
func parseName(name string) (uint64, bool) {
	var seq uint64
	if _, err := fmt.Sscanf(name, "trace-%010d.btr", &seq); err != nil || fileName(seq) != name {
		return 0, false
	}
	return seq, true
}
