package ledger

import (
	"testing"

	"github.com/tpugo/tpu/banking"
)

// TestSlotRecordEncoding: the record round-trips with Incinerated and
// CollectorBalance, and a record written before either existed still
// reads (as 0).
func TestSlotRecordEncoding(t *testing.T) {
	r := SlotRecord{Slot: 9, Blockhash: banking.Hash{1, 2}, Transactions: 3, FeesBurned: 4, Reward: 5, Incinerated: 6, CollectorBalance: 7}
	got, err := decodeSlotRecord(9, r.encode())
	if err != nil || got != r {
		t.Fatalf("round trip: %+v %v, want %+v", got, err, r)
	}
	got, err = decodeSlotRecord(9, r.encode()[:32+32])
	r.CollectorBalance = 0
	if err != nil || got != r {
		t.Fatalf("record without CollectorBalance: %+v %v, want %+v", got, err, r)
	}
	old := r.encode()[:32+24]
	got, err = decodeSlotRecord(9, old)
	r.Incinerated = 0
	if err != nil || got != r {
		t.Fatalf("old record: %+v %v, want %+v", got, err, r)
	}
	if _, err := decodeSlotRecord(9, old[:40]); err == nil {
		t.Fatal("a truncated record decoded")
	}
}
