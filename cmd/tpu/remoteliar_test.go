package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tpugo/tpu/remote"
	"github.com/tpugo/tpu/remote/wire"
)

// liarEnv, set to "flip" in a tpu verifier child's environment, makes it
// a lying verifier: every verdict inverted (verified for a bad
// signature, bad for a good one). Only this test binary reads it.
const liarEnv = "TPU_TEST_VERIFIER_LIES"

func init() {
	if os.Getenv(liarEnv) == "flip" && os.Getenv(childArgsEnv) != "" {
		tamperVerdicts = flipVerdicts
	}
}

// flipVerdicts inverts verified and bad-signature verdicts.
func flipVerdicts(vs []byte) {
	for i, v := range vs {
		switch wire.Verdict(v) {
		case wire.Verdict_VERDICT_VERIFIED:
			vs[i] = byte(wire.Verdict_VERDICT_BAD_SIGNATURE)
		case wire.Verdict_VERDICT_BAD_SIGNATURE:
			vs[i] = byte(wire.Verdict_VERDICT_VERIFIED)
		}
	}
}

// lockedBuffer is a bytes.Buffer for writers on several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// isolatedEnv names the test a child process runs on its own (isolate).
const isolatedEnv = "TPU_TEST_ISOLATED"

// isolate runs t in a child process of its own and reports true, its
// result reported; in that child it reports false and t goes on there.
// A test whose leader starts protoactor's remote in-process needs it:
// remote.Start sets gRPC's global logger, which the race detector
// reports against gRPC connections (OTLP's, a remote's) that other tests
// of the process left behind.
func isolate(t *testing.T) bool {
	t.Helper()
	if os.Getenv(isolatedEnv) == t.Name() {
		return false
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), isolatedEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("%s in its own process: %v\n%s", t.Name(), err, out)
	}
	if testing.Verbose() {
		t.Logf("in its own process:\n%s", out)
	}
	return true
}

// TestRunWithLyingVerifier: tpu run's leader (--sigverify-local=false,
// --remote-audit 1) with two verifier processes, one honest and one a
// test build that inverts every verdict. The audit catches the liar at
// its first reply and cuts it off (it never gets more than its credits'
// worth of passes); its passes are checked at the leader; no forged
// transfer executes: bad_signature is the load's bad signatures, less at
// most what was lost before sigverify, and no more transactions execute
// than the load had valid ones. The accounting holds. /metrics, scraped
// after the run, says what the summary's remote counts say.
//
// The audit fraction is 1 because it is the only one at which no lie
// can pass: at fraction a, a pass of n packets from a verifier that
// inverts everything escapes the audit with probability (1-a)^n (52% for
// 64 packets at the default 0.01), and its verdicts are applied.
func TestRunWithLyingVerifier(t *testing.T) {
	if testing.Short() {
		t.Skip("three processes and a load: not in -short")
	}
	if isolate(t) {
		return
	}
	honest := startChild(t, "verifier", "--listen", "127.0.0.1:0", "--workers", "1")
	liar := startChildEnv(t, []string{liarEnv + "=flip"}, "verifier", "--listen", "127.0.0.1:0", "--workers", "1")
	honestAddr := logged(t, honest.await(t, 1, "msg=\"verifier serving\""), "addr")
	liarAddr := logged(t, liar.await(t, 1, "msg=\"verifier serving\""), "addr")
	liar.await(t, 1, "tampers with its verdicts")

	dir := t.TempDir()
	fs := flag.NewFlagSet("tpu run", flag.ContinueOnError)
	f := defineRunFlags(fs)
	args := []string{"--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--ws-addr", "", "--metrics-addr", "127.0.0.1:0",
		"--ledger", filepath.Join(dir, "ledger"), "--summary-json", filepath.Join(dir, "summary.json"),
		"--duration", "0", "--count", "3000", "--invalid-fraction", "0.3", "--sync", "nosync",
		"--verifiers", liarAddr + "," + honestAddr, "--sigverify-local=false", "--remote-audit", "1"}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	cfg, err := graphConfig(*f)
	if err != nil {
		t.Fatal(err)
	}
	// protoactor's goroutines log to errOut after the run (the liar's
	// connection lost when it stops): a buffer safe to share.
	var out bytes.Buffer
	errOut := &lockedBuffer{}
	env := &cliEnv{stdout: &out, stderr: errOut, getenv: func(string) string { return "" }}
	log := slog.New(slog.NewTextHandler(errOut, nil))
	prov, closeTrace, err := startTrace(*f, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer closeTrace()
	if code, err := runGraph(env, *f, cfg, prov, nil, log); code != 0 {
		t.Fatalf("exit %d: %v\n%s\n%s", code, err, out.String(), errOut.String())
	}
	s := readSummary(t, filepath.Join(dir, "summary.json"))
	r := s.Remote
	if r == nil {
		t.Fatalf("no remote counts in the summary: %+v", s)
	}
	if !s.AccountingOK || s.LiveBatches != 0 {
		t.Errorf("accounting ok %v, live batches %d", s.AccountingOK, s.LiveBatches)
	}

	// The liar: caught, cut off, never served more than its credits.
	if r.Liars != 1 || r.Lied == 0 || r.Remote == 0 {
		t.Errorf("remote counts %+v: want one liar cut off, passes verified by the honest one", *r)
	}
	if !strings.Contains(errOut.String(), "failed the audit; cut off") || !strings.Contains(errOut.String(), liarAddr) {
		t.Errorf("the leader did not log the liar's cut-off:\n%s", errOut.String())
	}
	if r.Passes != r.Remote+r.Local || r.Local != r.Timeout+r.Retry+r.Lied+r.Refused+r.NoWorker {
		t.Errorf("remote counts do not add up: %+v", *r)
	}
	liarOut, err := liar.interrupt(t)
	if err != nil {
		t.Fatalf("the liar: %v", err)
	}
	var ls remote.ServerStats
	_, js, ok := strings.Cut(liarOut, "stopped; ")
	js, _, _ = strings.Cut(js, "\n") // the stats' line; the key cache's follows
	if !ok || json.Unmarshal([]byte(js), &ls) != nil {
		t.Fatalf("no stats from the liar:\n%s", liarOut)
	}
	if ls.Requests == 0 || ls.Requests > remote.DefaultCredits {
		t.Errorf("the liar answered %d requests: want 1 to %d (cut off at its first reply, with its credits in flight)", ls.Requests, remote.DefaultCredits)
	}

	// No forged transfer executed.
	var sent uint64
	for _, n := range s.SentByKind {
		sent += n
	}
	if sent != 3000 {
		t.Fatalf("sent by kind %v: %d in all, want 3000", s.SentByKind, sent)
	}
	bad, lost := s.SentByKind["bad_signature"], s.SocketDropped+s.Outcomes["no_credits"]+s.Outcomes["shed"]
	if got := s.Outcomes["bad_signature"]; got > bad || got+lost < bad || bad == 0 {
		t.Errorf("bad_signature %d: the load had %d, %d lost before sigverify", got, bad, lost)
	}
	if s.Executed > s.SentByKind["valid"] || s.Executed == 0 {
		t.Errorf("executed %d: the load had %d valid transactions", s.Executed, s.SentByKind["valid"])
	}

	// /metrics says what the summary says.
	m := scrape(t, prov.MetricsURL())
	expect := func(what string, got float64, want uint64) {
		t.Helper()
		if got != float64(want) {
			t.Errorf("%s: /metrics %v, summary %d", what, got, want)
		}
	}
	expect("passes sent", m.sum("tpu_remote_passes_sent_total", nil), r.Passes)
	expect("packets sent", m.sum("tpu_remote_packets_sent_total", nil), r.Packets)
	for end, n := range map[string]uint64{"remote": r.Remote, "remote_timeout": r.Timeout, "remote_retry": r.Retry,
		"lied": r.Lied, "refused": r.Refused, "no_worker": r.NoWorker} {
		expect("passes ended "+end, m.sum("tpu_remote_passes_total", map[string]string{"end": end}), n)
	}
	if n := len(m["tpu_remote_passes_total"]); n != 6 {
		t.Errorf("%d tpu_remote_passes_total series, want 6 (zeros included)", n)
	}
	expect("passes ended", m.sum("tpu_remote_passes_total", nil), r.Remote+r.Local)
	expect("too big", m.sum("tpu_remote_too_big_total", nil), r.TooBig)
	expect("late replies", m.sum("tpu_remote_late_replies_total", nil), r.Late)
	expect("audited", m.sum("tpu_remote_audited_packets_total", nil), r.Audited)
	expect("liars", m.sum("tpu_remote_liars_total", nil), r.Liars)
	// After the stop every pass has ended: each verifier in service (the
	// honest one at most) has all its credits free.
	vs := m.sum("tpu_remote_verifiers", nil)
	if len(m["tpu_remote_verifiers"]) != 1 || vs > 1 || m.sum("tpu_remote_credits_free", nil) != vs*remote.DefaultCredits {
		t.Errorf("/metrics: %v verifiers in service, %v credits free: want at most the honest one, all its %d credits free",
			m["tpu_remote_verifiers"], m["tpu_remote_credits_free"], remote.DefaultCredits)
	}
	if r.Audited == 0 || r.Audited > r.Packets {
		t.Errorf("audited %d of %d packets sent, at --remote-audit 1", r.Audited, r.Packets)
	}
	t.Logf("remote %+v; sent %v; outcomes %v", *r, s.SentByKind, s.Outcomes)
}
