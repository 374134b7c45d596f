package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childArgsEnv makes the test binary run the CLI with these arguments
// (joined by newlines) instead of the tests: a real process to signal.
const childArgsEnv = "TPU_TEST_CLI_ARGS"

func TestMain(m *testing.M) {
	if args := os.Getenv(childArgsEnv); args != "" {
		env := &cliEnv{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
		os.Exit(runCLI(env, strings.Split(args, "\n")))
	}
	os.Exit(m.Run())
}

// TestSignalDrains runs tpu run in a child process, scrapes /metrics while
// it runs, interrupts it with SIGINT, and checks that it drained,
// committed, printed its summary and exited 0.
func TestSignalDrains(t *testing.T) {
	dir := t.TempDir()
	args := []string{"run", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "", "--ledger", filepath.Join(dir, "ledger"),
		"--duration", "60s", "--rate", "3000", "--count", "30000", "--accounts", "64", "--metrics-addr", "127.0.0.1:0"}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childArgsEnv+"="+strings.Join(args, "\n"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout strings.Builder
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stderr)
	live := 0
	var errLog strings.Builder
	var metricsURL string // logged as the port is bound, before the live lines
	for lines.Scan() {
		errLog.WriteString(lines.Text() + "\n")
		if _, u, ok := strings.Cut(lines.Text(), "msg=metrics url="); ok && metricsURL == "" {
			metricsURL = u
		}
		if strings.Contains(lines.Text(), " received ") {
			live++
			if live == 2 {
				break
			}
		}
	}
	if live < 2 || metricsURL == "" {
		t.Fatalf("no live lines or no metrics URL:\n%s", errLog.String())
	}
	resp, err := http.Get(metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`tpu_packets_total{`, `outcome="executed_ok"`, `tpu_hop_queue_wait_seconds_bucket{`, `hop="sigverify"`, `tpu_hop_service_seconds`, `tpu_pool_live`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, stderr)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGINT: %v\n%s", err, stdout.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no exit 30 s after SIGINT")
	}
	out := stdout.String()
	if !strings.Contains(out, "accounting ok: true") || !strings.Contains(out, "live batches after drain: 0") {
		t.Fatalf("summary after SIGINT:\n%s", out)
	}
}
