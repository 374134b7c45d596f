package scheduler

import (
	"testing"
	"unsafe"
)

// The fields a pass reads from a popped, cold transaction sit in its
// first two cache lines, and its accounts start right after them
// (pendingTx's doc): a field added in front of them, or these moved
// back down, costs a cache miss a transaction with a deep buffer.
func TestPendingTxHotFields(t *testing.T) {
	var p pendingTx
	for name, end := range map[string]uintptr{
		"seq":        unsafe.Offsetof(p.seq) + unsafe.Sizeof(p.seq),
		"cost":       unsafe.Offsetof(p.cost) + unsafe.Sizeof(p.cost),
		"priority":   unsafe.Offsetof(p.priority) + unsafe.Sizeof(p.priority),
		"view":       unsafe.Offsetof(p.view) + unsafe.Sizeof(p.view),
		"resolvedIn": unsafe.Offsetof(p.resolvedIn) + unsafe.Sizeof(p.resolvedIn),
		"n":          unsafe.Offsetof(p.n) + unsafe.Sizeof(p.n),
		"writable":   unsafe.Offsetof(p.writable) + unsafe.Sizeof(p.writable),
		"thread":     unsafe.Offsetof(p.thread) + unsafe.Sizeof(p.thread),
	} {
		if end > 128 {
			t.Errorf("pendingTx.%s ends at byte %d, past its first two cache lines", name, end)
		}
	}
	if off := unsafe.Offsetof(p.accounts); off > 128 {
		t.Errorf("pendingTx.accounts starts at byte %d, not right after the fields a pass reads", off)
	}
}
