package rpc

import (
	"fmt"
	"time"

	"github.com/tpugo/tpu/banking"
)

// atCap, when not nil as a server starts, is called each time its
// listener finds every slot taken and none idle, before it waits: a
// test's signal.
var atCap func()

// fdReserve is how many descriptors the connection cap leaves to the rest
// of the process: the ledger's files, the UDP sockets, the metrics server.
const fdReserve = 256

// connCap returns the connection cap: want, lowered to the soft limit on
// open descriptors less fdReserve where that is lower (and at least 1).
// limit is 0 where it is not known.
func connCap(want int, limit uint64) int {
	if limit == 0 {
		return want
	}
	if limit <= fdReserve {
		return 1
	}
	return int(min(uint64(want), limit-fdReserve))
}

// nestedDeeper reports whether the JSON text b nests arrays and objects
// deeper than max. It reads b once and allocates nothing; what it cannot
// read (b is not JSON) it leaves to the decoder.
func nestedDeeper(b []byte, max int) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			if depth > max {
				return true
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return false
}

// airdropLimit bounds what requestAirdrop gives away in each window of
// time: to one recipient, and in all. Windows are fixed: the counts start
// again from zero when a window ends. It is not safe for concurrent use.
type airdropLimit struct {
	window       time.Duration
	perRecipient uint64 // lamports to one recipient per window
	lamports     uint64 // lamports in all per window
	requests     int    // airdrops in all per window

	start time.Time                 // of the current window
	given map[banking.Pubkey]uint64 // lamports per recipient this window
	total uint64
	n     int
}

// errAirdropLimit is the message every refusal starts with: Agave's, so
// clients that look for it recognise it.
const errAirdropLimit = "airdrop request failed. This can happen when the rate limit is reached"

// take records an airdrop of lamports to to at now, or refuses it with a
// reason if it would pass a limit (and then records nothing).
func (l *airdropLimit) take(now time.Time, to banking.Pubkey, lamports uint64) error {
	if l.given == nil || now.Sub(l.start) >= l.window || now.Before(l.start) {
		l.start, l.given, l.total, l.n = now, map[banking.Pubkey]uint64{}, 0, 0
	}
	left := l.window - now.Sub(l.start)
	switch {
	case l.n >= l.requests:
		return fmt.Errorf("%s: %d airdrops in this %v window, the most allowed (--rpc-airdrop-requests); try again in %v", errAirdropLimit, l.n, l.window, left.Round(time.Millisecond))
	case lamports > l.lamports-l.total:
		return fmt.Errorf("%s: %d lamports would pass the %d given in all per %v window, %d already given (--rpc-airdrop-lamports); try again in %v", errAirdropLimit, lamports, l.lamports, l.window, l.total, left.Round(time.Millisecond))
	case lamports > l.perRecipient-l.given[to]:
		return fmt.Errorf("%s: %d lamports would pass the %d one recipient may get per %v window, %d already given to it (--rpc-airdrop-per-recipient); try again in %v", errAirdropLimit, lamports, l.perRecipient, l.window, l.given[to], left.Round(time.Millisecond))
	}
	l.given[to] += lamports
	l.total += lamports
	l.n++
	return nil
}
