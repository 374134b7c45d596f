package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestBenchLatency runs the bench short: a closed-loop ceiling and one
// open-loop level, printed as a markdown table with numbers in every
// cell, then the knobs, those given after -- among them.
func TestBenchLatency(t *testing.T) {
	code, out, errOut := run(t, "", "bench", "latency", "--duration", "250ms", "--levels", "50",
		"--", "--accounts", "64", "--sync", "nosync", "--dedup-max-age", "1s")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	lines := strings.Split(out, "\n")
	if len(lines) < 4 || !strings.HasPrefix(lines[0], "| offered tx/s | achieved tx/s | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms |") {
		t.Fatalf("no table:\n%s", out)
	}
	num := `[0-9]+(\.[0-9]+)?`
	ceiling := regexp.MustCompile(`^\| closed-loop \(ceiling\) \| ` + num + `( \| ` + num + `){5} \| closed-loop \|$`)
	open := regexp.MustCompile(`^\| 50%: ` + num + ` \| ` + num + `( \| ` + num + `){6} \|$`)
	if !ceiling.MatchString(lines[2]) || !open.MatchString(lines[3]) {
		t.Fatalf("rows:\n%s\n%s", lines[2], lines[3])
	}
	if !strings.Contains(out, "--dedup-max-age 1s") || !strings.Contains(out, "--sync nosync") || !strings.Contains(errOut, "ceiling ") {
		t.Errorf("knobs or progress missing:\n%s\n%s", out, errOut)
	}
}

func TestBenchLatencyFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--levels", "0"},
		{"--levels", "150"},
		{"--levels", "10,x"},
		{"--duration", "0s"},
		{"--", "--rate", "100"},
		{"--", "--ledger", "x"},
		{"--", "--fetch-credits", "0"},
		{"--", "--no-such-flag"},
		{"--", "stray"},
	} {
		if code, _, errOut := run(t, "", append([]string{"bench", "latency"}, args...)...); code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", args, code, errOut)
		}
	}
}
