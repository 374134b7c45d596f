package stages

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tpugo/tpu/banking/bank"
)

// records is a slog.Handler that keeps what it is handed.
type records struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec.Clone())
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

// find returns the first record with message msg.
func (r *records) find(msg string) (slog.Record, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range r.recs {
		if rec.Message == msg {
			return rec, true
		}
	}
	return slog.Record{}, false
}

// TestActorPanicStopsTheGraph: a panic in a stage's actor (here a
// malformed completion that banking dereferences) is logged with its
// stack, counted, and fails the graph: Done closes, Err and Stop name it,
// and the actor is not restarted on its stale state.
func TestActorPanicStopsTheGraph(t *testing.T) {
	logs := &records{}
	g, err := Start(Config{
		Fetch:   FetchConfig{Addr: "127.0.0.1:0"},
		Banking: BankingConfig{Bank: bank.Config{Genesis: bank.GenesisConfig{Seed: "supervision", Accounts: 4}}, SlotTime: time.Hour},
		Logger:  slog.New(logs),
	})
	if err != nil {
		t.Fatal(err)
	}
	if g.Err() != nil || g.Panics() != 0 {
		t.Fatalf("a fresh graph has failed: %v", g.Err())
	}
	g.system.Root.Send(g.bankPID, workDoneMsg{}) // a nil batch
	select {
	case <-g.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the graph did not fail")
	}
	if err := g.Err(); err == nil || !strings.Contains(err.Error(), "banking actor panicked") {
		t.Fatalf("Err = %v", err)
	}
	if g.Panics() != 1 {
		t.Fatalf("%d panics counted, want 1", g.Panics())
	}
	rec, ok := logs.find("stage panicked")
	if !ok || rec.Level != slog.LevelError {
		t.Fatalf("no error record of the panic: %+v", rec)
	}
	var stack string
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "stack" {
			stack = a.Value.String()
		}
		return true
	})
	if !strings.Contains(stack, "(*bankingStage).Receive") {
		t.Fatalf("the record's stack does not show where: %q", stack)
	}
	// Not restarted: the stage is gone, not answering from stale state.
	if _, err := g.request(g.bankPID, statsReq{}, 5*time.Second); err == nil {
		t.Fatal("the banking actor still answers after its panic")
	}
	if err := g.Stop(context.Background()); !errors.Is(err, g.Err()) {
		t.Fatalf("Stop = %v, want the failure", err)
	}
	if g.Panics() != 1 {
		t.Fatalf("%d panics after Stop, want 1", g.Panics())
	}
	if _, ok := g.AccountsHash(); ok {
		t.Fatal("an accounts hash after a Stop that could not drain")
	}
	// protoactor's own lines went to the logger, its Info ones at Debug.
	if rec, ok := logs.find("actor system started"); !ok || rec.Level != slog.LevelDebug {
		t.Fatalf("protoactor's start line: %v %v", ok, rec.Level)
	}
}
