package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/runtime"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking/loadgen"
	"github.com/tpugo/tpu/stages"
	"github.com/tpugo/tpu/trace"
	"github.com/tpugo/tpu/txview"
)

func init() {
	register(command{
		name:    "gen",
		summary: "send load to a tpu run --no-gen elsewhere, and check what it confirms",
		run:     runGen,
	})
}

const genHelp = `Usage: tpu gen [flags]

A load generator in its own process, for a tpu run --no-gen on this machine
(or any node with the same RPC subset). It signs transfers between --accounts
accounts (derived from the genesis --seed, or, with --airdrop, fresh keys
funded by requestAirdrop), in windows of at most 250 ms of the schedule,
each over a blockhash fetched a window before it is due (so a long run
never outlives its blockhash), sends them at --rate for --duration, over
QUIC by default as real senders do (one stream per transaction, to the
leader's tpuQuic found through --rpc's getSlotLeader and getClusterNodes,
or --tpu-quic), or with --send udp over UDP to --tpu with sendmmsg
(--batch-size datagrams per call), and asks --rpc
for their confirmations. The load is open-loop: transaction i is sent at
start + i/rate whatever the pipeline does, never skipped when the sender
falls behind; the summary says how far behind it fell, and the latency
from each transaction's scheduled send to the poll that saw it confirmed
(an upper bound, the polls being a second apart). It prints sent and confirmed transactions per
second each second and a summary, then checks through RPC that every
account's balance moved by exactly the amounts and fees of its confirmed
transactions. Exit status 1 if a balance is off.

Flags:`

type genFlags struct {
	rpcURL, tpuAddr, seed string
	send, tpuQUIC         string
	quicConns, quicIDs    int
	accounts, batchSize   int
	rate, invalid, v0     float64
	duration, settle      time.Duration
	airdrop               bool
	contention            loadgen.Contention
}

func runGen(env *cliEnv, args []string) int {
	fs := env.flagSet("tpu gen", genHelp)
	var f genFlags
	fs.StringVar(&f.rpcURL, "rpc", "http://127.0.0.1:8899", "JSON-RPC URL (blockhash, balances, confirmations)")
	fs.StringVar(&f.tpuAddr, "tpu", "127.0.0.1:8003", "UDP address of the pipeline's fetch stage (--send udp)")
	fs.StringVar(&f.send, "send", sendQUIC, "quic (one stream per transaction, as real senders send) or udp (datagrams, sendmmsg)")
	fs.StringVar(&f.tpuQUIC, "tpu-quic", "", "QUIC TPU address (--send quic; empty: the leader's tpuQuic, found through --rpc's getSlotLeader and getClusterNodes as real clients find it)")
	fs.IntVar(&f.quicConns, "quic-conns", 4, "QUIC connections (--send quic)")
	fs.IntVar(&f.quicIDs, "quic-identities", 4, "identities the QUIC connections present, round-robin: the genesis validators of --seed, first to last (tpu run's ledger stakes the first --genesis-validators of them)")
	fs.IntVar(&f.accounts, "accounts", 100, "accounts that send and receive")
	fs.StringVar(&f.seed, "seed", "tpu", "genesis seed the accounts derive from")
	fs.BoolVar(&f.airdrop, "airdrop", false, "use fresh keys funded by requestAirdrop instead of genesis accounts")
	fs.Float64Var(&f.rate, "rate", 5000, "transactions per second")
	fs.DurationVar(&f.duration, "duration", 10*time.Second, "how long to send")
	fs.IntVar(&f.batchSize, "batch-size", 64, "transactions per sendmmsg call (1 against 100: the batching experiment)")
	fs.TextVar(&f.contention, "contention", loadgen.ContentionNone, "none, same-batch-only or full")
	fs.Float64Var(&f.invalid, "invalid-fraction", 0, "share of invalid transactions (never confirmed)")
	fs.Float64Var(&f.v0, "v0-fraction", 0, "share of v0 transactions that load their recipient through the ledger's genesis lookup table (not with --airdrop)")
	fs.DurationVar(&f.settle, "settle", 15*time.Second, "how long to wait for confirmations after the last send (if some are still missing, gen then waits for the load's blockhash to expire, up to 3 minutes, before it checks balances)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 || !(f.rate > 0) || f.duration <= 0 || f.accounts < 2 || f.batchSize < 1 {
		fmt.Fprintln(env.stderr, "tpu gen: want no arguments, --rate and --duration above 0, 2 or more --accounts, --batch-size 1 or more")
		return 2
	}
	if (f.send != sendQUIC && f.send != sendUDP) || f.quicConns < 1 || f.quicIDs < 1 {
		fmt.Fprintln(env.stderr, "tpu gen: want --send quic or udp, --quic-conns and --quic-identities 1 or more")
		return 2
	}
	if !(f.v0 >= 0 && f.v0 <= 1) || (f.v0 > 0 && f.airdrop) {
		fmt.Fprintln(env.stderr, "tpu gen: want --v0-fraction from 0 to 1, and not with --airdrop (the table holds genesis accounts)")
		return 2
	}
	code, err := gen(env, f)
	if err != nil {
		fmt.Fprintf(env.stderr, "tpu gen: %v\n", err)
	}
	return code
}

func gen(env *cliEnv, f genFlags) (int, error) {
	target, err := netip.ParseAddrPort(f.tpuAddr)
	if err != nil {
		return 2, fmt.Errorf("--tpu: %w", err)
	}
	ctx := context.Background()
	rpc := newRPCClient(f.rpcURL)
	var quicTarget netip.AddrPort
	if f.send == sendQUIC {
		if f.tpuQUIC != "" {
			if quicTarget, err = netip.ParseAddrPort(f.tpuQUIC); err != nil {
				return 2, fmt.Errorf("--tpu-quic: %w", err)
			}
		} else if quicTarget, err = rpc.leaderQUIC(ctx); err != nil {
			return 1, fmt.Errorf("finding the leader's QUIC TPU (or give --tpu-quic): %w", err)
		}
		fmt.Fprintf(env.stderr, "sending over QUIC to %s: %d connections, %d identities\n", quicTarget, f.quicConns, f.quicIDs)
	}
	keys, err := genKeys(ctx, env, rpc, f)
	if err != nil {
		return 1, err
	}
	before := make([]uint64, len(keys))
	for i, k := range keys {
		if before[i], err = rpc.balance(ctx, txview.PublicKey(k)); err != nil {
			return 1, err
		}
	}
	slot0, slotErr := rpc.slot(ctx) // for the slot time, over the signing
	t0 := time.Now()
	bh, err := rpc.latestBlockhash(ctx)
	if err != nil {
		return 1, err
	}
	n := int(f.rate * f.duration.Seconds())
	// The first window is signed now, the rest as the load is sent, each
	// over a fresh blockhash (genwindows.go).
	first := min(n, int(f.rate*windowFor(stages.DefaultSlotTime).Seconds())+1)
	fmt.Fprintf(env.stderr, "signing %d transactions over %d accounts, the first %d now, the rest in windows as they are sent...\n", n, len(keys), first)
	lcfg := loadgen.Config{Keys: keys, Blockhash: bh, Count: n, Contention: f.contention, SignFirst: first,
		InvalidFraction: f.invalid, BatchSize: f.batchSize, RandSeed: uint64(time.Now().UnixNano())}
	if !f.airdrop {
		// The same genesis keys, named by seed, so that v0 transfers can
		// use the genesis lookup table.
		lcfg.Keys, lcfg.Seed, lcfg.Accounts, lcfg.V0Fraction = nil, f.seed, f.accounts, f.v0
	}
	load, err := loadgen.Build(lcfg)
	if err != nil {
		return 1, err
	}
	signing := time.Since(t0)
	slots := uint64(0)
	if slot1, err := rpc.slot(ctx); err == nil && slotErr == nil && slot1 > slot0 {
		slots = slot1 - slot0
	}
	slotTime, slotDesc := genSlotTime(slots, time.Since(t0))
	// A window's blockhash is fetched a window before it is due and
	// signs it whole: it must live two windows.
	win := windowFor(slotTime)
	if w := expiryWarning(signing, 2*win, slotTime, slotDesc, fmt.Sprintf("gen signs in windows of %v at least, and the node's slots are too fast for it", minWindow)); w != "" {
		fmt.Fprintln(env.stderr, w)
	}
	// The valid transactions are the ones to confirm; their signatures
	// are known as their windows are signed (sigsOf).
	var valid []int
	for i, k := range load.Kinds {
		if k == loadgen.Valid {
			valid = append(valid, i)
		}
	}
	sigs := make([][64]byte, len(valid))
	w := newWindows(load, first, bh)
	known := 0 // valid[:known] have their signatures in sigs
	sigsOf := func() {
		for ready := w.ready(); known < len(valid) && valid[known] < ready; known++ {
			sig, _ := txview.FirstSignature(w.txs[valid[known]]) // a valid one: it has one
			sigs[known] = *sig
		}
	}
	sigsOf()

	// Confirmations are polled while sending, for the live lines.
	var sentCount atomicInt
	c := &confirmations{sigs: sigs, confirmed: make([]*sigStatus, len(sigs)),
		query: func(sigs [][64]byte) ([]*sigStatus, error) { return rpc.statuses(ctx, sigs, false) }}
	start := time.Now()
	sched := loadgen.Schedule{Start: start, Rate: f.rate}
	var confirmLatency trace.Histogram // scheduled send to the live poll that saw it confirmed
	poll := func() error {
		now := time.Now()
		c.seen = func(j int) { confirmLatency.Record(now.Sub(sched.At(valid[j]))) }
		defer func() { c.seen = nil }()
		upTo := countSent(valid, sentCount.Load()) // before sigsOf: what is sent is signed
		sigsOf()
		return c.poll(upTo, pollWindow)
	}
	done := make(chan loadgen.SendResult, 1)
	fmt.Fprintln(env.stderr, loadLine(loadOpen, f.rate))
	w.sched = sched
	defer w.close()
	signed := make(chan error, 1)
	go func() {
		err := w.sign(ctx, rpc, slot0, t0, slotTime, env.stderr)
		if err != nil {
			w.close() // the sender stops at the first transaction not signed
		}
		signed <- err
	}()
	go func() {
		sc := loadgen.SendConfig{Target: target, Rate: f.rate, Start: start, Duration: f.duration, BatchSize: f.batchSize,
			Progress: func(sent int) { sentCount.Store(sent) }, Tx: w.tx}
		var res loadgen.SendResult
		var err error
		if f.send == sendQUIC {
			var failed int
			res, failed, err = sendOverQUIC(load, sc, quicSend{Target: quicTarget, Conns: f.quicConns, Keys: quicIdentities(f.seed, f.quicIDs)})
			if failed > 0 {
				fmt.Fprintf(env.stderr, "tpu gen: %d QUIC sends failed (the server closed the connection or refused the stream)\n", failed)
			}
		} else {
			res, err = load.Send(sc)
		}
		if err != nil {
			fmt.Fprintf(env.stderr, "tpu gen: send: %v\n", err)
		}
		sentCount.Store(res.Sent)
		done <- res
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var res loadgen.SendResult
	prevSent, prevConfirmed := 0, 0
	sending := true
	var settleBy time.Time
	for {
		select {
		case res = <-done:
			sending = false
			settleBy = time.Now().Add(f.settle)
			w.close()
			if err := <-signed; err != nil {
				return 1, err
			}
			continue
		case <-tick.C:
		}
		if err := poll(); err != nil {
			return 1, err
		}
		s := sentCount.Load()
		fmt.Fprintf(env.stderr, "%5.1fs sent %d (%d/s) confirmed %d (%d/s)\n", time.Since(start).Seconds(), s, s-prevSent, c.count, c.count-prevConfirmed)
		prevSent, prevConfirmed = s, c.count
		if !sending && (c.count == countSent(valid, res.Sent) || time.Now().After(settleBy)) {
			break
		}
	}
	elapsed := time.Since(start)
	sigsOf()
	expired, err := finalPoll(ctx, rpc, c, countSent(valid, res.Sent), w.blockhash(), time.Second, expiryWait, env.stderr)
	if err != nil {
		return 1, err
	}
	confirmed, confirmedCount := c.confirmed, c.count

	// Balances: each confirmed transfer moved its amount; each confirmed
	// transaction charged its fee.
	want := map[[32]byte]int64{}
	failed := 0
	for j, st := range confirmed {
		if st == nil {
			continue
		}
		tx := w.txs[valid[j]] // as sent
		v, err := txview.Parse(tx)
		if err != nil {
			return 1, err
		}
		cb, _ := v.ComputeBudget()
		it := v.Instructions()
		in, _ := it.Next()
		from, to := load.AccountKey(v, int(in.Accounts[0])), load.AccountKey(v, int(in.Accounts[1]))
		want[from] -= int64(runtime.FeeOf(v, cb).Total())
		if string(st.Err) == "null" || len(st.Err) == 0 {
			want[from] -= int64(load.Amount(valid[j]))
			want[to] += int64(load.Amount(valid[j]))
		} else {
			failed++
		}
	}
	mismatches := 0
	for i, k := range keys {
		pub := txview.PublicKey(k)
		after, err := rpc.balance(ctx, pub)
		if err != nil {
			return 1, err
		}
		if got := int64(after) - int64(before[i]); got != want[pub] {
			mismatches++
			if mismatches <= 5 {
				fmt.Fprintf(env.stderr, "account %s moved %d lamports, its confirmed transactions account for %d\n", base58.Encode(pub[:]), got, want[pub])
			}
		}
	}
	sentValid := countSent(valid, res.Sent)
	fmt.Fprintf(env.stdout, "\n== tpu gen summary ==\nsent %d transactions (%d meant to be valid) in %.1fs: %.0f/s\n", res.Sent, sentValid, res.Elapsed.Seconds(), float64(res.Sent)/res.Elapsed.Seconds())
	fmt.Fprintf(env.stdout, "confirmed %d of %d valid (%d failed on chain) in %.1fs: %.0f/s\n", confirmedCount, sentValid, failed, elapsed.Seconds(), float64(confirmedCount)/elapsed.Seconds())
	fmt.Fprintf(env.stdout, "expired %d of %d valid: unconfirmed once the load's blockhash was no longer valid, so they can never land (blockhash_not_found, or lost before the bank)\n", expired, sentValid)
	fmt.Fprintf(env.stdout, "signed in %d windows, each over a blockhash fetched a window before it was due\n", 1+w.refreshed.Load())
	fmt.Fprintf(env.stdout, "%s\nsender behind schedule by %.0f us at the end (at most %.0f us)\n", loadLine(loadOpen, f.rate), usOf(res.Behind), usOf(res.MaxBehind))
	fmt.Fprintf(env.stdout, "latency scheduled send to seen confirmed (by polls a second apart: up to 1 s over), %d seen live: %s\n",
		confirmLatency.Count(), latencyOf(&confirmLatency))
	if mismatches > 0 {
		return 1, fmt.Errorf("%d of %d balances do not match their confirmed transactions", mismatches, len(keys))
	}
	fmt.Fprintf(env.stdout, "balances: all %d accounts moved by exactly their confirmed transfers and fees\n", len(keys))
	return 0, nil
}

// minSlotsMeasured is how many slots the node must have made while gen
// signed for genSlotTime to take its slot time from them.
const minSlotsMeasured = 5

// genSlotTime returns the node's slot time for expiryWarning, and how it
// was had: measured from the slots the node made over the signing, or,
// when it made fewer than minSlotsMeasured (or getSlot failed: slots 0),
// tpu run's default, an estimate. The RPC has no way to ask for it.
func genSlotTime(slots uint64, over time.Duration) (time.Duration, string) {
	if slots < minSlotsMeasured {
		d := stages.DefaultSlotTime
		return d, fmt.Sprintf("%v, an estimate: tpu run's default slot time, too few slots passed while signing to measure the node's", d)
	}
	d := (over / time.Duration(slots)).Round(time.Microsecond)
	return d, fmt.Sprintf("%v, the node's slot time measured over %d slots while signing", d, slots)
}

// finalPoll ends the count of c's first upTo signatures after the
// settle, and returns how many expired. When some are unconfirmed, one
// may still land after the last poll and before the balances are read,
// and fail them falsely: it first waits for the load's blockhash h to
// expire (awaitExpiry, every and limit). The live polls look at a window
// of the unconfirmed signatures at a time; the balances are checked
// against every confirmed transaction, so it then asks about all of them
// once more. What is still unconfirmed then names an expired blockhash
// and can never land: that is expired, 0 when all were confirmed.
func finalPoll(ctx context.Context, rpc *rpcClient, c *confirmations, upTo int, h [32]byte, every, limit time.Duration, progress io.Writer) (expired int, err error) {
	if unconfirmed := upTo - c.count; unconfirmed > 0 {
		fmt.Fprintf(progress, "%d valid transactions unconfirmed after the settle: waiting for the load's blockhash to expire, so that none can land while the balances are read\n", unconfirmed)
		if err := awaitExpiry(ctx, rpc, h, every, limit, progress); err != nil {
			return 0, err
		}
	}
	if err := c.poll(upTo, 0); err != nil {
		return 0, err
	}
	return upTo - c.count, nil
}

// expiryWait bounds awaitExpiry in tpu gen: 150 slots of 400 ms are 60 s.
const expiryWait = 3 * time.Minute

// awaitExpiry asks every interval whether blockhash h is still valid, and
// returns once the RPC says it is not: no transaction that names it can
// execute any more. It says how long it has waited each 10 s, and fails
// after limit, when the node's slots have stopped advancing.
func awaitExpiry(ctx context.Context, rpc *rpcClient, h [32]byte, every, limit time.Duration, progress io.Writer) error {
	start := time.Now()
	lastSaid := start
	for {
		ok, err := rpc.blockhashValid(ctx, h)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		waited := time.Since(start)
		if waited >= limit {
			return fmt.Errorf("the load's blockhash %s is still valid after %v: are the node's slots advancing? balances not checked", base58.Encode(h[:]), limit)
		}
		if time.Since(lastSaid) >= 10*time.Second {
			fmt.Fprintf(progress, "  blockhash still valid after %.0fs\n", waited.Seconds())
			lastSaid = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(every):
		}
	}
}

// pollWindow is how many unconfirmed signatures a live poll asks about
// (100 calls of 256).
const pollWindow = 25_600

// confirmations tracks which of a load's valid transactions are confirmed.
type confirmations struct {
	sigs      [][64]byte
	confirmed []*sigStatus // nil: not (yet) confirmed
	count     int
	query     func([][64]byte) ([]*sigStatus, error)
	next      int       // where the next limited poll starts
	seen      func(int) // when not nil, told of each newly confirmed index
}

// poll asks about the unconfirmed signatures among the first upTo: all of
// them when limit is 0, else at most limit, going round from where the
// last limited poll stopped. Going round matters when many were dropped:
// a window that always began at the oldest unconfirmed would stay on
// dropped ones, and confirmed ones behind them could leave the RPC's
// status window (about 150 slots) before being seen.
func (c *confirmations) poll(upTo, limit int) error {
	var pending []int
	if limit == 0 || limit >= upTo {
		for j := 0; j < upTo; j++ {
			if c.confirmed[j] == nil {
				pending = append(pending, j)
			}
		}
	} else {
		j := c.next % max(upTo, 1)
		for range upTo {
			if c.confirmed[j] == nil {
				pending = append(pending, j)
				if len(pending) == limit {
					j++
					break
				}
			}
			if j++; j == upTo {
				j = 0
			}
		}
		c.next = j
	}
	ps := make([][64]byte, len(pending))
	for k, j := range pending {
		ps[k] = c.sigs[j]
	}
	sts, err := c.query(ps)
	if err != nil {
		return err
	}
	if len(sts) != len(ps) {
		return fmt.Errorf("getSignatureStatuses answered %d statuses for %d signatures", len(sts), len(ps))
	}
	for k, st := range sts {
		if st != nil {
			c.confirmed[pending[k]] = st
			c.count++
			if c.seen != nil {
				c.seen(pending[k])
			}
		}
	}
	return nil
}

// countSent returns how many of the valid indexes were sent.
func countSent(valid []int, sent int) int {
	n := 0
	for n < len(valid) && valid[n] < sent {
		n++
	}
	return n
}

// genKeys returns the accounts to use: derived from the genesis seed, or
// fresh ones funded by airdrop (and confirmed).
func genKeys(ctx context.Context, env *cliEnv, rpc *rpcClient, f genFlags) ([]ed25519.PrivateKey, error) {
	keys := make([]ed25519.PrivateKey, f.accounts)
	if !f.airdrop {
		for i := range keys {
			keys[i] = bank.GenesisKey(f.seed, i)
		}
		return keys, nil
	}
	fmt.Fprintf(env.stderr, "funding %d fresh accounts by airdrop...\n", f.accounts)
	var sigs [][64]byte
	for i := range keys {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, err
		}
		keys[i] = priv
		pub := txview.PublicKey(priv)
		var sig string
		if err := rpc.call(ctx, "requestAirdrop", &sig, base58.Encode(pub[:]), uint64(100_000_000_000)); err != nil {
			return nil, err
		}
		b, err := base58.Decode(sig)
		if err != nil || len(b) != 64 {
			return nil, fmt.Errorf("requestAirdrop: bad signature %q", sig)
		}
		sigs = append(sigs, [64]byte(b))
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		sts, err := rpc.statuses(ctx, sigs, false)
		if err != nil {
			return nil, err
		}
		ok := 0
		for _, st := range sts {
			if st != nil && string(st.Err) == "null" {
				ok++
			}
		}
		if ok == len(sigs) {
			return keys, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d of %d airdrops confirmed after 30s", ok, len(sigs))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// atomicInt is an int shared with the sender's progress callback.
type atomicInt struct{ v atomic.Int64 }

func (a *atomicInt) Load() int   { return int(a.v.Load()) }
func (a *atomicInt) Store(n int) { a.v.Store(int64(n)) }
