package bankingtrace

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/tpugo/tpu/banking/bank"

	"github.com/tpugo/tpu/banking/loadgen"
	"github.com/tpugo/tpu/packet/packettest"
)

var benchBytes = flag.Int64("trace-bytes", 1<<30, "size of the trace BenchmarkScanPubkeys generates")

// benchDir is the generated trace, shared by the benchmarks of one run
// and removed by TestMain.
var benchDir string

func TestMain(m *testing.M) {
	flag.Parse()
	code := packettest.Run(m) // fails on a leaked batch (invariants build)
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// benchTrace returns a trace of at least -trace-bytes, generated on first
// use: batches of 64 signed transfers, a slot start every 8 batches. It
// skips the benchmark when the disk lacks room.
func benchTrace(b *testing.B) (string, int64) {
	b.Helper()
	size := func(dir string) int64 {
		var n int64
		names, _ := traceFiles(dir)
		for _, name := range names {
			if st, err := os.Stat(dir + "/" + name); err == nil {
				n += st.Size()
			}
		}
		return n
	}
	if benchDir != "" {
		return benchDir, size(benchDir)
	}
	dir, err := os.MkdirTemp("", "tpu-trace-bench-")
	if err != nil {
		b.Fatal(err)
	}
	done := false
	defer func() {
		if !done { // a failure or a skip: leave nothing behind
			os.RemoveAll(dir)
		}
	}()
	if free, ok := freeBytes(dir); ok && free < *benchBytes+(1<<30) {
		b.Skipf("the trace needs %d bytes and %d more spare; %s has %d free", *benchBytes, 1<<30, dir, free)
	}
	bankCfg := bank.Config{Genesis: bank.GenesisConfig{Seed: "bench", Accounts: 1024, BlockhashSeed: "bench"}}
	load, err := loadgen.Build(loadgen.Config{Seed: "bench", Accounts: 1024, Count: 4096, RandSeed: 1})
	if err != nil {
		b.Fatal(err)
	}
	w, err := NewWriter(Config{Dir: dir, MaxBytes: *benchBytes * 4, FileBytes: min(256<<20, *benchBytes), Bank: bankCfg})
	if err != nil {
		b.Fatal(err)
	}
	pool := newPool(b)
	for n := 0; w.Written() < *benchBytes; n++ {
		if n%8 == 0 {
			if err := w.Slot(uint64(n/8+1), int64(n)); err != nil {
				b.Fatal(err)
			}
		}
		batch := pool.Get()
		for i := 0; i < 64; i++ {
			batch.Next().Fill(load.Txs[(n*64+i)%len(load.Txs)])
		}
		err := w.Batch(batch, int64(n))
		batch.Release()
		if err != nil {
			if errors.Is(err, errNoSpace) {
				b.Skipf("disk full while writing the trace: %v", err)
			}
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	benchDir, done = dir, true
	return dir, size(dir)
}

// feePayer returns the first account key of a transaction's message (its
// fee payer), without a full parse: the signature count (a compact u16),
// the signatures, an optional version byte, the 3-byte header, the key
// count, then the keys.
func feePayer(tx []byte) ([]byte, bool) {
	n, off := shortU16(tx)
	off += 64 * n
	if off >= len(tx) {
		return nil, false
	}
	if tx[off]&0x80 != 0 {
		off++ // versioned message
	}
	off += 3
	if off >= len(tx) {
		return nil, false
	}
	_, k := shortU16(tx[off:])
	off += k
	if off+32 > len(tx) || k == 0 {
		return nil, false
	}
	return tx[off : off+32], true
}

// shortU16 decodes Solana's compact-u16: the value and its length (0 when
// malformed).
func shortU16(b []byte) (v, n int) {
	for i := 0; i < 3 && i < len(b); i++ {
		v |= int(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}

// BenchmarkScanPubkeys reads a trace of at least 1 GiB (-trace-bytes)
// and collects every transaction's fee payer, through mmap and through
// buffered reads of three sizes: the seed's scan_pubkeys question. The
// trace was just written, so it is read from the page cache when memory
// allows.
func BenchmarkScanPubkeys(b *testing.B) {
	dir, total := benchTrace(b)
	for _, m := range []struct {
		name string
		cfg  ReadConfig
	}{
		{"read=mmap", ReadConfig{Mmap: true}},
		{"read=bufio-4KiB", ReadConfig{BufSize: 4 << 10}},
		{"read=bufio-64KiB", ReadConfig{BufSize: 64 << 10}},
		{"read=bufio-1MiB", ReadConfig{BufSize: 1 << 20}},
	} {
		b.Run(m.name, func(b *testing.B) {
			b.SetBytes(total)
			b.ReportAllocs()
			var sink byte
			var payers int
			for b.Loop() {
				r, err := OpenConfig(dir, m.cfg)
				if err != nil {
					b.Fatal(err)
				}
				payers = 0
				for {
					rec, err := r.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					for i := range rec.Packets {
						if k, ok := feePayer(rec.Packets[i].Data); ok {
							sink ^= k[0] ^ k[31]
							payers++
						}
					}
				}
				r.Close()
			}
			if payers == 0 {
				b.Fatal("no fee payer found")
			}
			b.ReportMetric(float64(payers), "payers/op")
			_ = fmt.Sprint(sink)
		})
	}
}
