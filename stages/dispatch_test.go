package stages

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tpugo/tpu/trace/cpustage"
)

// goid returns the calling goroutine's id, from its stack's header.
func goid() uint64 {
	var buf [64]byte
	b := bytes.TrimPrefix(buf[:runtime.Stack(buf[:], false)], []byte("goroutine "))
	id, _ := strconv.ParseUint(string(b[:bytes.IndexByte(b, ' ')]), 10, 64)
	return id
}

// recvActor records the goroutine each message is received on, and
// answers each int with itself.
type recvActor struct {
	got  []int
	gids map[uint64]int
}

func (a *recvActor) Receive(ctx actor.Context) {
	if n, ok := ctx.Message().(int); ok {
		a.got = append(a.got, n)
		a.gids[goid()]++
		if ctx.Sender() != nil {
			ctx.Respond(n)
		}
	}
}

// TestOwnGoroutine: an actor on an ownGoroutine dispatcher receives every
// message, in order, all on the one goroutine, though its mailbox idles
// between them (each is a request answered before the next is sent, and
// every tenth burst of 20 is sent without waiting); after stop that
// goroutine has exited and a run scheduled later still runs.
func TestOwnGoroutine(t *testing.T) {
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	d := newOwnGoroutine(cpustage.Banking)
	a := &recvActor{gids: map[uint64]int{}}
	pid := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return a }, actor.WithDispatcher(d)))
	n := 0
	for i := range 200 {
		if i%10 == 0 {
			for range 20 {
				sys.Root.Send(pid, n)
				n++
			}
		}
		if _, err := sys.Root.RequestFuture(pid, n, 5*time.Second).Result(); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if err := sys.Root.StopFuture(pid).Wait(); err != nil {
		t.Fatal(err)
	}
	d.stop()
	select {
	case <-d.exited:
	default:
		t.Error("the dispatcher's goroutine did not exit at stop")
	}
	if len(a.got) != n {
		t.Fatalf("received %d of %d", len(a.got), n)
	}
	for i, m := range a.got {
		if m != i {
			t.Fatalf("message %d received as the %dth", m, i)
		}
	}
	if len(a.gids) != 1 {
		t.Errorf("received on %d goroutines: %v", len(a.gids), a.gids)
	}
	ran := make(chan struct{})
	d.Schedule(func() { close(ran) })
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("a run scheduled after stop did not run")
	}
	d.stop() // again: nothing to do
}

// BenchmarkMailboxRun measures a message to an actor whose mailbox idles
// between messages, as banking's mostly does (the sender waits for the
// receive to end before it sends the next), with a receive that needs
// stack=N KiB of frames (a scheduler call needs several): on protoactor's
// default dispatcher each message gets a new goroutine, whose stack
// grows again; on ownGoroutine the goroutine and its stack are kept.
func BenchmarkMailboxRun(b *testing.B) {
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	for _, kib := range []int{0, 16} {
		for _, c := range []struct {
			name string
			disp func() (actor.Dispatcher, func())
		}{
			{"default", func() (actor.Dispatcher, func()) { return actor.NewDefaultDispatcher(throughput), func() {} }},
			{"own", func() (actor.Dispatcher, func()) { d := newOwnGoroutine(cpustage.Rest); return d, d.stop }},
		} {
			b.Run(fmt.Sprintf("stack=%d/dispatcher=%s", kib, c.name), func(b *testing.B) {
				d, stop := c.disp()
				pid := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return deepActor(kib) }, actor.WithDispatcher(d)))
				done := make(chan struct{}, 1)
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					sys.Root.Send(pid, done)
					<-done
				}
				b.StopTimer()
				if err := sys.Root.StopFuture(pid).Wait(); err != nil {
					b.Fatal(err)
				}
				stop()
			})
		}
	}
}

// deepActor answers on the channel it is sent after using that many KiB
// of stack.
type deepActor int

func (a deepActor) Receive(ctx actor.Context) {
	if done, ok := ctx.Message().(chan struct{}); ok {
		deep(int(a))
		done <- struct{}{}
	}
}

// deep recurses n frames of about 1 KiB each.
//
//go:noinline
func deep(n int) byte {
	var pad [1000]byte
	pad[n%len(pad)] = byte(n)
	if n == 0 {
		return pad[0]
	}
	return deep(n-1) + pad[n%len(pad)]
}
