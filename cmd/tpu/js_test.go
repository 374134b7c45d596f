package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// jsDir holds the JavaScript client checks: a package.json and lock file
// pinning @solana/web3.js, check.js and the README's example.js.
var jsDir = filepath.Join("..", "..", "clients", "js")

// jsChecks are the checks of clients/js/check.js, all of which
// TestJSClient runs; each must print "ok   <name>".
var jsChecks = []string{
	"airdrop", "transfer", // RPC
	"sendAndConfirmTransaction", "confirmTransaction", "onAccountChange", "onSlotChange", // websocket PubSub
	"simulateTransaction", "preflight", // simulation
	"getTransaction", "getParsedTransaction", "getSignaturesForAddress", "chainInfo", // history and chain methods
}

// findNode returns the paths of node and npm, or skips the test if either
// is missing, unless TPU_REQUIRE_NODE=1 (set by .ci/run), when it fails.
func findNode(t *testing.T) (node, npm string) {
	t.Helper()
	node, err1 := exec.LookPath("node")
	npm, err2 := exec.LookPath("npm")
	if err1 == nil && err2 == nil {
		return node, npm
	}
	if os.Getenv("TPU_REQUIRE_NODE") == "1" {
		t.Fatal("no node or npm on PATH and TPU_REQUIRE_NODE=1 (apt-get install nodejs npm)")
	}
	t.Skip("no node or npm on PATH: tpu is not checked with @solana/web3.js (apt-get install nodejs npm; TPU_REQUIRE_NODE=1 makes this a failure)")
	return "", ""
}

// npmCI installs clients/js's locked dependencies with npm ci, once: a
// stamp in node_modules holds the hash of the package-lock.json it
// installed, and a later run with the same lock file installs nothing.
// Without the registry the test skips, unless TPU_REQUIRE_NODE=1.
func npmCI(t *testing.T, npm string) { npmCIIn(t, npm, jsDir) }

// npmCIIn is npmCI in the client directory dir.
func npmCIIn(t *testing.T, npm, dir string) {
	t.Helper()
	lock, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	want := hex.EncodeToString(sum[:])
	stamp := filepath.Join(dir, "node_modules", ".tpu-lock-sha256")
	if got, err := os.ReadFile(stamp); err == nil && string(got) == want {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// --ignore-scripts: web3.js's websocket runs without the optional
	// native add-ons (bufferutil, utf-8-validate), so no compiler is needed.
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := "npm ci in " + dir + ": " + err.Error() + "\n" + string(out)
		if os.Getenv("TPU_REQUIRE_NODE") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg + "\n(the registry unreachable? TPU_REQUIRE_NODE=1 makes this a failure)")
	}
	if err := os.WriteFile(stamp, []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestJSClient starts tpu run --no-gen on 127.0.0.1 and runs the real
// @solana/web3.js client against it, through RPC and the websocket PubSub
// whose URLs tpu logs: the README's example (clients/js/example.js) and
// clients/js/check.js, whose checks must each print their "ok" line;
// both scripts must exit 0, and tpu must then stop cleanly on SIGINT. Node and npm are
// needed, and the npm registry the first time (see npmCI).
func TestJSClient(t *testing.T) {
	if testing.Short() {
		t.Skip("installs @solana/web3.js and runs tpu run")
	}
	node, npm := findNode(t)
	npmCI(t, npm)

	c := startChild(t, "run", "--no-gen", "--duration", "0", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "127.0.0.1:0",
		"--ledger", filepath.Join(t.TempDir(), "ledger"))
	env := []string{
		"RPC_URL=" + logged(t, c.await(t, 1, "msg=json-rpc"), "url"),
		"WS_URL=" + logged(t, c.await(t, 1, "msg=pubsub"), "url"),
	}

	// The README's example: airdrop, then a transfer by
	// sendAndConfirmTransaction.
	out := runNode(t, node, env, "example.js")
	if !regexp.MustCompile(`(?m)^transfer [1-9A-HJ-NP-Za-km-z]{64,88} recipient balance 1000000$`).MatchString(out) {
		t.Errorf("example.js did not print its transfer and the recipient's balance")
	}

	out = runNode(t, node, env, "check.js") // every check
	lines := strings.Split(out, "\n")
	for _, name := range jsChecks {
		if !hasLine(lines, "ok   "+name+"  ") {
			t.Errorf("check %s did not pass", name)
		}
	}
	if !hasLine(lines, fmt.Sprintf("PASS: %d checks", len(jsChecks))) {
		t.Errorf("no line \"PASS: %d checks\": the script runs checks this test does not know of, or failed", len(jsChecks))
	}
	if t.Failed() {
		t.Logf("tpu's log:\n%s", c.stderr())
	}
	if _, err := c.interrupt(t); err != nil {
		t.Errorf("tpu run after the checks, on SIGINT: %v\n%s", err, c.stderr())
	}
}

// runNode runs node on a script of clients/js with args, the environment
// plus env, and returns its output (stdout and stderr). The script stops
// itself (its own deadline); the test kills it after 4 minutes.
func runNode(t *testing.T, node string, env []string, args ...string) string {
	t.Helper()
	return runNodeIn(t, node, jsDir, env, args...)
}

// runNodeIn is runNode in the client directory dir.
func runNodeIn(t *testing.T, node, dir string, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	b, err := cmd.CombinedOutput()
	out := string(b)
	t.Logf("node %s:\n%s", strings.Join(args, " "), out)
	if err != nil {
		t.Errorf("node %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// hasLine reports whether a line starts with prefix.
func hasLine(lines []string, prefix string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

// TestReadmeJSExample checks that the README shows clients/js/example.js
// (which TestJSClient runs) as it is, less its opening comment.
func TestReadmeJSExample(t *testing.T) {
	ex, err := os.ReadFile(filepath.Join(jsDir, "example.js"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	code := string(ex)
	for strings.HasPrefix(code, "//") {
		_, code, _ = strings.Cut(code, "\n")
	}
	if !strings.Contains(string(readme), "```js\n"+code+"```\n") {
		t.Errorf("README.md does not show clients/js/example.js (less its opening comment) in a js block:\n%s", code)
	}
}

var jsNonceChecks = []string{"createNonceAccount", "signOffline", "submitAfterExpiry", "secondSubmitRefused", "lookupTableInner"}

// TestJSNonce runs clients/js/nonce.js, @solana/web3.js's durable-nonce
// flow (nonceInfo) and a lookup table's recorded calls into System,
// against tpu run with 20ms slots, so that the signing blockhash expires
// within seconds.
func TestJSNonce(t *testing.T) {
	if testing.Short() {
		t.Skip("installs @solana/web3.js and runs tpu run")
	}
	node, npm := findNode(t)
	npmCI(t, npm)
	c := startChild(t, "run", "--no-gen", "--duration", "0", "--slot-time", "20ms", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "127.0.0.1:0",
		"--ledger", filepath.Join(t.TempDir(), "ledger"))
	env := []string{"RPC_URL=" + logged(t, c.await(t, 1, "msg=json-rpc"), "url")}
	lines := strings.Split(runNode(t, node, env, "nonce.js"), "\n")
	for _, name := range jsNonceChecks {
		if !hasLine(lines, "ok   "+name+"  ") {
			t.Errorf("check %s did not pass", name)
		}
	}
	if !hasLine(lines, fmt.Sprintf("PASS: %d checks", len(jsNonceChecks))) {
		t.Errorf("no line \"PASS: %d checks\"", len(jsNonceChecks))
	}
	if t.Failed() {
		t.Logf("tpu's log:\n%s", c.stderr())
	}
	if _, err := c.interrupt(t); err != nil {
		t.Errorf("tpu run after the checks, on SIGINT: %v\n%s", err, c.stderr())
	}
}
