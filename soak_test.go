package tpu_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestSoakVerdict runs scripts/soak.sh's self-test: its judging function
// on synthetic sample tables must pass the flat ones (Pebble's memory
// rising under its bound included) and fail each one in which a metric
// grows (Go heap, Go memory, RSS beyond Pebble, descriptors, goroutines,
// live batches) or Pebble passes its bound, so that a real leak still
// fails the soak.
func TestSoakVerdict(t *testing.T) {
	for _, tool := range []string{"bash", "awk", "mktemp"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not on PATH", tool)
		}
	}
	out, err := exec.Command("bash", "scripts/soak.sh", "--self-test").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "self-test: ok") {
		t.Fatalf("soak.sh --self-test: %v\n%s", err, out)
	}
}
