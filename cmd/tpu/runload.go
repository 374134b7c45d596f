package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/tpugo/tpu/banking/loadgen"
	"github.com/tpugo/tpu/stages"
	"github.com/tpugo/tpu/stages/sigverify"
	"github.com/tpugo/tpu/trace/cpustage"
)

// tpu run's load: signed (buildLoad), then sent while a live line is
// printed each second (drive); and the sigverify ceiling measured over
// it.

// driven is what drive saw.
type driven struct {
	elapsed      time.Duration // from the start of the load to its end
	sent         int           // by the load generator; -1 without one
	retainedPeak uint64        // banking's buffer, sampled each second
	res          loadgen.SendResult
	// exhausted is when a closed-loop load ran out before --duration
	// ended, from the start of the load (0: it did not); drive stops
	// then, so that elapsed is the time load was offered.
	exhausted time.Duration
	// executedOffered is what had executed when drive stopped offering
	// load: executedOffered/elapsed is the rate while load was offered,
	// without what drained after it.
	executedOffered uint64
	// blocks is what banking's blocks held while load was offered:
	// the slots that ended, those whose block filled, and the units
	// charged.
	blocks blockWindow
}

// loadMode returns how tpu run sends its load: loadOpen with a --rate,
// loadClosed without, loadNone with --no-gen.
func loadMode(f runFlags) string {
	switch {
	case f.noGen:
		return loadNone
	case f.rate > 0:
		return loadOpen
	}
	return loadClosed
}

// drive sends the load, if any, and prints a live line each second (with
// the limiting stage, ending a window of cpu), until
// --duration ends, stop is closed, or (with a --count load and no
// --duration) the load is sent. An open-loop load (--rate) is sent to the
// end of its schedule, however late: the duration bounds the schedule,
// not the sending. It returns once the load generator has stopped.
func drive(env *cliEnv, g *stages.Graph, f runFlags, load *loadgen.Load, sched *fromSchedule, cpu *stageCPU, stop <-chan struct{}, log *slog.Logger) driven {
	d := driven{sent: -1}
	mode := loadMode(f)
	var idx *loadgen.Index
	if load != nil {
		fmt.Fprintln(env.stderr, loadLine(mode, f.rate))
		fmt.Fprintln(env.stderr, sendLine(f))
		if mode == loadOpen {
			idx = load.Index() // before the schedule starts
		}
	}
	// The live line's clock starts here, when the load starts being
	// offered (or, with --no-gen, once the graph is receiving), not when
	// the graph started: signing the load can take many seconds.
	prev, _ := g.Snapshot()
	origin := prev.Elapsed
	first := prev
	start := time.Now()
	sendDone := make(chan loadgen.SendResult, 1)
	quit := make(chan struct{}) // the load generator's stop: at the end of drive
	if load != nil {
		sc := loadgen.SendConfig{Target: g.Addr(), Duration: f.duration, BatchSize: f.sendBatch, Stop: quit}
		if mode == loadOpen {
			sc.Rate, sc.Start = f.rate, start
			sched.arm(idx, loadgen.Schedule{Start: start, Rate: f.rate})
		} else {
			sc.Accepting = g.Accepting
		}
		go func() {
			cpustage.Set(cpustage.Generator)
			var res loadgen.SendResult
			var err error
			if f.send == sendQUIC {
				qa, _ := g.QUICAddr()
				var failed int
				res, failed, err = sendOverQUIC(load, sc, quicSend{Target: qa, Conns: f.quicConns, Keys: quicIdentities(f.seed, f.quicIdentities)})
				if failed > 0 {
					log.Warn("load generator: QUIC sends failed", "failed", failed)
				}
			} else {
				res, err = load.Send(sc)
			}
			if err != nil {
				log.Error("load generator", "err", err)
			}
			sendDone <- res
		}()
	}
	var deadline <-chan time.Time
	if f.duration > 0 && !(mode == loadOpen) {
		t := time.NewTimer(f.duration)
		defer t.Stop()
		deadline = t.C
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
loop:
	for {
		select {
		case <-tick.C:
			if cur, err := g.Snapshot(); err == nil {
				line := liveLine(cur, prev, origin, g.Trace().Hops())
				if l := cpu.tick(cur.Executed(), blocksBetween(prev, cur)); l != "" {
					line += " " + l
				}
				fmt.Fprintln(env.stderr, line)
				prev = cur
				d.retainedPeak = max(d.retainedPeak, cur.RetainedBytes())
			}
		case <-deadline:
			break loop
		case <-stop:
			break loop
		case <-g.Done():
			// An actor panicked (logged with its stack) or the ledger
			// failed (logged by it): the graph has stopped working; Stop
			// returns the failure, and the run exits 1 with it.
			log.Error("pipeline failed", "err", g.Err())
			break loop
		case res := <-sendDone:
			d.sent, d.res = res.Sent, res
			if f.duration == 0 || mode == loadOpen {
				break loop // a --count load without a duration, or the schedule's end: done
			}
			if res.Sent == len(load.Txs) {
				// Closed-loop, all sent before --duration ended: no
				// more load to offer (runsize.go).
				d.exhausted = time.Since(start)
				break loop
			}
		}
	}
	d.elapsed = time.Since(start)
	if cur, err := g.Snapshot(); err == nil {
		d.executedOffered = cur.Executed()
		d.blocks = blocksBetween(first, cur)
	}
	close(quit)
	if load != nil && d.sent < 0 {
		d.res = <-sendDone
		d.sent = d.res.Sent
	}
	// What is still in the socket's buffer is read when the stop halts
	// fetch: its readers drain the socket before they return.
	return d
}

// buildLoad signs the run's load of n transactions (loadCount); a signal
// (stop) ends it early with loadgen.ErrStopped. It asks the bank for its
// latest blockhash every loadgen.RefreshWindow transactions, as a client
// polling for it would: signing takes seconds, slots go by meanwhile, and
// the load is spread over their blockhashes, as a validator's is, rather
// than piling a run's million signatures into one status cache table.
func buildLoad(env *cliEnv, g *stages.Graph, f runFlags, n int, stop <-chan struct{}) (*loadgen.Load, error) {
	bh, err := g.LatestBlockhash()
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(env.stderr, "signing %d transactions...\n", n)
	t0 := time.Now()
	load, err := loadgen.Build(loadgen.Config{
		Seed: f.seed, Accounts: f.accounts, Blockhash: bh, Refresh: g.LatestBlockhash, Count: n, Contention: f.contention,
		InvalidFraction: f.invalid, V0Fraction: f.v0, BatchSize: f.sendBatch, RandSeed: uint64(time.Now().UnixNano()),
		Progress: func(done, total int) { fmt.Fprintf(env.stderr, "  signed %d of %d\n", done, total) },
		Stop:     stop,
	})
	if err != nil {
		return nil, err
	}
	signing := time.Since(t0)
	fmt.Fprintf(env.stderr, "signed %d transactions over %s in %.1fs; sending for %v\n", n, hashesSaid(load.Blockhashes), signing.Seconds(), f.duration)
	if w := expiryWarning(signing, f.duration, f.slotTime,
		"--slot-time "+f.slotTime.String(), "use a smaller --count or a longer --slot-time"); w != "" {
		fmt.Fprintln(env.stderr, w)
	}
	return load, nil
}

// measureCeiling is sigverify.Ceiling of b over the load's valid
// transactions for 300 ms.
func measureCeiling(b sigverify.Backend, load *loadgen.Load, cores int) float64 {
	txs := make([][]byte, 0, sigverify.CeilingTxs)
	for i, k := range load.Kinds {
		if k == loadgen.Valid {
			txs = append(txs, load.Txs[i])
			if len(txs) == sigverify.CeilingTxs {
				break
			}
		}
	}
	return sigverify.Ceiling(b, txs, cores, 300*time.Millisecond)
}

// hashesSaid is how the signing line names n blockhashes.
func hashesSaid(n int) string {
	if n == 1 {
		return "one blockhash"
	}
	return fmt.Sprintf("%d blockhashes", n)
}
