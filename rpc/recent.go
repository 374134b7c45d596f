package rpc

import (
	"hash/maphash"

	"github.com/tpugo/tpu/banking/ledger"
)

// recentIndex holds the statuses of the window's slots, by signature,
// for getSignatureStatuses and the rest. It is not safe for concurrent
// use: the Server's mu guards it.
//
// A Go map never shrinks, and under the window's steady churn (each slot
// adds its statuses and drops those of the slot 151 back) deletions
// leave tombstones that count as used: the table grows to make room
// although the entries do not. Measured (window_test.go, 800 statuses a
// slot, 2,000 tx/s), one map and sigsBySlot held 32 MiB from the first
// window until the ninth, then grew to 56 MiB by the seventeenth; and a
// window at four times the load kept 104 MiB after it expired. So each
// shard is rebuilt, copied into a map of its size, once twice as many
// statuses have left it as it holds: the copy costs a map insert per
// live status once per two windows' deletions, at most one per deletion,
// and the shards (by a seeded hash of the signature, so nobody can aim
// at one) keep each copy to a sixteenth of the window: 120,000 statuses
// took 80-100 ms to copy at once on a busy 2-core machine, under the lock
// every reader and the commit listener take.
//
// Bound: a status is a 64-byte key and a 24-byte ledger.Status here
// (plus a control byte, in tables between 7/16 and 7/8 full) and 64
// bytes in the Server's sigsBySlot, so the index holds 151 x (statuses
// a slot) x 190-310 bytes (measured from 100 to 1,500 a slot; the test
// holds it to 320): 32 MiB at 800 a slot.
type recentIndex struct {
	seed   maphash.Seed
	shards [recentShards]recentShard
}

type recentShard struct {
	m       map[[64]byte]ledger.Status
	dropped int // statuses deleted since m was built
}

// recentShards is the number of shards, a power of two.
const recentShards = 16

// minRebuild is the fewest deletions from a shard that rebuild it: below
// it the map is small and a copy would cost more than it frees.
const minRebuild = 256

func newRecentIndex() recentIndex {
	r := recentIndex{seed: maphash.MakeSeed()}
	for i := range r.shards {
		r.shards[i].m = map[[64]byte]ledger.Status{}
	}
	return r
}

func (r *recentIndex) shard(sig *[64]byte) *recentShard {
	return &r.shards[maphash.Comparable(r.seed, *sig)&(recentShards-1)]
}

// get returns sig's status.
func (r *recentIndex) get(sig *[64]byte) (ledger.Status, bool) {
	st, ok := r.shard(sig).m[*sig]
	return st, ok
}

// put sets sig's status.
func (r *recentIndex) put(sig *[64]byte, st ledger.Status) { r.shard(sig).m[*sig] = st }

// remove drops sig's status, and rebuilds its shard when that is due.
func (r *recentIndex) remove(sig *[64]byte) {
	sh := r.shard(sig)
	delete(sh.m, *sig)
	sh.dropped++
	if sh.dropped < minRebuild || sh.dropped < 2*len(sh.m) {
		return
	}
	m := make(map[[64]byte]ledger.Status, len(sh.m))
	for k, v := range sh.m {
		m[k] = v
	}
	sh.m, sh.dropped = m, 0
}

// len returns the number of statuses.
func (r *recentIndex) len() int {
	n := 0
	for i := range r.shards {
		n += len(r.shards[i].m)
	}
	return n
}
