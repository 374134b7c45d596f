package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestBlockLimitNamed: when the block cost limit is what bounds a run
// (a load offered at four times what the blocks hold), the live line names
// it as the limit, and the summary and its JSON say how many of the
// slots while the load ran were full; no block is charged more than the
// limit. TestStageCPU checks the other side: a run the blocks hold fills
// none.
func TestBlockLimitNamed(t *testing.T) {
	// About 50 of the load's transfers (about 1,690 units each) a
	// 100 ms slot: 500 a second, against 2,000 offered, so that the
	// blocks fill even where a -race build on a busy machine delivers
	// far less than it offers.
	const limit = 85_000
	s, out, errOut, _ := runInProcess(t, "--duration", "2s", "--rate", "2000", "--accounts", "256",
		"--slot-time", "100ms", "--block-cost-limit", fmt.Sprint(limit))
	b := s.Blocks
	if b == nil {
		t.Fatalf("no blocks in the summary:\n%s", out)
	}
	if b.Slots < 10 || 2*b.Full <= b.Slots {
		t.Errorf("%d of %d slots full while the load ran; want most of at least 10", b.Full, b.Slots)
	}
	if s.BlockCostLimit != limit {
		t.Errorf("block_cost_limit %d, want %d", s.BlockCostLimit, limit)
	}
	if b.Units == 0 || b.Units > b.Slots*limit {
		t.Errorf("%d units in %d blocks of at most %d", b.Units, b.Slots, limit)
	}
	if !strings.Contains(out, "the limit, not the pipeline, bounded the rate") {
		t.Errorf("the summary does not say the block limit bounded the run:\n%s", out)
	}
	if !strings.Contains(errOut, "| limit: the block cost limit, ") {
		t.Errorf("no live line names the block cost limit:\n%s", errOut)
	}
	if !s.AccountingOK {
		t.Errorf("accounting failed")
	}
}

// Without a CPU profile (another one runs) the live line still names
// the block cost limit when most slots filled, and says nothing of a
// limit otherwise.
func TestTickWithoutProfileNamesBlockLimit(t *testing.T) {
	c := &stageCPU{}
	if got, want := c.tick(10, blockWindow{Slots: 3, Full: 2}), "| limit: the block cost limit, 2 of 3 slots full"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := c.tick(10, blockWindow{Slots: 2, Full: 1}); got != "" {
		t.Errorf("half the slots full, no profile: got %q, want nothing", got)
	}
}
