package quic

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestFlood: on loopback, a connection storm from one IP (5,000
// attempts) and unstaked clients opening streams as fast as they are
// let, beside one staked client: the storm is refused past the per-IP
// burst, every one of the staked client's transactions lands, every
// stream accepted is accounted for, and goroutines come back down.
func TestFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("a flood")
	}
	base := runtime.NumGoroutine()
	attempts, timeout := 5000, time.Duration(0)
	if raceEnabled {
		// Every handshake attempt is ten times slower under -race, and
		// on two cores a stream's frames could then wait past the 2 s
		// stream timeout in quic-go's queues (1 of 400 staked streams
		// timed out so): fewer attempts and a longer timeout.
		attempts, timeout = 1000, 10*time.Second
	}
	staked := newKey(t)
	s, k := startServer(t, Config{Stakes: NewStakes(map[Identity]uint64{idOf(staked): 1}), StreamTimeout: timeout})
	// The unstaked clients first (the per-IP burst is 80 attempts), then
	// the staked one, then the storm.
	var flooders []*Conn
	for range 8 {
		flooders = append(flooders, dial(t, s, nil))
	}
	sc := dial(t, s, staked)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var floodSent atomic.Int64
	for _, c := range flooders {
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					if c.Send(ctx, tx(int(floodSent.Add(1)), 100)) != nil {
						return
					}
				}
			}()
		}
	}
	var refused atomic.Int64
	storm := make(chan struct{})
	go func() {
		defer close(storm)
		var swg sync.WaitGroup
		sem := make(chan struct{}, 32)
		for range attempts {
			sem <- struct{}{}
			swg.Add(1)
			go func() {
				defer swg.Done()
				defer func() { <-sem }()
				dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
				defer dcancel()
				c, err := Dial(dctx, s.Addr(), nil)
				if err != nil {
					refused.Add(1)
					return
				}
				c.Close()
			}()
		}
		swg.Wait()
	}()
	const stakedN = 400
	for i := range stakedN {
		send(t, sc, tx(100_000+i, 150))
	}
	<-storm
	for i, f := range flooders {
		if err := context.Cause(f.Raw().Context()); err != nil {
			t.Logf("flooder %d: %v", i, err)
		}
	}
	start, before := time.Now(), s.Counts()[EventStreamReceived]
	time.Sleep(time.Second) // a second of the flood's steady rate
	rate := float64(s.Counts()[EventStreamReceived]-before) / time.Since(start).Seconds()
	cancel()
	wg.Wait()

	// Every staked transaction landed.
	landed := func() int {
		k.mu.Lock()
		defer k.mu.Unlock()
		n := 0
		for _, p := range k.pkts {
			if p.Meta.Peer == idOf(staked) {
				n++
			}
		}
		return n
	}
	deadline := time.Now().Add(20 * time.Second)
	for landed() != stakedN {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d staked transactions landed; staked connection closed: %v; counts %v", landed(), stakedN, context.Cause(sc.Raw().Context()), s.Counts())
		}
		time.Sleep(5 * time.Millisecond)
	}
	c := s.Counts()
	// The server counts each Initial it refuses; a client retransmits
	// its Initial before it gives up, so the count runs past 5,000.
	if refused.Load() < int64(attempts-80) || c[EventConnRefused] < uint64(refused.Load()) {
		t.Fatalf("%d of %d attempts refused (%d Initials refused), want all but the burst of 80", refused.Load(), attempts, c[EventConnRefused])
	}
	if c[EventRateLimited] == 0 {
		t.Fatal("the unstaked flood was never throttled")
	}
	t.Logf("storm: %d of %d attempts refused (%d Initials); unstaked flood: %d streams sent, %.0f/s received over 8 connections (at 200/s each); staked: %d of %d landed; counts %v",
		refused.Load(), attempts, c[EventConnRefused], floodSent.Load(), rate, stakedN, stakedN, c)
	if rate > 8*200*1.5 {
		t.Fatalf("the unstaked flood got %.0f streams/s, over 8 connections x 200/s", rate)
	}
	for _, f := range flooders {
		f.Close()
	}
	sc.Close()
	waitFor(t, "every stream accounted for", func() bool {
		c := s.Counts()
		return c.StreamsAccepted() == c[EventStreamReceived]+c[EventStreamLost]+c[EventStreamReset]+c[EventStreamTimeout]
	})
	waitFor(t, "goroutines back down", func() bool { return runtime.NumGoroutine() < base+50 })
}
