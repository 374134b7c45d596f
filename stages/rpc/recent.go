package rpc

import "github.com/tpugo/tpu/banking"

// minRebuild is the fewest deletions from recent that rebuild it: below
// it the map is small and a copy would cost more than it frees.
const minRebuild = 4096

// rebuildRecent copies recent into a map of its size once twice as many
// statuses have left it, since it was built, as it holds. The caller
// holds s.mu.
//
// A Go map never shrinks, and under the window's steady churn (each slot
// adds its statuses and drops those of the slot 151 back) deletions
// leave tombstones that count as used: the table grows to make room
// although the entries do not. Measured (window_test.go, 800 statuses a
// slot, 2,000 tx/s), recent and sigsBySlot held 32 MiB from the first
// window until the ninth, then grew to 56 MiB by the seventeenth; and a
// window at four times the load kept 104 MiB after it expired.
// Rebuilding keeps them at the live window's size: a status is a 64-byte
// key and a 24-byte banking.Status in recent (plus a control byte, in
// tables between 7/16 and 7/8 full) and 64 bytes in sigsBySlot, so the
// index holds 151 x (statuses a slot) x 190-310 bytes (measured from 100
// to 1,500 a slot; the test holds it to 320): 32 MiB at 800 a slot. The
// copy costs a map insert per live status once per two windows'
// deletions, so at most one per deletion, under s.mu.
func (s *Server) rebuildRecent() {
	if s.dropped < minRebuild || s.dropped < 2*len(s.recent) {
		return
	}
	m := make(map[[64]byte]banking.Status, len(s.recent))
	for k, v := range s.recent {
		m[k] = v
	}
	s.recent, s.dropped = m, 0
}
