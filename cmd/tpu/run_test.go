package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tpugo/tpu/banking/bank"

	"github.com/tpugo/tpu/rpc"
	"github.com/tpugo/tpu/stages"
	"github.com/tpugo/tpu/stages/sigverify"
	"github.com/tpugo/tpu/trace"
)

// TestRunCommand runs the pipeline through the CLI on a free port with a
// small load, and checks the summary and the trace file.
func TestRunCommand(t *testing.T) {
	dir := t.TempDir()
	summaryPath := filepath.Join(dir, "summary.json")
	traceOut := filepath.Join(dir, "spans.jsonl")
	code, out, errOut := run(t, "", "run", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "127.0.0.1:0", "--ledger", filepath.Join(dir, "ledger"),
		"--duration", "1500ms", "--rate", "2000", "--accounts", "64", "--invalid-fraction", "0.2",
		"--trace-sample", "1", "--tracer-every", "500", "--trace-out", traceOut, "--summary-json", summaryPath)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "accounting ok: true") || !strings.Contains(errOut, "received") {
		t.Fatalf("summary or live lines missing:\n%s\n%s", out, errOut)
	}
	s := readSummary(t, summaryPath)
	if !s.AccountingOK || s.LiveBatches != 0 || s.Executed == 0 || s.TPS <= 0 {
		t.Fatalf("summary %+v", s)
	}
	// 3,000 transactions, fewer than a refresh window: one blockhash.
	if s.LoadBlockhashes != 1 || !strings.Contains(errOut, "over one blockhash in") {
		t.Errorf("load blockhashes %d, want 1, said:\n%s", s.LoadBlockhashes, errOut)
	}
	// --rate: open-loop, said at the start and in the summary, with the
	// latency from each transaction's scheduled send. Scheduled <= sent
	// <= received at the socket, transaction by transaction, so the
	// largest latency from the schedule is at least the largest from the
	// socket (both maxima are exact).
	if !strings.Contains(errOut, "load: open-loop, 2000 tx/s on a fixed schedule") || !strings.Contains(out, "latency scheduled send to executed: p50 ") {
		t.Errorf("open-loop not said:\n%s\n%s", errOut, out)
	}
	if s.Load != "open-loop" || s.OfferedTPS != 2000 || s.FromScheduled == nil || s.SenderBehind == nil ||
		s.FromScheduled.P50 <= 0 || s.FromScheduled.Max < s.Latency.Max || s.FromScheduled.Max < s.FromScheduled.P999 {
		t.Errorf("open-loop summary: load %q offered %v, from scheduled %+v (socket %+v), behind %+v", s.Load, s.OfferedTPS, s.FromScheduled, s.Latency, s.SenderBehind)
	}
	if s.CeilingBeforeTPS <= 0 || s.CeilingAfterTPS <= 0 || s.SigverifyCeilingTPS != (s.CeilingBeforeTPS+s.CeilingAfterTPS)/2 ||
		s.CeilingRatio != s.TPS/s.SigverifyCeilingTPS {
		t.Errorf("sigverify ceiling: mean %.0f of %.0f before and %.0f after, ratio %.3f at %.0f tx/s",
			s.SigverifyCeilingTPS, s.CeilingBeforeTPS, s.CeilingAfterTPS, s.CeilingRatio, s.TPS)
	}
	for _, k := range []string{"no_credits", "evicted"} {
		if _, ok := s.Outcomes[k]; !ok {
			t.Errorf("outcome %s missing from the JSON (zero counts are included)", k)
		}
	}
	// Each kind of invalid transaction the load mixed in (a fifth of 3000,
	// over five kinds) ends in its own outcome.
	for _, k := range []string{"bad_signature", "parse", "blockhash_not_found", "fee_payer_cannot_pay"} {
		if s.Outcomes[k] == 0 {
			t.Errorf("no %s outcome, with a fifth of the load invalid: %v", k, s.Outcomes)
		}
	}
	if s.Outcomes["duplicate"]+s.Outcomes["already_processed"] == 0 {
		t.Errorf("no duplicate discarded, with a fifth of the load invalid: %v", s.Outcomes)
	}
	// The ledger, read back, holds every transaction the summary counts as
	// executed, and no other.
	bank, err := bank.Open(bank.Config{Dir: filepath.Join(dir, "ledger"), Genesis: bank.GenesisConfig{Seed: "tpu", Accounts: 64}})
	if err != nil {
		t.Fatal(err)
	}
	committed, _, err := bank.Ledger().TransactionCount()
	bank.Close()
	if err != nil || committed != s.Executed {
		t.Fatalf("the ledger holds %d transactions (%v), the summary executed %d", committed, err, s.Executed)
	}
	for _, hop := range stages.HopNames {
		if _, ok := s.Hops[hop]; !ok {
			t.Errorf("hop %s missing", hop)
		}
	}
	if strings.Contains(errOut, fileDroppedMsg) { // TestWarnFileDropped: it would say so
		t.Fatalf("spans dropped from the trace file:\n%s", errOut)
	}
	code, out, _ = run(t, "", "trace", "analyze", traceOut)
	if code != 0 || !strings.Contains(out, "their parent, 0 did not;") || !strings.Contains(out, "their span, 0 did not") ||
		!strings.Contains(out, "tracer.committed") || !strings.Contains(out, "p99.9") {
		t.Fatalf("trace analyze: %d\n%s", code, out)
	}

	// The ledger is resumed by a second run, and --reset starts afresh.
	code, out, errOut = run(t, "", "run", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--ledger", filepath.Join(dir, "ledger"),
		"--no-gen", "--duration", "300ms", "--accounts", "64")
	if code != 0 || !strings.Contains(errOut, "slot=") || strings.Contains(errOut, "slot=1 ") {
		t.Fatalf("resume: %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = run(t, "", "run", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--ledger", filepath.Join(dir, "ledger"),
		"--no-gen", "--duration", "300ms", "--accounts", "64", "--reset")
	if code != 0 || !strings.Contains(errOut, "slot=1 ") {
		t.Fatalf("reset: %d\n%s", code, errOut)
	}
}

func TestRunFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--contention", "some"},
		{"run", "--block-production-method", "fifo"},
		{"run", "--invalid-fraction", "2"},
		{"run", "--handoff", "share"},
		{"run", "--sync", "maybe"},
		{"run", "--trace-sample", "NaN"},
		{"run", "--metrics-addr", "9090"},
		{"run", "extra"},
	} {
		if code, _, _ := run(t, "", args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	// The latency knobs: negative, 0 (which the configs would read as
	// their default) or out of range; the error names the flag.
	for _, args := range [][]string{
		{"--fetch-coalesce", "0s"},
		{"--fetch-coalesce", "-1ms"},
		{"--fetch-credits", "0"},
		{"--fetch-credits", "-1"},
		{"--banking-credits", "0"},
		{"--banking-credits", "-1"},
		{"--sigverify-max-pending", "0"},
		{"--sigverify-max-pending", "-5"},
		{"--dedup-bits", "0"},
		{"--dedup-bits", "63"},
		{"--dedup-bits", "4294967297"},
		{"--dedup-bits", "-1"},
		{"--dedup-max-age", "0s"},
		{"--dedup-max-age", "-2s"},
		{"--slot-time", "0s"},
		{"--slot-time", "-400ms"},
		{"--slot-time", "100us"}, // below stages.MinSlotTime
		{"--tpu-sockets", "0"},
		{"--tpu-sockets", "-1"},
		{"--buffer", "0"},
		{"--buffer", "-1"},
		{"--num-workers", "0"},
		{"--num-workers", "-2"},
		{"--batch-size", "0"},
		{"--batch-size", "-1"},
		{"--accounts", "0"},
		{"--accounts", "-1"},
		{"--ledger", ""},
		{"--gomaxprocs", "-1"},
		{"--gomaxprocs", "100000"},
		{"--rate", "0"}, // closed-loop is the flag left out
		{"--rate", "-5"},
		{"--rate", "NaN"},
		{"--rpc-max-conns", "0"},
		{"--rpc-history-slots", "0"},
		{"--rpc-max-block-transactions", "0"},
		{"--rpc-airdrop-window", "0s"},
		{"--rpc-airdrop-per-recipient", "0"},
		{"--rpc-airdrop-lamports", "0"},
		{"--rpc-airdrop-requests", "-1"},
		{"--pool-warm", "-1"},
		{"--banking-peer", "-1"},
		{"--sigverify-key-cache", "-1"},
		{"--sigverify-key-cache", "1000000000000"},
		{"--sigverify-key-cache", "4194305"},
	} {
		code, _, errOut := run(t, "", append([]string{"run"}, args...)...)
		name := strings.TrimLeft(args[0], "-") // the flag package's own errors write one dash
		if code != 2 || !strings.Contains(errOut, name) {
			t.Errorf("%v: exit %d, want 2 and an error naming %s:\n%s", args, code, name, errOut)
		}
	}
}

// TestRunBankingPeer: --banking-peer ran the bench's 40 iterations of 32
// batches of 128 after the load and 20 before it (6 and 3 under -race),
// each ratio is the run's banking figure over the bench's, with its
// sampling error, and the summary prints them. Each figure must rest on
// profile samples, which a short run gets by chance: with 60,000
// transactions closed-loop the run gave banking 14-20 samples in eight
// runs, the bench 32-46, the cold bench 14-21 (10 cold iterations gave
// it 9-11, a zero once in some 20,000 runs); TestRunCommand's 3,000
// gave the run none in one CI run of several (2026-12-07), and a figure
// of no samples has no ratio.
func TestRunBankingPeer(t *testing.T) {
	dir := t.TempDir()
	summaryPath := filepath.Join(dir, "summary.json")
	// Under -race every goroutine runs several times slower, so a
	// quarter of the load and 6 iterations of the bench still give
	// banking more profile samples than the plain build's (73 and 92,
	// one run), in 18 s of the race step's cmd/tpu where 60,000 and 20
	// took 28.
	count, peer := 60000, 40
	if raceEnabled {
		count, peer = 15000, 6
	}
	code, out, errOut := run(t, "", "run", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--ws-addr", "", "--ledger", filepath.Join(dir, "ledger"),
		"--count", strconv.Itoa(count), "--duration", "5s", "--accounts", "64", "--summary-json", summaryPath, "--banking-peer", strconv.Itoa(peer))
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	s := readSummary(t, summaryPath)
	if !s.AccountingOK || s.Executed == 0 {
		t.Fatalf("summary %+v", s)
	}
	if p := s.BankingPeer; p != nil && p.Cold != nil {
		t.Logf("executed %d; banking: %d profile samples in the run, %d in the bench, %d in the cold bench", s.Executed, p.RunSamples, p.Samples, p.Cold.Samples)
	}
	// The key cache's figure under load (closed-loop, full batches, the
	// verifier behind): every signature in the lanes counted once, so no
	// more than were received, and most of them (the lanes take all but a
	// last few of a call); the 64 payers, warmed by the ceiling, found.
	if def, _ := sigverify.NewBackend(""); def != sigverify.WithKeyCache(def, 1) {
		k := s.KeyCache
		if k == nil {
			t.Fatal("no key cache figure in the summary")
		}
		if n := k.Hits + k.Misses; n > s.Received || 2*n < s.Received || k.Misses > 64 {
			t.Errorf("key cache %+v under a closed-loop load of %d received from 64 payers", *k, s.Received)
		}
	}
	if p, sc := s.BankingPeer, s.StageCPU; p == nil || sc == nil || p.Iterations != peer || p.Transactions != uint64(peer*32*128) ||
		p.Samples <= 0 || p.USPerTx <= 0 || p.RunUSPerTx != sc.Stages["banking"].USPerTx || p.RunSamples != sc.Stages["banking"].Samples ||
		p.RunSamples <= 0 || p.Ratio != p.RunUSPerTx/p.USPerTx ||
		p.RatioSamplingErr != math.Sqrt(1/float64(p.RunSamples)+1/float64(p.Samples)) {
		t.Errorf("banking peer %+v, the run's banking %+v", p, sc)
	} else if want := fmt.Sprintf("here, %.2f in the bench (%d transactions, %d profile samples): %.2fx", p.USPerTx, p.Transactions, p.Samples, p.Ratio); !strings.Contains(out, want) {
		t.Errorf("the summary does not print the peer (%q):\n%s", want, out)
	} else if c := p.Cold; c == nil || c.Iterations != peer/2 || c.Transactions != uint64(peer/2*32*128) || c.Samples <= 0 || p.ColdRatio != p.RunUSPerTx/c.USPerTx {
		t.Errorf("banking peer before the load %+v, ratio %v", c, p.ColdRatio)
	} else if want := fmt.Sprintf("(%d iterations, %d profile samples): %.2f in the bench, %.2fx", c.Iterations, c.Samples, c.USPerTx, p.ColdRatio); !strings.Contains(out, want) {
		t.Errorf("the summary does not print the peer before the load (%q):\n%s", want, out)
	}
}

// TestRunLanePath: --sigverify-backend lanes/portable runs the lanes
// backend on the portable path, and the start line and the summary say
// so (the path a run's figures came from); a path this CPU does not run
// exits 2 naming the paths it does.
func TestRunLanePath(t *testing.T) {
	dir := t.TempDir()
	summaryPath := filepath.Join(dir, "summary.json")
	code, out, errOut := run(t, "", "run", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--ws-addr", "",
		"--ledger", filepath.Join(dir, "ledger"), "--duration", "300ms", "--rate", "1000", "--accounts", "64",
		"--sigverify-backend", "lanes/portable", "--summary-json", summaryPath)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "sigverify_backend=lanes sigverify_path=portable") {
		t.Fatalf("the start line does not name the portable path:\n%s", errOut)
	}
	s := readSummary(t, summaryPath)
	if s.SigverifyPath != "portable" || !s.AccountingOK || s.Executed == 0 {
		t.Fatalf("summary: path %q, accounting %v, executed %d", s.SigverifyPath, s.AccountingOK, s.Executed)
	}
	// The ceiling is measured on the path the run uses: a core's share of
	// it is nearer lanes/portable's rate than the default's, measured here
	// (the portable path is many times slower wherever the default is not
	// portable itself).
	if def, _ := sigverify.NewBackend(""); sigverify.PathOf(def) != "portable" {
		var cores int
		at := strings.Index(errOut, "one core's verify rate x ")
		if at < 0 {
			t.Fatalf("no ceiling line:\n%s", errOut)
		}
		if _, err := fmt.Sscanf(errOut[at+len("one core's verify rate x "):], "%d", &cores); err != nil || cores < 1 {
			t.Fatalf("the ceiling line's cores: %v", err)
		}
		raw, err := base64.StdEncoding.DecodeString(sampleTx)
		if err != nil {
			t.Fatal(err)
		}
		txs := make([][]byte, 64)
		for i := range txs {
			txs[i] = raw
		}
		portable, _ := sigverify.NewBackend("lanes/portable")
		slow := sigverify.Ceiling(portable, txs, 1, 300*time.Millisecond)
		fast := sigverify.Ceiling(def, txs, 1, 300*time.Millisecond)
		if perCore := s.SigverifyCeilingTPS / float64(cores); perCore <= 0 || perCore > math.Sqrt(slow*fast) {
			t.Fatalf("the run's ceiling, %.0f tx/s a core, is not lanes/portable's (%.0f here) but nearer the default's (%.0f)", perCore, slow, fast)
		}
	}
	code, _, errOut = run(t, "", "run", "--ledger", filepath.Join(dir, "ledger2"), "--sigverify-backend", "lanes/sse2")
	if code != 2 || !strings.Contains(errOut, `"lanes/sse2"`) || !strings.Contains(errOut, `"portable"`) {
		t.Fatalf("lanes/sse2: exit %d, want 2 and the paths this CPU runs:\n%s", code, errOut)
	}
}

// TestRunKeyCache: a run's summary gives its key cache's counts over the
// load alone: every signature checked in the lanes counted once (hits and
// misses together no more than were received, where the ceiling's checks
// before and after the load would add thousands), the load's 32 payers
// found far more often than decompressed (the ceiling before the load
// has seen them all); the summary line says the cache was warmed so;
// with --sigverify-key-cache 0
// there is no cache and no figure. The lanes on the portable path where
// the default backend is not lanes.
func TestRunKeyCache(t *testing.T) {
	backend := sigverify.DefaultBackend
	if backend != "lanes" {
		backend = "lanes/portable"
	}
	dir := t.TempDir()
	for _, size := range []string{"1000", "0"} {
		summaryPath := filepath.Join(dir, "summary"+size+".json")
		code, out, errOut := run(t, "", "run", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--ws-addr", "",
			"--ledger", filepath.Join(dir, "ledger"+size), "--duration", "500ms", "--rate", "6000", "--accounts", "32",
			"--sigverify-backend", backend, "--sigverify-key-cache", size, "--summary-json", summaryPath)
		if code != 0 {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
		s := readSummary(t, summaryPath)
		k := s.KeyCache
		if size == "0" {
			if k != nil || strings.Contains(out, "key cache") {
				t.Errorf("--sigverify-key-cache 0: a key cache in the summary: %+v", k)
			}
			continue
		}
		if k == nil {
			t.Fatalf("no key cache in the summary:\n%s", out)
		}
		t.Logf("received %d: key cache %+v", s.Received, *k)
		if k.Size != 1024 || k.Hits+k.Misses == 0 || k.Hits+k.Misses > s.Received || k.Hits < 4*k.Misses {
			t.Errorf("key cache %+v over a load of %d received from 32 payers", *k, s.Received)
		}
		// Where the path has combs (not avx2x4: sigverify's avx2Path),
		// the 32 payers have theirs after the ceiling's first round,
		// and most checks go by them.
		b, _ := sigverify.NewBackend(backend)
		combs := sigverify.PathOf(b) != "avx2x4"
		if combs && (k.Tables != 32 || k.Combs < k.Hits/2) || !combs && k.Tables+int(k.Combs) != 0 || k.Combs > k.Hits {
			t.Errorf("key cache %+v: want 32 combs and at least half the hits by them where the path has combs, else none", *k)
		}
		if want := fmt.Sprintf("sigverify key cache of 1024 keys: %d of %d signatures' keys seen before (%.1f%%), %d decompressed, %d checked by their key's comb (%d keys have one) (warmed by the ceiling before the load)",
			k.Hits, k.Hits+k.Misses, 100*float64(k.Hits)/float64(k.Hits+k.Misses), k.Misses, k.Combs, k.Tables); !strings.Contains(out, want) {
			t.Errorf("the summary does not say %q:\n%s", want, out)
		}
	}
}

// TestRunKnobsReachConfig parses tpu run's latency knobs and checks that
// each lands in its config field, and that left alone they give the
// configs' own defaults.
func TestRunKnobsReachConfig(t *testing.T) {
	parse := func(args ...string) stages.Config {
		t.Helper()
		fs := flag.NewFlagSet("tpu run", flag.ContinueOnError)
		f := defineRunFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		cfg, err := graphConfig(*f)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return cfg
	}
	type knobs struct {
		Coalesce, SlotTime, DedupMaxAge        time.Duration
		FetchBudget, BankingBudget, MaxPending int
		Capacity                               int
		DedupBits                              uint64
		DedupFalsePositiveRate                 float64
	}
	of := func(c stages.Config) knobs {
		return knobs{
			Coalesce: c.Fetch.Coalesce, SlotTime: c.Banking.SlotTime, DedupMaxAge: c.Sigverify.Dedup.MaxAge,
			FetchBudget: c.FetchBudget, BankingBudget: c.BankingBudget, MaxPending: c.Sigverify.MaxPending,
			Capacity: c.Banking.Scheduler.Capacity, DedupBits: c.Sigverify.Dedup.Bits,
			DedupFalsePositiveRate: c.Sigverify.Dedup.FalsePositiveRate,
		}
	}
	got := of(parse("--fetch-coalesce", "3ms", "--fetch-credits", "7", "--banking-credits", "9",
		"--sigverify-max-pending", "256", "--dedup-bits", "1048576", "--dedup-max-age", "500ms",
		"--slot-time", "50ms", "--buffer", "2000"))
	want := knobs{Coalesce: 3 * time.Millisecond, SlotTime: 50 * time.Millisecond, DedupMaxAge: 500 * time.Millisecond,
		FetchBudget: 7, BankingBudget: 9, MaxPending: 256, Capacity: 2000, DedupBits: 1 << 20}
	if got != want {
		t.Errorf("flags given:\n got  %+v\n want %+v", got, want)
	}
	got = of(parse())
	want = knobs{Coalesce: stages.DefaultCoalesce, SlotTime: stages.DefaultSlotTime, DedupMaxAge: sigverify.DefaultDedupMaxAge,
		FetchBudget: stages.DefaultBudget, BankingBudget: stages.DefaultBudget, MaxPending: stages.DefaultMaxPending,
		Capacity: 100_000, DedupBits: sigverify.DefaultDedupBits}
	if got != want {
		t.Errorf("no flags:\n got  %+v\n want %+v", got, want)
	}
}

// A load that outlives its blockhash is warned of after signing, with
// what is left of the blockhash's life; one that does not, is not.
func TestExpiryWarning(t *testing.T) {
	const slot = 400 * time.Millisecond // life: 150 slots, 60 s
	for _, c := range []struct {
		signing, sending time.Duration
		want             string
	}{
		{2 * time.Second, 10 * time.Second, ""},
		{2 * time.Second, 58 * time.Second, ""},
		{2 * time.Second, 0, ""}, // sent until it is sent: no end to compare
		{2 * time.Second, 59 * time.Second, "lives about 1m0s (150 slots of --slot-time 400ms), 58s of it left after signing"},
		{61 * time.Second, 10 * time.Second, "signing took longer than the load's blockhash lives (about 1m0s"},
	} {
		got := expiryWarning(c.signing, c.sending, slot, "--slot-time "+slot.String(), "use a smaller --count or a longer --slot-time")
		if c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("signing %v, sending %v: %q, want %q", c.signing, c.sending, got, c.want)
		}
	}
	// tpu run prints it: 5 ms slots give the blockhash 750 ms.
	code, _, errOut := run(t, "", "run", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--ledger", filepath.Join(t.TempDir(), "ledger"),
		"--duration", "1s", "--rate", "100", "--slot-time", "5ms", "--accounts", "16")
	if code != 0 || !strings.Contains(errOut, "warning: the load's blockhash lives about 750ms") {
		t.Fatalf("exit %d, no expiry warning:\n%s", code, errOut)
	}
}

// blockedWriter never returns from Write until its channel is closed.
type blockedWriter struct{ open chan struct{} }

func (w blockedWriter) Write(b []byte) (int, error) { <-w.open; return len(b), nil }

// A trace file whose queue overflowed while its writer was behind is
// warned of, with the count; one that lost nothing is not.
func TestWarnFileDropped(t *testing.T) {
	for _, c := range []struct {
		queue int
		warn  bool
	}{{16, true}, {0, false}} {
		w := blockedWriter{make(chan struct{})}
		prov, err := trace.Setup(context.Background(), trace.Config{SampleRatio: 1, TraceWriter: w, FileQueue: c.queue})
		if err != nil {
			t.Fatal(err)
		}
		for range 1000 {
			prov.Hop("fetch").Start(trace.SpanContext{}, 0, false).End()
		}
		close(w.open)
		if err := prov.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		var logged bytes.Buffer
		warnFileDropped(slog.New(slog.NewTextHandler(&logged, nil)), prov, "spans.jsonl")
		want := fmt.Sprintf("dropped=%d file=spans.jsonl", prov.FileDropped())
		if got := logged.String(); strings.Contains(got, fileDroppedMsg) != c.warn || c.warn && (prov.FileDropped() == 0 || !strings.Contains(got, want)) {
			t.Errorf("queue %d, %d dropped: logged %q, want a warning %v (%s)", c.queue, prov.FileDropped(), got, c.warn, want)
		}
	}
}

// TestRPCMaxBlockTransactionsFlag: --rpc-max-block-transactions reaches
// rpc.Config, and left out gives rpc's default.
func TestRPCMaxBlockTransactionsFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int
	}{
		{nil, rpc.DefaultMaxBlockTransactions},
		{[]string{"--rpc-max-block-transactions", "7"}, 7},
	} {
		fs := flag.NewFlagSet("tpu run", flag.ContinueOnError)
		f := defineRunFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		if got := rpcConfig(*f).MaxBlockTransactions; got != c.want {
			t.Errorf("%v: MaxBlockTransactions %d, want %d", c.args, got, c.want)
		}
	}
}
