package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tpugo/tpu/banking/loadgen"
	"github.com/tpugo/tpu/stages"
	"github.com/tpugo/tpu/trace"
)

// runInProcess runs tpu run's pipeline in this process with args (a
// ledger, a summary JSON, no RPC and loopback ports added), and returns
// its summary, its stdout and stderr, and its trace provider (still
// serving /metrics, if asked).
func runInProcess(t *testing.T, args ...string) (summary, string, string, *trace.Provider) {
	t.Helper()
	dir := t.TempDir()
	fs := flag.NewFlagSet("tpu run", flag.ContinueOnError)
	f := defineRunFlags(fs)
	all := append([]string{"--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--ws-addr", "", "--sync", "nosync",
		"--ledger", filepath.Join(dir, "ledger"), "--summary-json", filepath.Join(dir, "summary.json")}, args...)
	if err := fs.Parse(all); err != nil {
		t.Fatal(err)
	}
	settleDefaults(fs, f)
	cfg, err := graphConfig(*f)
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	env := &cliEnv{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	prov, closeTrace, err := startTrace(*f, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeTrace)
	if code, err := runGraph(env, *f, cfg, prov, nil, log); code != 0 {
		t.Fatalf("exit %d: %v\n%s\n%s", code, err, out.String(), errOut.String())
	}
	s := readSummary(t, filepath.Join(dir, "summary.json"))
	return s, out.String(), errOut.String(), prov
}

// TestLoadExhausted: a closed-loop run whose --count runs out long
// before its --duration stops offering then, rather than idle to the
// end; says so ("load exhausted at"); and reports a tx/s over the time
// load was offered, within 10% of the rate measured while it was (what
// had executed when the load ran out), not the count over --duration.
// The two rates differ by what was in flight when the load ran out, and
// the closed loop bounds that (stages.Graph.Accepting): a sigverify
// pass (--sigverify-max-pending), the banking credits, and banking's
// buffer up to stages.AcceptWindow(--buffer). Without the last bound,
// banking's buffer grew to a fifth of this run in the plain build, where
// banking is slower than sigverify (CI: ratio 1.25).
func TestLoadExhausted(t *testing.T) {
	const duration = 120 * time.Second
	const count, buffer, maxPending, credits = 40000, 2048, 512, 8
	start := time.Now()
	s, out, errOut, _ := runInProcess(t, "--duration", duration.String(), "--count", strconv.Itoa(count), "--accounts", "256",
		"--banking-credits", strconv.Itoa(credits), "--sigverify-max-pending", strconv.Itoa(maxPending), "--buffer", strconv.Itoa(buffer))
	// Signing comes before --duration starts, and under -race on a
	// loaded machine it alone can take a minute: leave it out.
	m := regexp.MustCompile(`signed \d+ transactions over (?:one blockhash|\d+ blockhashes) in ([0-9.]+)s;`).FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("no signing time in stderr:\n%s", errOut)
	}
	signing, _ := strconv.ParseFloat(m[1], 64)
	// The bank's latest blockhash is asked for after 32,768 of the 40,000
	// (loadgen.RefreshWindow): once signing those took over two slots,
	// a slot ended meanwhile and the rest is signed over its blockhash.
	first := signing * float64(loadgen.RefreshWindow) / count
	if want := 2; first > 2*stages.DefaultSlotTime.Seconds() && s.LoadBlockhashes != want ||
		s.LoadBlockhashes < 1 || s.LoadBlockhashes > 2 || !strings.Contains(errOut, fmt.Sprintf("over %s in", hashesSaid(s.LoadBlockhashes))) {
		t.Errorf("signed in %.1fs over %d blockhashes (first window %.2fs):\n%s", signing, s.LoadBlockhashes, first, errOut)
	}
	if wall := time.Since(start) - time.Duration(signing*float64(time.Second)); wall > duration/2 {
		t.Fatalf("the run took %v after signing: it idled after its load ran out", wall)
	}
	if !strings.Contains(out, "load exhausted at") {
		t.Errorf("the summary does not say the load ran out:\n%s", out)
	}
	if s.LoadExhaustedS <= 0 || s.LoadExhaustedS >= duration.Seconds() {
		t.Fatalf("load_exhausted_s %v, want in (0, %v)", s.LoadExhaustedS, duration.Seconds())
	}
	if math.Abs(s.Seconds-s.LoadExhaustedS) > 0.5 {
		t.Errorf("seconds %v, want the %v s load was offered", s.Seconds, s.LoadExhaustedS)
	}
	if s.Executed < count/2 {
		t.Fatalf("executed %d of %d: %v", s.Executed, count, s.Outcomes)
	}
	// What executed after the load ran out: the closed loop's bound,
	// with a batch of slack each way (a sigverify pass in fetch's and the
	// sender's batches).
	drained := (s.TPS - s.TPSWhileOffered) * s.Seconds
	if bound := float64(stages.AcceptWindow(buffer) + maxPending + credits*64 + 2*64); drained > bound {
		t.Errorf("%.0f executed after the load ran out, want at most %.0f: the closed loop let a backlog build", drained, bound)
	}
	if r := s.TPS / s.TPSWhileOffered; r < 0.9 || r > 1.1 {
		t.Errorf("tps %.0f, rate while offered %.0f: ratio %.2f, want within 10%%", s.TPS, s.TPSWhileOffered, r)
	}
	t.Logf("exhausted at %.2f s: tps %.0f, while offered %.0f, %.0f executed after", s.LoadExhaustedS, s.TPS, s.TPSWhileOffered, drained)
}

// TestLoadCount: --count wins; open-loop signs rate x duration;
// closed-loop the ceiling x duration, more with invalid transactions,
// never more than maxLoad nor less than 1.
func TestLoadCount(t *testing.T) {
	for _, c := range []struct {
		f       runFlags
		ceiling float64
		want    int
	}{
		{runFlags{count: 7, duration: time.Second}, 1e5, 7},
		{runFlags{rate: 1000, duration: 3 * time.Second}, 1e5, 3000},
		{runFlags{duration: 10 * time.Second}, 150_000, 1_500_000},
		{runFlags{duration: 10 * time.Second, invalid: 0.5}, 100_000, 2_000_000},
		{runFlags{duration: 60 * time.Second}, 200_000, maxLoad},
		{runFlags{duration: time.Millisecond}, 10, 1},
	} {
		if got := loadCount(c.f, c.ceiling); got != c.want {
			t.Errorf("%+v, ceiling %v: %d, want %d", c.f, c.ceiling, got, c.want)
		}
	}
}
