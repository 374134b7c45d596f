package rpc

import (
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/tpugo/tpu/rpc/jsonrpc"
)

// The costs of expensive work, in units of about one signature check
// (some 50 us of a core), charged to the client's address
// (Config.ExpensivePerSec) before the work is done.
const (
	costSignature = 1  // a signature checked: preflight, simulateTransaction's sigVerify
	costSimulate  = 1  // a transaction simulated: preflight, simulateTransaction
	costChunk     = 1  // historyChunk (16) slots searched by getSignatureStatuses' searchTransactionHistory
	listedPerUnit = 10 // entries getSignaturesForAddress may list (its limit) for 1
)

// codeRateLimited answers a request whose address has spent its budget
// for expensive work. Solana defines no such code; -32005 is what
// Ethereum's JSON-RPC (EIP-1474) uses for "limit exceeded", and
// Solana's for a node that cannot serve now: either way, try later.
const codeRateLimited = -32005

// rateLimited is the start of every refusal's message.
const rateLimited = "rate limited"

// budget is a token bucket per client address for expensive work: each
// fills at rate units a second up to rate (one second's worth), and a
// charge is refused when it would take the bucket below zero. It is safe
// for concurrent use.
type budget struct {
	rate float64
	now  func() time.Time

	mu      sync.Mutex
	buckets map[netip.Addr]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time // when tokens was last brought up to date
}

// maxBuckets is how many addresses the budget tracks before it forgets
// those whose buckets are full again (a full bucket is what a new address
// gets, so forgetting it loses nothing).
const maxBuckets = 4096

// budgetClock, when not nil as a server starts, is its budget's clock: a
// test's.
var budgetClock func() time.Time

func newBudget(rate int, now func() time.Time) *budget {
	return &budget{rate: float64(rate), now: now, buckets: map[netip.Addr]*bucket{}}
}

// take charges n units to addr, or returns how long until the bucket
// will hold them (n is cut to the bucket's size, so any charge fits a
// full bucket).
func (b *budget) take(addr netip.Addr, n int) (wait time.Duration, ok bool) {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	k, found := b.buckets[addr]
	if !found {
		if len(b.buckets) >= maxBuckets {
			b.forgetFull(now)
		}
		k = &bucket{tokens: b.rate, at: now}
		b.buckets[addr] = k
	}
	k.fill(now, b.rate)
	need := min(float64(n), b.rate)
	if k.tokens < need {
		return time.Duration((need - k.tokens) / b.rate * float64(time.Second)), false
	}
	k.tokens -= need
	return 0, true
}

func (k *bucket) fill(now time.Time, rate float64) {
	if d := now.Sub(k.at); d > 0 {
		k.tokens = min(rate, k.tokens+d.Seconds()*rate)
	}
	k.at = now
}

// forgetFull drops the buckets that have filled up again. b.mu is held.
func (b *budget) forgetFull(now time.Time) {
	for a, k := range b.buckets {
		if k.fill(now, b.rate); k.tokens >= b.rate {
			delete(b.buckets, a)
		}
	}
}

// charge takes n units of expensive work from q's address, or returns
// the rate-limited error saying what was spent and when to try again.
func (s *Server) charge(q *call, n int, what string) *Error {
	wait, ok := s.budget.take(q.addr, n)
	if ok {
		return nil
	}
	q.limited = true
	return &Error{Code: codeRateLimited, Message: fmt.Sprintf("%s: %s would cost %d units (about one signature check each) and this address's budget of %d a second (--rpc-expensive-per-sec) is spent; try again in %v",
		rateLimited, what, n, s.cfg.ExpensivePerSec, wait.Round(time.Millisecond)), Data: nil}
}

var _ = jsonrpc.CodeInternal
