package main

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"

	"github.com/tpugo/tpu/banking/bankingtrace"
	"github.com/tpugo/tpu/rpc"
	"github.com/tpugo/tpu/stages"
	"github.com/tpugo/tpu/stages/sigverify"
)

// testNodeConfig is a node on a fresh ledger under dir with a banking
// trace, an RPC on a free port and a PubSub at pubsubAddr; OpenRecorder
// collects the recorders it opens in recs.
func testNodeConfig(t *testing.T, dir, pubsubAddr string, log *slog.Logger, recs *[]*bankingtrace.Recorder) nodeConfig {
	t.Helper()
	backend, err := sigverify.NewBackend("")
	if err != nil {
		t.Fatal(err)
	}
	var cfg stages.Config
	cfg.Fetch.Addr = "127.0.0.1:0"
	cfg.Sigverify.Verify.Backend = backend
	cfg.Banking.Bank = bank.Config{Dir: filepath.Join(dir, "ledger"), Sync: ledger.NoSync,
		Genesis: bank.GenesisConfig{Seed: "tpu", Accounts: 8, BlockhashSeed: "node-test"}}
	return nodeConfig{Graph: cfg, Log: log, RPC: &rpc.Config{Addr: "127.0.0.1:0", Seed: "tpu"}, PubSubAddr: pubsubAddr,
		OpenRecorder: func(banking *stages.BankingConfig) (*bankingtrace.Recorder, error) {
			r, err := bankingtrace.NewRecorder(bankingtrace.Config{Dir: filepath.Join(dir, "trace"), Bank: banking.Bank,
				Scheduler: banking.Scheduler, Driven: true, Logger: log})
			if err == nil {
				*recs = append(*recs, r)
			}
			return r, err
		}}
}

// TestNodeStartFails: when the last part of a node cannot start (its
// PubSub's address is taken), startNode stops what it had started: the
// RPC's port is free again, the ledger is closed (it opens again), and
// the recorder is closed (its trace reads back: one left open has not
// written even its file header).
func TestNodeStartFails(t *testing.T) {
	dir := t.TempDir()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	var out bytes.Buffer
	log := slog.New(slog.NewTextHandler(&out, nil))
	var recs []*bankingtrace.Recorder
	cfg := testNodeConfig(t, dir, taken.Addr().String(), log, &recs)
	if n, err := startNode(cfg); err == nil {
		n.Close()
		t.Fatal("started with its PubSub's address taken")
	}
	if len(recs) != 1 {
		t.Fatalf("%d recorders opened, want 1", len(recs))
	}
	// The RPC had started (its URL logged), and was stopped.
	var rpcURL string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, "msg=json-rpc") {
			rpcURL = logged(t, l, "url")
		}
	}
	u, err := url.Parse(rpcURL)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", u.Host)
	if err != nil {
		t.Fatalf("the RPC's address %s is still held: %v", u.Host, err)
	}
	l.Close()
	// The graph was stopped: its ledger is closed.
	b, err := bank.Open(cfg.Graph.Banking.Bank)
	if err != nil {
		t.Fatalf("the ledger is still held: %v", err)
	}
	b.Close()
	// The recorder was closed: its trace reads back whole.
	rd, err := bankingtrace.Open(filepath.Join(dir, "trace"))
	if err != nil {
		t.Fatalf("the banking trace: %v", err)
	}
	rd.Close()
}

// TestNodeStopClose: Stop stops the services and the graph, Close then
// the recorder; both may be called again and return their first result.
func TestNodeStopClose(t *testing.T) {
	dir := t.TempDir()
	var recs []*bankingtrace.Recorder
	n, err := startNode(testNodeConfig(t, dir, "127.0.0.1:0", slog.New(slog.DiscardHandler), &recs))
	if err != nil {
		t.Fatal(err)
	}
	if n.rpc == nil || n.ps == nil || n.rec == nil {
		t.Fatalf("started without a part: rpc %v, pubsub %v, recorder %v", n.rpc, n.ps, n.rec)
	}
	if err := n.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n.rpc != nil || n.ps != nil {
		t.Fatal("Stop left a service running")
	}
	if err := n.Stop(context.Background()); err != nil {
		t.Fatalf("Stop again: %v", err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatalf("Close again: %v", err)
	}
	if live := n.graph.Pool().Stats().Live; live != 0 {
		t.Fatalf("%d batches live after Close", live)
	}
}
