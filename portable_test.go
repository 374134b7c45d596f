package tpu_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestPortable builds the module for macOS and vets it for Windows, as
// scripts/test.sh does: Linux-only code (recvmmsg, SO_REUSEPORT) sits in
// build-tagged files beside a portable fallback, and this keeps it so.
func TestPortable(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the darwin build and the windows vet (a minute or two with a cold cache)")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH: cannot cross-build")
	}
	for _, c := range []struct {
		env  []string
		args []string
	}{
		{[]string{"GOOS=darwin", "GOARCH=arm64"}, []string{"build", "./..."}},
		{[]string{"GOOS=windows"}, []string{"vet", "./..."}},
	} {
		name := strings.Join(append(c.env, append([]string{"go"}, c.args...)...), " ")
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(gobin, c.args...)
			cmd.Env = append(append(os.Environ(), "CGO_ENABLED=0"), c.env...)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", name, err, out)
			}
		})
	}
}
