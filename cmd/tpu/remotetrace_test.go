package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tpugo/tpu/trace"
)

// TestRemoteSpanParentIsTheLeaders: tpu run (--trace-sample 1,
// --trace-out) with every signature checked by a tpu verifier
// (--trace-out): each of the verifier's sigverify.remote spans is the
// child of a span in the leader's file, the sigverify hop's, in the
// same trace; the OTel context crossed the process.
func TestRemoteSpanParentIsTheLeaders(t *testing.T) {
	if testing.Short() {
		t.Skip("two processes and a load: not in -short")
	}
	dir := t.TempDir()
	vspans, lspans := filepath.Join(dir, "verifier.jsonl"), filepath.Join(dir, "leader.jsonl")
	v := startChild(t, "verifier", "--listen", "127.0.0.1:0", "--workers", "1", "--trace-out", vspans)
	addr := logged(t, v.await(t, 1, "msg=\"verifier serving\""), "addr")
	leader := startChild(t, "run", "--ledger", filepath.Join(dir, "ledger"), "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--ws-addr", "",
		"--count", "2000", "--duration", "0", "--sync", "nosync", "--trace-sample", "1", "--trace-out", lspans,
		"--verifiers", addr, "--sigverify-local=false")
	if err := leader.cmd.Wait(); err != nil {
		t.Fatalf("tpu run: %v\n%s", err, leader.stderr())
	}
	if _, err := v.interrupt(t); err != nil { // its spans flushed
		t.Fatalf("the verifier: %v", err)
	}
	read := func(path string) []trace.SpanRecord {
		t.Helper()
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		spans, err := trace.ReadSpans(f)
		if err != nil {
			t.Fatal(err)
		}
		return spans
	}
	byID := map[string]trace.SpanRecord{}
	for _, s := range read(lspans) {
		byID[s.SpanID] = s
	}
	remote := read(vspans)
	if len(remote) == 0 {
		t.Fatal("the verifier recorded no span")
	}
	for _, s := range remote {
		p, ok := byID[s.ParentID]
		if s.Name != "sigverify.remote" || !ok || p.Name != "sigverify" || p.TraceID != s.TraceID {
			t.Fatalf("verifier span %s (trace %s, parent %s): want sigverify.remote, a child of the leader's sigverify span in its trace; the leader's span is %+v", s.Name, s.TraceID, s.ParentID, p)
		}
	}
	t.Logf("%d remote spans, each a child of the leader's sigverify span", len(remote))
}
