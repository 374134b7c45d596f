package stages

import (
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
	got := make(chan struct{}, 1)
	pid := sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch ctx.Message().(type) {
		case slotTickMsg:
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
	stop := startSlotClock(sys.Root, pid, period)
	deadline := time.Now().Add(10 * time.Second)
	for ticks.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d ticks in 10 s of a 1 ms clock", ticks.Load())
		}
		time.Sleep(period)
	}
	stop()
	sys.Root.Send(pid, marker{})
	<-got
	time.Sleep(5 * period)
	if n := afterMarker.Load(); n != 0 {
		t.Fatalf("%d ticks after stop returned", n)
	}

	sink := sys.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
	for i := range 200 {
		stop := startSlotClock(sys.Root, sink, 20*time.Microsecond)
		time.Sleep(time.Duration(i%7) * 10 * time.Microsecond)
		stop()
	}
}
