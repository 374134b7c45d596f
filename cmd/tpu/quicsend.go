package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/loadgen"
	"github.com/tpugo/tpu/quic"
)

// The load generators' QUIC sender: what loadgen.Load.Send does over UDP,
// over QUIC as real senders do, one transaction per stream, spread over
// several connections and identities.

// Send modes of the load generators (--send).
const (
	sendQUIC = "quic"
	sendUDP  = "udp"
)

// quicSend says how to send over QUIC.
type quicSend struct {
	Target netip.AddrPort
	// Keys are the connections' identities, one per connection, reused
	// round-robin when there are more connections; a nil key is an
	// unstaked connection with no certificate.
	Keys  []ed25519.PrivateKey
	Conns int
	// Streams is each connection's transactions in flight. Zero: 64.
	Streams int
}

// quicIdentities returns n sender identities derived from seed: the
// genesis validators' (bank.ValidatorKey), so that the first
// --genesis-validators of them are staked by a ledger made from seed and
// the rest are not.
func quicIdentities(seed string, n int) []ed25519.PrivateKey {
	keys := make([]ed25519.PrivateKey, n)
	for i := range keys {
		keys[i] = bank.ValidatorKey(seed, i)
	}
	return keys
}

// quicLinger is how long the sender keeps its connections open after its
// last stream, so that what it queued is delivered before it closes.
const quicLinger = 250 * time.Millisecond

// quicStall is how long the sender's last sends may wait for stream
// credit (or a write) after the last transaction is handed out.
var quicStall = 10 * time.Second // a variable for tests

// errNoQUICConn: every connection attempt failed.
var errNoQUICConn = errors.New("no QUIC connection to the TPU")

// sendOverQUIC sends load as loadgen.Load.Send would (sc's Rate,
// Duration, Start, Accepting, Stop, Progress and Tx, not its Target or
// BatchSize), over q's connections. A send that fails (the server
// closed the connection, refused the stream) is counted in failed and
// not in Sent.
func sendOverQUIC(load *loadgen.Load, sc loadgen.SendConfig, q quicSend) (res loadgen.SendResult, failed int, err error) {
	if q.Streams == 0 {
		q.Streams = 64
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var conns []*quic.Conn
	for i := range max(q.Conns, 1) {
		var key ed25519.PrivateKey
		if len(q.Keys) > 0 {
			key = q.Keys[i%len(q.Keys)]
		}
		dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
		c, err := quic.Dial(dctx, q.Target, key)
		dcancel()
		if err != nil {
			continue // counted: the connections that failed are fewer in use
		}
		defer c.Close()
		conns = append(conns, c)
	}
	if len(conns) == 0 {
		return res, 0, errNoQUICConn
	}
	var sent, bad atomic.Int64
	work := make(chan []byte, len(conns)*q.Streams)
	var wg sync.WaitGroup
	for _, c := range conns {
		for range q.Streams {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for tx := range work {
					// No context per send: its timer cost the sender a
					// timer start and stop and four allocations a
					// transaction (and the leader the GC of them, in
					// tpu run). A send waits for stream credit as long
					// as the server withholds it; quicStall bounds it.
					if c.Send(ctx, tx) == nil {
						sent.Add(1)
					} else {
						bad.Add(1)
					}
				}
			}()
		}
	}
	start := time.Now()
	open := sc.Rate > 0
	sched, total := sc.Plan(start, len(load.Txs))
	res.Start = sched.Start
	lastProgress := start
	offered := 0
dispatch:
	for offered < total {
		select {
		case <-sc.Stop:
			break dispatch
		default:
		}
		now := time.Now()
		if sc.Progress != nil && now.Sub(lastProgress) >= time.Second {
			lastProgress = now
			sc.Progress(int(sent.Load()))
		}
		if open {
			if at := sched.At(offered); at.After(now) {
				t := time.NewTimer(at.Sub(now))
				select {
				case <-t.C:
				case <-sc.Stop:
					t.Stop()
					break dispatch
				}
				continue
			}
			behind := now.Sub(sched.At(offered))
			res.MaxBehind, res.Behind = max(res.MaxBehind, behind), behind
		} else {
			if sc.Duration > 0 && now.Sub(start) >= sc.Duration {
				break
			}
			if sc.Accepting != nil && offered%64 == 0 && !sc.Accepting(int(sent.Load())) {
				time.Sleep(200 * time.Microsecond)
				continue
			}
		}
		tx := load.Txs[offered]
		if sc.Tx != nil {
			if tx = sc.Tx(offered); tx == nil {
				break
			}
		}
		select {
		case work <- tx:
			offered++
		case <-sc.Stop:
			break dispatch
		}
	}
	close(work)
	// A server that grants no stream credit for quicStall once the last
	// transaction is handed out fails the sends still waiting.
	stall := time.AfterFunc(quicStall, cancel)
	wg.Wait()
	stall.Stop()
	res.Sent, res.Elapsed = int(sent.Load()), time.Since(start)
	// A stream's Close returns once its FIN is queued, not delivered:
	// closing the connection at once would cut the last streams off.
	time.Sleep(quicLinger)
	return res, int(bad.Load()), nil
}

// leaderQUIC finds the current leader's QUIC TPU as a real client does:
// getSlotLeader names the leader, getClusterNodes its tpuQuic.
func (c *rpcClient) leaderQUIC(ctx context.Context) (netip.AddrPort, error) {
	var leader string
	if err := c.call(ctx, "getSlotLeader", &leader); err != nil {
		return netip.AddrPort{}, err
	}
	var nodes []struct {
		Pubkey  string  `json:"pubkey"`
		TPUQUIC *string `json:"tpuQuic"`
	}
	if err := c.call(ctx, "getClusterNodes", &nodes); err != nil {
		return netip.AddrPort{}, err
	}
	for _, n := range nodes {
		if n.Pubkey != leader {
			continue
		}
		if n.TPUQUIC == nil {
			return netip.AddrPort{}, fmt.Errorf("the leader %s has no QUIC TPU (tpuQuic null)", leader)
		}
		return netip.ParseAddrPort(*n.TPUQUIC)
	}
	return netip.AddrPort{}, fmt.Errorf("the leader %s is not in getClusterNodes", leader)
}
