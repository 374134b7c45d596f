package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fileSizeEnv makes a child (startChild) lower its file size limit
// (RLIMIT_FSIZE) to this many bytes before it runs: a write past it fails
// with EFBIG (Go ignores SIGXFSZ), as on a disk that has filled.
const fileSizeEnv = "TPU_TEST_FSIZE"

func init() {
	if v := os.Getenv(fileSizeEnv); v != "" && os.Getenv(childArgsEnv) != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err == nil {
			err = syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: n, Max: n})
		}
		if err != nil {
			panic(err)
		}
	}
}

// A ledger that fails while tpu run runs under load (its files can grow
// no more: a full disk) stops the run at once, rather than buffer what
// can never commit until the load ends: one line saying why, the
// summary, exit 1, no panic.
func TestLedgerFailsWhileRunning(t *testing.T) {
	// The ledger fills at about a quarter of the load, which lasts 10 s.
	// 10,000 transactions sign in seconds even under -race (about 2,700
	// a second a core), well inside their blockhash's 60 s: a load that
	// signed for longer would all be blockhash_not_found, and the ledger
	// would never fill.
	t.Setenv(fileSizeEnv, strconv.Itoa(256<<10)) // about 2,500 transactions
	const count = 10_000                         // 10 s at the rate
	start := time.Now()
	c := startChild(t, "run", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--ledger", filepath.Join(t.TempDir(), "ledger"),
		"--duration", "60s", "--rate", "1000", "--count", strconv.Itoa(count), "--accounts", "64")
	c.await(t, 1, "ledger failed", "file too large")
	select {
	case <-c.drained:
	case <-time.After(30 * time.Second):
		t.Fatalf("tpu run still running 30 s after its ledger failed:\n%s", c.stderr())
	}
	err := c.cmd.Wait()
	out, errs := c.stdout.String(), c.stderr()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit %v after the ledger failed, want status 1:\n%s\n%s", err, errs, out)
	}
	if strings.Contains(errs, "panic") || strings.Contains(out, "panic") {
		t.Fatalf("a panic:\n%s", errs)
	}
	var final []string
	for _, l := range strings.Split(errs, "\n") {
		if strings.HasPrefix(l, "tpu run: ") {
			final = append(final, l)
		}
	}
	if len(final) != 1 || !strings.Contains(final[0], "file too large") || strings.Contains(final[0], "\n") {
		t.Fatalf("want one line saying why tpu run failed, got %q:\n%s", final, errs)
	}
	// The lines after it are the error's own, if it had several.
	if i := strings.Index(errs, final[0]); strings.TrimSpace(errs[i+len(final[0]):]) != "" {
		t.Fatalf("more after the error line:\n%s", errs[i:])
	}
	m := regexp.MustCompile(`sent (\d+), received`).FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, "accounting ok: true") {
		t.Fatalf("summary:\n%s", out)
	}
	if sent, _ := strconv.Atoi(m[1]); sent >= count {
		t.Fatalf("the load ran to its end (%d sent) on a failed ledger", sent)
	}
	// What banking dropped unrun says why: the ledger failed
	// (ledger_failed), not a stop that could not wait (shutdown). There
	// may be none: the run stops as the failure shows and may have
	// nothing buffered then, so their number is logged, not required
	// (stages' TestLedgerFailureDrainsSigverify holds a batch back to
	// make some).
	if regexp.MustCompile(`(?m)^\s*dropped shutdown\s`).MatchString(out) {
		t.Fatalf("packets dropped as shutdown after a ledger failure, want ledger_failed:\n%s", out)
	}
	lf := regexp.MustCompile(`dropped ledger_failed\s+(\d+)`).FindStringSubmatch(out)
	t.Logf("stopped %v after start: %s; ledger_failed %v", time.Since(start).Round(time.Millisecond), final[0], lf)
}
