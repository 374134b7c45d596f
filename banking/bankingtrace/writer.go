package bankingtrace

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/scheduler"

	"github.com/tpugo/tpu/packet"
)

// DefaultMaxBytes is the cap on a trace's size when Config.MaxBytes is
// zero: 1 GiB, as Agave's banking trace.
const DefaultMaxBytes = 1 << 30

// DefaultQueue is the recorder's queue length when Config.Queue is zero.
const DefaultQueue = 1024

// Config configures a Writer and a Recorder.
type Config struct {
	// Dir is the trace directory: created if missing; it must not hold
	// a trace already (ErrExists). Required.
	Dir string
	// MaxBytes is the most bytes the trace's files hold together: when a
	// new file would take the trace over it, the oldest files are
	// deleted. Zero means DefaultMaxBytes (1 GiB).
	MaxBytes int64
	// FileBytes is the size at which a file is closed and the next one
	// begun (a file ends with the record that crossed it). Zero means
	// MaxBytes / 8; at most MaxBytes.
	FileBytes int64
	// Queue is the most batches and slot starts waiting for the
	// recorder's goroutine; beyond it a batch's recording is dropped,
	// counted. Zero means DefaultQueue (1024). The Writer ignores it.
	Queue int
	// Bank is the recorded bank's config: its genesis and cost limits go
	// into each file's header (not its directory or sync mode). Its
	// Genesis.BlockhashSeed is required: it is what lets a replay
	// rebuild the recorded bank's blockhashes.
	Bank bank.Config
	// Scheduler is the recorded scheduler's config: the fields that
	// decide its choices go into each file's header, defaults filled in
	// (Header.Scheduler). A replay with another makes its own choices.
	Scheduler scheduler.Config
	// Driven says that every call to banking's driver will be recorded
	// (Recorder.Event as scheduler.DriverConfig.OnEvent), so that a
	// replay can make them exactly (Header.Driven). False: batches and
	// slot starts only.
	Driven bool
	// Logger gets the one error of a recording that stops. Nil means
	// slog.Default().
	Logger *slog.Logger
}

// Validate reports a configuration NewWriter would reject.
func (c Config) Validate() error {
	switch {
	case c.Dir == "":
		return fmt.Errorf("%w: no directory", ErrConfig)
	case c.MaxBytes < 0 || c.FileBytes < 0 || c.Queue < 0:
		return fmt.Errorf("%w: negative size", ErrConfig)
	case c.MaxBytes > 0 && c.FileBytes > c.MaxBytes:
		return fmt.Errorf("%w: file size %d above the cap %d", ErrConfig, c.FileBytes, c.MaxBytes)
	case c.Bank.Genesis.BlockhashSeed == "":
		// Without it the bank drew its first blockhash at random, and a
		// replay could not rebuild the blockhashes the traffic was
		// signed with.
		return fmt.Errorf("%w: the bank's genesis has no blockhash seed: a replay could not rebuild its blockhashes", ErrConfig)
	case len(c.Bank.Genesis.Seed) > math.MaxUint16 || len(c.Bank.Genesis.BlockhashSeed) > math.MaxUint16:
		return fmt.Errorf("%w: genesis seed longer than %d bytes", ErrConfig, math.MaxUint16)
	}
	if err := c.Scheduler.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return c.Bank.Genesis.Validate()
}

func (c Config) withDefaults() Config {
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.FileBytes == 0 {
		c.FileBytes = max(c.MaxBytes/8, 1)
	}
	if c.Queue == 0 {
		c.Queue = DefaultQueue
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// header returns the header of file seq, with the clock read now.
func (c Config) header(seq uint64) Header {
	g := c.Bank.Genesis
	// Record the defaults the bank will use, so that a later change of
	// banking's defaults does not change what a replay builds.
	if g.Seed == "" {
		g.Seed = "tpu"
	}
	if g.Accounts == 0 {
		g.Accounts = 1000
	}
	if g.Lamports == 0 {
		g.Lamports = 1_000_000_000_000
	}
	if g.FaucetLamports == 0 {
		g.FaucetLamports = 1_000_000_000_000_000_000
	}
	if g.ValidatorStake == 0 {
		g.ValidatorStake = 1_000_000_000_000
	}
	return Header{Seq: seq, Wall: time.Now(), Mono: packet.Now(), Genesis: g,
		BlockCostLimit: c.Bank.BlockCostLimit, AccountCostLimit: c.Bank.AccountCostLimit, Scheduler: c.Scheduler.WithDefaults(), Driven: c.Driven}
}

// fileInfo is a closed or open file of the trace.
type fileInfo struct {
	path string
	size int64
}

// Writer writes a trace synchronously: the plain core of the Recorder. It
// belongs to one goroutine.
type Writer struct {
	cfg     Config
	f       *os.File
	bw      *bufio.Writer
	seq     uint64
	files   []fileInfo // oldest first; the last is open
	buf     []byte     // one record, reused
	written int64      // bytes written, all files
}

// NewWriter creates cfg.Dir if needed and opens the trace's first file.
func NewWriter(cfg Config) (*Writer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("bankingtrace: %w", err)
	}
	if names, err := traceFiles(cfg.Dir); err != nil {
		return nil, err
	} else if len(names) > 0 {
		return nil, fmt.Errorf("%w: %s holds %s (choose another directory or remove it)", ErrExists, cfg.Dir, names[0])
	}
	w := &Writer{cfg: cfg, buf: make([]byte, 0, 1<<16)}
	if err := w.open(); err != nil {
		return nil, err
	}
	return w, nil
}

// Written returns the bytes written so far, in every file (deleted ones
// included).
func (w *Writer) Written() int64 { return w.written }

// Batch writes a batch record; it borrows b.
func (w *Writer) Batch(b *packet.Batch, arrival int64) error {
	return w.record(appendBatch(w.frame(), b, arrival))
}

// Step writes a driver call other than OnBatch (Record.Step).
func (w *Writer) Step(step scheduler.EventKind, arg uint64, at int64) error {
	return w.record(appendStep(w.frame(), step, arg, at))
}

// Slot writes a slot start.
func (w *Writer) Slot(slot uint64, at int64) error {
	return w.record(appendSlot(w.frame(), slot, at))
}

// Gap writes that batches and slot starts were dropped here.
func (w *Writer) Gap(batches, slots uint64) error {
	return w.record(appendGap(w.frame(), batches, slots))
}

// Close flushes, syncs and closes the open file.
func (w *Writer) Close() error {
	if w.f == nil {
		return nil
	}
	err := w.bw.Flush()
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.f = nil
	if err != nil {
		return fmt.Errorf("bankingtrace: %s: %w", w.files[len(w.files)-1].path, err)
	}
	return nil
}

// frame returns the record buffer with room for the frame.
func (w *Writer) frame() []byte { return w.buf[:frameSize] }

// record fills in rec's frame and writes it, rotating first when the open
// file is full.
func (w *Writer) record(rec []byte) error {
	w.buf = rec[:0] // keep the grown buffer
	if w.f == nil {
		return fmt.Errorf("%w: writer closed", ErrStopped)
	}
	if w.files[len(w.files)-1].size >= w.cfg.FileBytes {
		if err := w.rotate(); err != nil {
			return err
		}
	}
	body := rec[frameSize:]
	binary.LittleEndian.PutUint32(rec, uint32(len(body)))
	binary.LittleEndian.PutUint32(rec[4:], crc32.Checksum(body, castagnoli))
	return w.write(rec)
}

func (w *Writer) write(b []byte) error {
	cur := &w.files[len(w.files)-1]
	if _, err := w.bw.Write(b); err != nil {
		return fmt.Errorf("bankingtrace: %s: %w", cur.path, err)
	}
	cur.size += int64(len(b))
	w.written += int64(len(b))
	return nil
}

// rotate closes the open file, deletes the oldest files while the trace
// and a new full file would exceed the cap, and opens the next file.
func (w *Writer) rotate() error {
	if err := w.Close(); err != nil {
		return err
	}
	var total int64
	for _, f := range w.files {
		total += f.size
	}
	for len(w.files) > 0 && total+w.cfg.FileBytes > w.cfg.MaxBytes {
		if err := os.Remove(w.files[0].path); err != nil {
			return fmt.Errorf("bankingtrace: rotate: %w", err)
		}
		total -= w.files[0].size
		w.files = w.files[1:]
	}
	return w.open()
}

// open opens the next file and writes its magic, version and header.
func (w *Writer) open() error {
	w.seq++
	path := filepath.Join(w.cfg.Dir, fileName(w.seq))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("bankingtrace: %w", err)
	}
	if w.bw == nil {
		w.bw = bufio.NewWriterSize(f, 1<<18)
	} else {
		w.bw.Reset(f)
	}
	w.f = f
	w.files = append(w.files, fileInfo{path: path})
	start := binary.LittleEndian.AppendUint32([]byte(magic), Version)
	if err := w.write(start); err != nil {
		return err
	}
	// Its own buffer: open runs in the middle of record, whose record is
	// in w.buf.
	rec := appendHeader(make([]byte, frameSize, 128), w.cfg.header(w.seq))
	body := rec[frameSize:]
	binary.LittleEndian.PutUint32(rec, uint32(len(body)))
	binary.LittleEndian.PutUint32(rec[4:], crc32.Checksum(body, castagnoli))
	return w.write(rec)
}

// traceFiles returns the names of the trace files in dir, oldest first.
func traceFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("bankingtrace: %w", err)
	}
	var out []string // ReadDir sorts by name, and names sort by number
	for _, e := range ents {
		if _, ok := parseName(e.Name()); ok && e.Type().IsRegular() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}
