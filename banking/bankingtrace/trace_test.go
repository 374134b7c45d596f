package bankingtrace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/scheduler"

	"github.com/tpugo/tpu/packet"
)

// event is what a test wrote, to compare with what is read back.
type event struct {
	kind    Kind
	slot    uint64
	at      int64
	packets []Packet // copies
	gapB    uint64
}

func newPool(t testing.TB) *packet.Pool {
	t.Helper()
	p, err := packet.NewPool(packet.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// makeBatch returns a batch of n packets with distinct bytes and metadata.
func makeBatch(pool *packet.Pool, seed, n int) *packet.Batch {
	b := pool.Get()
	for i := 0; i < n; i++ {
		p := b.Next()
		size := (seed*31+i*17)%packet.Size + 1
		data := make([]byte, size)
		for j := range data {
			data[j] = byte(seed + i + j)
		}
		p.Fill(data)
		p.Meta.Flags = packet.Flags(i % 64)
		p.Meta.RecvNanos = int64(seed*1000 + i)
		switch i % 3 {
		case 0:
			p.Meta.Addr = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, byte(i)}), uint16(8000+i))
		case 1:
			p.Meta.Addr = netip.AddrPortFrom(netip.IPv6Loopback(), uint16(9000+i))
		}
		if i%5 == 4 {
			p.Discard(packet.OutcomeDuplicate)
		}
	}
	return b
}

func eventOf(b *packet.Batch, at int64) event {
	e := event{kind: KindBatch, at: at}
	for i := range b.Packets() {
		p := b.At(i)
		e.packets = append(e.packets, Packet{Meta: p.Meta, Data: bytes.Clone(p.Data())})
	}
	return e
}

func testConfig(dir string) Config {
	return Config{Dir: dir, Bank: bank.Config{Genesis: bank.GenesisConfig{Seed: "t", Accounts: 7, BlockhashSeed: "t"}, BlockCostLimit: 123}}
}

// readAll reads a trace back.
func readAll(t *testing.T, dir string, cfg ReadConfig) ([]event, *Reader, error) {
	t.Helper()
	r, err := OpenConfig(dir, cfg)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	var out []event
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return out, r, nil
		}
		if err != nil {
			return out, r, err
		}
		e := event{kind: rec.Kind, slot: rec.Slot, at: rec.At, gapB: rec.GapBatches}
		if rec.Kind == KindSlot || rec.Kind == KindGap {
			e.at = map[Kind]int64{KindSlot: rec.At}[rec.Kind]
		}
		for _, p := range rec.Packets {
			e.packets = append(e.packets, Packet{Meta: p.Meta, Data: bytes.Clone(p.Data)})
		}
		if rec.Kind != KindBatch {
			e.packets = nil
		}
		out = append(out, e)
	}
}

func sameEvents(t *testing.T, got, want []event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("read %d records, wrote %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.kind != w.kind || g.slot != w.slot || g.at != w.at || g.gapB != w.gapB || len(g.packets) != len(w.packets) {
			t.Fatalf("record %d: got %s slot %d at %d gap %d with %d packets, want %s slot %d at %d gap %d with %d packets",
				i, g.kind, g.slot, g.at, g.gapB, len(g.packets), w.kind, w.slot, w.at, w.gapB, len(w.packets))
		}
		for j := range w.packets {
			if g.packets[j].Meta != w.packets[j].Meta || !bytes.Equal(g.packets[j].Data, w.packets[j].Data) {
				t.Fatalf("record %d packet %d: got %+v (%d bytes), want %+v (%d bytes)", i, j, g.packets[j].Meta, len(g.packets[j].Data), w.packets[j].Meta, len(w.packets[j].Data))
			}
		}
	}
}

// writeTrace writes slots and batches through a Writer and returns what it
// wrote.
func writeTrace(t *testing.T, cfg Config, slots, perSlot int) []event {
	t.Helper()
	pool := newPool(t)
	w, err := NewWriter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var want []event
	for s := 1; s <= slots; s++ {
		if err := w.Slot(uint64(s), int64(s*1000)); err != nil {
			t.Fatal(err)
		}
		want = append(want, event{kind: KindSlot, slot: uint64(s), at: int64(s * 1000)})
		for i := 0; i < perSlot; i++ {
			b := makeBatch(pool, s*100+i, 1+(s+i)%64)
			at := int64(s*1000 + i + 1)
			if err := w.Batch(b, at); err != nil {
				t.Fatal(err)
			}
			want = append(want, eventOf(b, at))
			b.Release()
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if live := pool.Stats().Live; live != 0 {
		t.Fatalf("%d batches live", live)
	}
	return want
}

var readModes = []struct {
	name string
	cfg  ReadConfig
}{
	{"buffered-4KiB", ReadConfig{BufSize: 4 << 10}},
	{"buffered-default", ReadConfig{}},
	{"mmap", ReadConfig{Mmap: true}},
}

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	want := writeTrace(t, cfg, 5, 7)
	for _, m := range readModes {
		t.Run(m.name, func(t *testing.T) {
			got, r, err := readAll(t, dir, m.cfg)
			if err != nil {
				t.Fatal(err)
			}
			sameEvents(t, got, want)
			h := r.Header()
			wantG := bank.GenesisConfig{Seed: "t", Accounts: 7, BlockhashSeed: "t", Lamports: 1_000_000_000_000, FaucetLamports: 1_000_000_000_000_000_000, ValidatorStake: 1_000_000_000_000}
			if h.Genesis != wantG || h.BlockCostLimit != 123 || h.AccountCostLimit != 0 || h.Seq != 1 {
				t.Fatalf("header %+v", h)
			}
			if r.Torn() != "" {
				t.Fatalf("torn %q on a whole trace", r.Torn())
			}
		})
	}
}

func TestHeaderClock(t *testing.T) {
	dir := t.TempDir()
	writeTrace(t, testConfig(dir), 1, 1)
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h := r.Header()
	if got := h.WallOf(h.Mono + 5e9); !got.Equal(h.Wall.Add(5e9)) {
		t.Fatalf("WallOf: %v, want %v", got, h.Wall.Add(5e9))
	}
	if h.Wall.IsZero() || h.Mono <= 0 {
		t.Fatalf("header clock %v %d", h.Wall, h.Mono)
	}
}

func TestRotationAndCap(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.MaxBytes, cfg.FileBytes = 200<<10, 40<<10
	want := writeTrace(t, cfg, 20, 10) // about 20*10*33*650 bytes: several caps' worth
	names, err := traceFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, n := range names {
		st, err := os.Stat(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		total += st.Size()
		if st.Size() > cfg.FileBytes+maxRecord {
			t.Errorf("%s: %d bytes, rotation at %d", n, st.Size(), cfg.FileBytes)
		}
	}
	if total > cfg.MaxBytes+maxRecord {
		t.Fatalf("trace holds %d bytes, cap %d", total, cfg.MaxBytes)
	}
	if len(names) < 3 {
		t.Fatalf("only %d files: no rotation", len(names))
	}
	first, _ := parseName(names[0])
	if first == 1 {
		t.Fatalf("the oldest file was kept: %v", names)
	}
	// What is left is the newest records, in order, with every file's
	// header checked.
	got, r, err := readAll(t, dir, ReadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Header().Seq != first {
		t.Fatalf("first header seq %d, want %d", r.Header().Seq, first)
	}
	if len(got) == 0 || len(got) >= len(want) {
		t.Fatalf("read %d of %d records", len(got), len(want))
	}
	sameEvents(t, got, want[len(want)-len(got):])
}

// newestFile returns the path of the trace's newest file.
func newestFile(t *testing.T, dir string) string {
	names, err := traceFiles(dir)
	if err != nil || len(names) == 0 {
		t.Fatal(names, err)
	}
	return filepath.Join(dir, names[len(names)-1])
}

func TestDamage(t *testing.T) {
	for _, m := range readModes {
		t.Run(m.name, func(t *testing.T) {
			t.Run("flipped byte", func(t *testing.T) {
				dir := t.TempDir()
				writeTrace(t, testConfig(dir), 3, 5)
				path := newestFile(t, dir)
				data, _ := os.ReadFile(path)
				data[len(data)/2] ^= 0x40
				os.WriteFile(path, data, 0o644)
				_, _, err := readAll(t, dir, m.cfg)
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "offset") {
					t.Fatalf("got %v, want ErrCorrupt naming %s and an offset", err, path)
				}
			})
			t.Run("torn tail of the newest file", func(t *testing.T) {
				dir := t.TempDir()
				want := writeTrace(t, testConfig(dir), 3, 5)
				path := newestFile(t, dir)
				st, _ := os.Stat(path)
				last := want[len(want)-1]
				size := int64(frameSize + 1 + 10)
				for _, p := range last.packets {
					size += packetHeaderSize + int64(len(p.Data))
				}
				cut := st.Size() - size + 11 // inside the last record
				if err := os.Truncate(path, cut); err != nil {
					t.Fatal(err)
				}
				got, r, err := readAll(t, dir, m.cfg)
				if err != nil {
					t.Fatal(err)
				}
				sameEvents(t, got, want[:len(want)-1])
				if wantTorn := fmt.Sprintf("%s at offset %d", path, st.Size()-size); r.Torn() != wantTorn {
					t.Fatalf("Torn %q, want %q", r.Torn(), wantTorn)
				}
			})
			t.Run("cut short in an older file", func(t *testing.T) {
				dir := t.TempDir()
				cfg := testConfig(dir)
				cfg.FileBytes, cfg.MaxBytes = 20<<10, 1<<30
				writeTrace(t, cfg, 4, 5)
				names, _ := traceFiles(dir)
				if len(names) < 2 {
					t.Fatalf("%d files", len(names))
				}
				path := filepath.Join(dir, names[0])
				st, _ := os.Stat(path)
				os.Truncate(path, st.Size()-3)
				if _, _, err := readAll(t, dir, m.cfg); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
					t.Fatalf("got %v, want ErrCorrupt naming %s", err, path)
				}
			})
			t.Run("not a trace", func(t *testing.T) {
				dir := t.TempDir()
				os.WriteFile(filepath.Join(dir, fileName(1)), []byte("hello, this is not a banking trace file"), 0o644)
				if _, _, err := readAll(t, dir, m.cfg); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "bad magic") {
					t.Fatalf("got %v, want ErrCorrupt: bad magic", err)
				}
			})
		})
	}
}

func TestOpenErrors(t *testing.T) {
	empty := t.TempDir()
	if _, err := Open(empty); !errors.Is(err, ErrNoTrace) {
		t.Fatalf("empty dir: %v, want ErrNoTrace", err)
	}
	if _, err := Open(filepath.Join(empty, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing dir: %v, want not exist", err)
	}
	dir := t.TempDir()
	writeTrace(t, testConfig(dir), 1, 1)
	if _, err := NewWriter(testConfig(dir)); !errors.Is(err, ErrExists) {
		t.Fatalf("second recording into one dir: %v, want ErrExists", err)
	}
	if err := testConfig(dir).Validate(); err != nil {
		t.Fatalf("testConfig: %v", err)
	}
	noDir := testConfig("")
	tooSmall := testConfig(dir)
	tooSmall.MaxBytes, tooSmall.FileBytes = 10, 20
	negQueue := testConfig(dir)
	negQueue.Queue = -1
	noBlockhashSeed := testConfig(dir) // a replay could not rebuild its blockhashes
	noBlockhashSeed.Bank.Genesis.BlockhashSeed = ""
	for _, c := range []Config{noDir, tooSmall, negQueue, noBlockhashSeed} {
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v, want ErrConfig", c, err)
		}
	}
}

func TestRecorderRoundTrip(t *testing.T) {
	dir := t.TempDir()
	pool := newPool(t)
	r, err := NewRecorder(testConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	var want []event
	var live uint64
	for s := 1; s <= 3; s++ {
		r.Slot(uint64(s), int64(s))
		want = append(want, event{kind: KindSlot, slot: uint64(s), at: int64(s)})
		for i := 0; i < 4; i++ {
			b := makeBatch(pool, s*10+i, 64)
			want = append(want, eventOf(b, int64(s*10+i)))
			for j := range b.Packets() {
				if !b.At(j).Discarded() {
					live++
				}
			}
			r.Batch(b, int64(s*10+i))
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	st := r.Stats()
	if live == 0 || live == 12*64 {
		t.Fatalf("%d live packets: makeBatch discards some", live)
	}
	if st.Batches != 12 || st.Packets != 12*64 || st.Live != live || st.Slots != 3 || st.Dropped != 0 || st.Stopped || st.Bytes <= 0 {
		t.Fatalf("stats %+v", st)
	}
	if live := pool.Stats().Live; live != 0 {
		t.Fatalf("%d batches live after Close", live)
	}
	got, _, err := readAll(t, dir, ReadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	sameEvents(t, got, want)
	// After Close a batch is released at once, counted.
	r.Batch(makeBatch(pool, 1, 1), 0)
	if live, ab := pool.Stats().Live, r.Stats().Abandoned; live != 0 || ab != 1 {
		t.Fatalf("after Close: %d live, %d abandoned", live, ab)
	}
}

func TestRecorderFullQueue(t *testing.T) {
	dir := t.TempDir()
	pool := newPool(t)
	cfg := testConfig(dir)
	cfg.Queue = 2
	w, err := NewWriter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := newRecorder(w) // its goroutine not started: the queue fills
	b1, b2 := makeBatch(pool, 1, 3), makeBatch(pool, 2, 3)
	want := []event{eventOf(b1, 1), eventOf(b2, 2)}
	r.Batch(b1, 1)
	r.Batch(b2, 2)
	r.Batch(makeBatch(pool, 3, 3), 3) // dropped
	r.Slot(9, 9)                      // dropped
	if st := r.Stats(); st.Dropped != 1 || st.DroppedSlots != 1 {
		t.Fatalf("stats %+v, want 1 batch and 1 slot dropped", st)
	}
	if live := pool.Stats().Live; live != 2 {
		t.Fatalf("%d batches live, want the 2 queued", live)
	}
	go r.run()
	b4 := makeBatch(pool, 4, 3)
	r.Batch(b4, 4) // may find room or not: it goes after the gap either way
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if live := pool.Stats().Live; live != 0 {
		t.Fatalf("%d batches live after Close", live)
	}
	got, _, err := readAll(t, dir, ReadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 3 {
		t.Fatalf("%d records", len(got))
	}
	sameEvents(t, got[:2], want)
	if g := got[2]; g.kind != KindGap || g.gapB < 1 {
		t.Fatalf("record 2 is %+v, want a gap of the dropped batch", g)
	}
}

func TestRecorderStopsOnFailure(t *testing.T) {
	dir := t.TempDir()
	pool := newPool(t)
	cfg := testConfig(filepath.Join(dir, "trace"))
	cfg.FileBytes, cfg.MaxBytes = 4<<10, 1<<20
	var logged bytes.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	r, err := NewRecorder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The directory goes: the next file cannot be created.
	if err := os.RemoveAll(cfg.Dir); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		r.Batch(makeBatch(pool, i, 64), int64(i)) // never waits
		r.Slot(uint64(i), int64(i))
	}
	err = r.Close()
	if !errors.Is(err, ErrStopped) {
		t.Fatalf("Close: %v, want ErrStopped", err)
	}
	st := r.Stats()
	if !st.Stopped || st.Batches+st.Abandoned+st.Dropped != 200 || st.Abandoned == 0 {
		t.Fatalf("stats %+v: want stopped, every batch written, abandoned or dropped", st)
	}
	if live := pool.Stats().Live; live != 0 {
		t.Fatalf("%d batches live after a failed recording", live)
	}
	if n := strings.Count(logged.String(), "level=ERROR"); n != 1 {
		t.Fatalf("%d errors logged, want 1:\n%s", n, logged.String())
	}
}

func TestRecorderBatchAllocs(t *testing.T) {
	dir := t.TempDir()
	pool := newPool(t)
	r, err := NewRecorder(testConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b := makeBatch(pool, 1, 64)
	// Warm the writer's buffers.
	for i := 0; i < 10; i++ {
		b.Retain()
		r.Batch(b, 0)
	}
	allocs := testing.AllocsPerRun(200, func() {
		b.Retain()
		r.Batch(b, 0)
	})
	b.Release()
	if allocs != 0 {
		t.Fatalf("Recorder.Batch: %.1f allocations per batch", allocs)
	}
}

func TestRecorderCloseWhileRecording(t *testing.T) {
	pool := newPool(t)
	cfg := testConfig(t.TempDir())
	cfg.Queue = 8
	r, err := NewRecorder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const senders, each = 4, 200
	var wg sync.WaitGroup
	started := make(chan struct{}, senders)
	for g := 0; g < senders; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			started <- struct{}{}
			for i := 0; i < each; i++ {
				r.Batch(makeBatch(pool, i, 4), int64(i))
				r.Slot(uint64(i), int64(i))
			}
		}()
	}
	for g := 0; g < senders; g++ {
		<-started
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	st := r.Stats()
	if got := st.Batches + st.Dropped + st.Abandoned; got != senders*each {
		t.Fatalf("stats %+v: %d batches accounted for, want %d", st, got, senders*each)
	}
	if live := pool.Stats().Live; live != 0 {
		t.Fatalf("%d batches live", live)
	}
}

// FuzzRecordDecode checks that no payload makes the decoder panic or
// return packets outside the payload.
func FuzzRecordDecode(f *testing.F) {
	pool := newPool(f)
	b := makeBatch(pool, 3, 5)
	f.Add(appendBatch(nil, b, 7))
	b.Release()
	f.Add(appendSlot(nil, 9, 10))
	f.Add(appendGap(nil, 1, 2))
	f.Add(appendHeader(nil, Header{Genesis: bank.GenesisConfig{Seed: "x", BlockhashSeed: "y"}}))
	f.Fuzz(func(t *testing.T, rec []byte) {
		if len(rec) == 0 {
			return
		}
		var r Record
		if err := r.decode(rec); err != nil {
			return
		}
		for _, p := range r.Packets {
			if int(p.Meta.Size) != len(p.Data) || len(p.Data) > packet.Size {
				t.Fatalf("packet of size %d with %d bytes", p.Meta.Size, len(p.Data))
			}
		}
	})
}

// TestHeaderValidators: a header keeps the genesis validators, and one
// cut anywhere inside them does not decode.
func TestHeaderValidators(t *testing.T) {
	h := Header{Seq: 2, Genesis: bank.GenesisConfig{Seed: "s", Accounts: 3, BlockhashSeed: "bh", Validators: 5, ValidatorStake: 77},
		Scheduler: scheduler.Config{Workers: 2, Capacity: 100, BatchSize: 8, MaxQueuedBatches: 4, MaxAccountLocks: 64}}
	enc := appendHeader(nil, h)
	got, err := decodeHeader(enc[1:])
	if err != nil || got.Genesis != h.Genesis || got.Seq != 2 {
		t.Fatalf("decoded %+v, %v; want %+v", got.Genesis, err, h.Genesis)
	}
	for _, cut := range []int{8, 16} {
		if _, err := decodeHeader(enc[1 : len(enc)-cut]); err == nil {
			t.Fatalf("a header cut %d bytes inside the validators decoded", cut)
		}
	}
}
