package stages

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// The slot clock ticks its actor, and once stop returns it sends nothing
// more: no tick follows a marker sent after stop, in the five periods
// after it. Stopped while ticking, 200 times at a 20 us period, it is
// free of data races (-race), which protoactor-go's SendRepeatedly was
// not (its timer read the state its cancel wrote).
func TestSlotClock(t *testing.T) {
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	type marker struct{}
	var ticks, afterMarker atomic.Int64
	var marked atomic.Bool
	var clock atomic.Pointer[slotClock]
	stored := make(chan struct{}) // closed once clock is set
	got := make(chan struct{}, 1)
	pid := sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch ctx.Message().(type) {
		case slotTickMsg:
			<-stored
			clock.Load().handled()
			ticks.Add(1)
			if marked.Load() {
				afterMarker.Add(1)
			}
		case marker:
			marked.Store(true)
			got <- struct{}{}
		}
	}))
	const period = time.Millisecond
	clock.Store(startSlotClock(period, func() { sys.Root.Send(pid, slotTickMsg{}) }))
	close(stored)
	deadline := time.Now().Add(10 * time.Second)
	for ticks.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d ticks in 10 s of a 1 ms clock", ticks.Load())
		}
		time.Sleep(period)
	}
	clock.Load().stop()
	sys.Root.Send(pid, marker{})
	<-got
	time.Sleep(5 * period)
	if n := afterMarker.Load(); n != 0 {
		t.Fatalf("%d ticks after stop returned", n)
	}

	for i := range 200 {
		c := startSlotClock(20*time.Microsecond, func() {})
		time.Sleep(time.Duration(i%7) * 10 * time.Microsecond)
		c.stop()
	}
}

// A slot clock whose receiver is stuck never has more than one tick
// pending: the periods that pass are coalesced into the pending tick, and
// counted, rather than queued one a period (which, at --slot-time 100us,
// grew the banking actor's mailbox by the thousand and held a stop behind
// it). Once the receiver takes the tick it learns how late it was, and
// the clock sends again.
func TestSlotClockCoalesces(t *testing.T) {
	var sent atomic.Int64 // ticks sent and not yet taken: the receiver is stuck
	const period = time.Millisecond
	c := startSlotClock(period, func() { sent.Add(1) })
	defer c.stop()
	deadline := time.Now().Add(10 * time.Second)
	for c.late.Load() < 20 {
		if n := sent.Load(); n > 1 {
			t.Fatalf("%d ticks pending for a stuck receiver (%d periods late), want at most 1", n, c.late.Load())
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d periods counted late in 10 s of a 1 ms clock (%d ticks pending)", c.late.Load(), sent.Load())
		}
		time.Sleep(period)
	}
	if n := sent.Load(); n != 1 {
		t.Fatalf("%d ticks pending for a stuck receiver, want 1", n)
	}
	sent.Add(-1)
	if late := c.handled(); late < 20 {
		t.Fatalf("a tick taken after 20 periods or more says it is %d late", late)
	}
	for sent.Load() == 0 { // taken: the next period sends again
		if time.Now().After(deadline) {
			t.Fatal("no tick after the pending one was taken")
		}
		time.Sleep(period)
	}
}

// BankingConfig.Validate refuses a slot time below MinSlotTime (the
// clock's lower bound), naming the bound; zero is the default.
func TestBankingConfigSlotTime(t *testing.T) {
	for _, c := range []struct {
		slot time.Duration
		ok   bool
	}{
		{0, true},
		{MinSlotTime, true},
		{DefaultSlotTime, true},
		{MinSlotTime - 1, false},
		{100 * time.Microsecond, false},
		{1, false},
		{-time.Millisecond, false},
	} {
		err := BankingConfig{SlotTime: c.slot}.Validate()
		if c.ok {
			if err != nil {
				t.Errorf("slot time %v: %v", c.slot, err)
			}
			continue
		}
		if !errors.Is(err, ErrConfig) {
			t.Errorf("slot time %v: Validate() = %v, want ErrConfig", c.slot, err)
		} else if c.slot > 0 && !strings.Contains(err.Error(), MinSlotTime.String()) {
			t.Errorf("slot time %v: %q does not name the minimum, %v", c.slot, err, MinSlotTime)
		}
	}
}
