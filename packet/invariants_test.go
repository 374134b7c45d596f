//go:build invariants

package packet

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestInvariantsPoisonOnRelease(t *testing.T) {
	p := newPool(t, Config{BatchCap: 2})
	b := p.Get()
	pk := b.Next()
	pk.Fill([]byte("hello, tpu"))
	stale := pk.Data() // a borrow kept past the release: a bug the poison exposes
	b.Release()
	for i, c := range stale {
		if c != Poison {
			t.Fatalf("byte %d of a released packet is %#x, want poison %#x", i, c, Poison)
		}
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Data on a released packet did not panic")
		}
	}()
	_ = pk.Data()
}

func TestInvariantsDoubleReleasePanics(t *testing.T) {
	p := newPool(t, Config{BatchCap: 1})
	b := p.Get()
	b.Release()
	func() {
		defer func() {
			r := recover()
			if r == nil || !strings.Contains(r.(string), "release of a released batch") {
				t.Fatalf("second release: recover() = %v", r)
			}
		}()
		b.Release()
	}()
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("retain of a released batch did not panic")
			}
		}()
		b.Retain()
	}()
}

func TestInvariantsLeakReported(t *testing.T) {
	var mu sync.Mutex
	var reports []string
	p := newPool(t, Config{BatchCap: 1, LeakHook: func(m string) {
		mu.Lock()
		reports = append(reports, m)
		mu.Unlock()
	}})
	// A released batch is not a leak, even when the pool drops it.
	p2 := newPool(t, Config{BatchCap: 1, MaxIdle: -1, LeakHook: func(m string) { t.Errorf("false leak: %s", m) }})
	p2.Get().Release()

	func() {
		b := p.Get() // dropped on the floor with its reference
		_ = b.Seq()
	}()
	deadline := time.Now().Add(5 * time.Second)
	for p.Stats().Leaks == 0 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if got := p.Stats().Leaks; got != 1 {
		t.Fatalf("leaks = %d, want 1", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reports) != 1 || !strings.Contains(reports[0], "leak") || !strings.Contains(reports[0], "TestInvariantsLeakReported") {
		t.Fatalf("reports %q", reports)
	}
	runtime.GC()
	if p2.Stats().Leaks != 0 {
		t.Fatal("a released batch was reported as a leak")
	}
}
