package scheduler

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/banktest"
	"github.com/tpugo/tpu/packet"
)

// TestWorkBatchSourcesAndTracers: every work batch names exactly the
// source batches its transactions came from (first appearance first),
// each source is reported done exactly once, after its last transaction
// left, and a tracer transaction's worker start and end bracket the
// injected execution delay, inside the batch's own start and end.
func TestWorkBatchSourcesAndTracers(t *testing.T) {
	const delay = 3 * time.Millisecond
	for _, h := range []Handoff{HandoffRefcount, HandoffCopy} {
		t.Run("handoff="+h.String(), func(t *testing.T) {
			b := banktest.OpenBank(t, bank.Config{Genesis: bank.GenesisConfig{Seed: banktest.Seed, Accounts: 32}})
			defer b.Close()
			s := newScheduler(t, Config{Workers: 2, BatchSize: 4, Handoff: h, ExecDelay: delay}, b)
			bh := b.LatestBlockhash()
			pool, _ := packet.NewPool(packet.Config{BatchCap: 8})

			source := map[[64]byte]uint64{} // what the test put where
			live := map[uint64]int{}        // transactions per source not yet done
			var done []uint64
			s.SetOnSourceDone(func(src uint64) {
				if live[src] != 0 {
					t.Errorf("source %d done with %d transactions left", src, live[src])
				}
				done = append(done, src)
			})
			s.SetOnDone(func(o packet.Outcome, _ int64, sig *[64]byte, _ packet.Flags) {
				if sig != nil {
					if src, ok := source[*sig]; ok {
						live[src]--
					}
				}
			})
			var seqs []uint64
			from := 0
			submit := func(n int, tracer int, bad int) {
				var txs [][]byte
				for i := 0; i < n; i++ {
					txs = append(txs, banktest.TransferTx(t, bh, banktest.Key(from), banktest.Pub(31), 1))
					from++
				}
				for i := 0; i < bad; i++ {
					txs = append(txs, banktest.TransferTx(t, banking.Pubkey{9}, banktest.Key(from), banktest.Pub(31), 1)) // unknown blockhash
					from++
				}
				bt := banktest.BatchOf(t, pool, txs...)
				for i := range bt.Packets() {
					if i == tracer {
						bt.At(i).Meta.Flags |= packet.FlagTracer
					}
					sig := *(*[64]byte)(bt.At(i).Data()[1:65])
					source[sig] = bt.Seq()
					live[bt.Seq()]++
				}
				seqs = append(seqs, bt.Seq())
				s.Submit(bt)
			}
			submit(3, 1, 0)
			submit(3, -1, 1)
			submit(0, -1, 2) // nothing buffered: done at once
			submit(2, 0, 0)
			if len(done) != 1 || done[0] != seqs[2] {
				t.Fatalf("sources done after submitting: %v, want [%d]", done, seqs[2])
			}
			s.Schedule()

			tracers := 0
			var srcs []uint64
			var tts []TxTimes
			for s.Busy() {
				wb := <-s.Completions()
				var want []uint64
				for _, tx := range wb.txs {
					if src := source[*tx.view.Signature(0)]; !slices.Contains(want, src) {
						want = append(want, src)
					}
				}
				srcs = wb.Sources(srcs[:0])
				if !slices.Equal(srcs, want) {
					t.Errorf("work batch of %d: sources %v, want %v", wb.Len(), srcs, want)
				}
				tts = wb.Tracers(tts[:0])
				for _, tt := range tts {
					tracers++
					if tt.Source != source[*tt.Sig] {
						t.Errorf("tracer source %d, want %d", tt.Source, source[*tt.Sig])
					}
					if tt.End-tt.Start < int64(delay) || tt.Start < wb.Started || tt.End > wb.Finished || wb.Started < wb.Sealed {
						t.Errorf("tracer ran %d..%d (%v), batch sealed %d ran %d..%d, delay %v",
							tt.Start, tt.End, time.Duration(tt.End-tt.Start), wb.Sealed, wb.Started, wb.Finished, delay)
					}
					if tt.Outcome != packet.OutcomeExecutedOK {
						t.Errorf("tracer outcome %v", tt.Outcome)
					}
				}
				s.Complete(wb)
			}
			if tracers != 2 {
				t.Errorf("%d tracers seen on work batches, want 2", tracers)
			}
			drain(t, s)
			checkAccounting(t, s)
			slices.Sort(done)
			if !slices.Equal(done, seqs) {
				t.Errorf("sources done %v, want each of %v once", done, seqs)
			}
			if st := s.Stats(); st.HeldBatches != 0 || pool.Stats().Live != 0 {
				t.Errorf("%d batches held, %d live", st.HeldBatches, pool.Stats().Live)
			}
		})
	}
}

func TestExecDelayValidate(t *testing.T) {
	if err := (Config{ExecDelay: -1}).Validate(); !errors.Is(err, ErrConfig) {
		t.Fatalf("negative ExecDelay: %v", err)
	}
}
