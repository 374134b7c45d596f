package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// kitDir holds the @solana/kit client checks: a package.json and lock
// file pinning @solana/kit 8.4 and the official System and lookup-table
// program clients, and blocks.mjs.
var kitDir = filepath.Join("..", "..", "clients", "kit")

// kitChecks are the checks of clients/kit/blocks.mjs, all of which
// TestKitClient runs; each must print "ok   <name>".
var kitChecks = []string{
	"setup",                                                                       // airdrop, transfer, lookup table made and extended
	"getBlock", "getBlock details", "getBlock jsonParsed", "lookup table account", // blocks and jsonParsed
	"getBlocks",                                 // getBlocks, getBlocksWithLimit, getBlockTime
	"logsNotifications", "programNotifications", // websocket PubSub
}

// TestKitClient starts tpu run --no-gen on 127.0.0.1 and runs
// clients/kit/blocks.mjs against it: the real @solana/kit client, as an
// explorer uses it (getBlock in every transactionDetails and encoding,
// getBlocks, jsonParsed lookup tables, logs and program subscriptions).
// Every check must print its "ok" line and the script exit 0; tpu must
// then stop cleanly on SIGINT. Node and npm are needed, and the npm
// registry the first time (npmCIIn), as TestJSClient.
func TestKitClient(t *testing.T) {
	if testing.Short() {
		t.Skip("installs @solana/kit and runs tpu run")
	}
	runKitScript(t, "blocks.mjs", kitChecks)
}

// kitNonceChecks are the checks of clients/kit/nonce.mjs, all of which
// TestKitNonce runs; each must print "ok   <name>".
var kitNonceChecks = []string{
	"createNonceAccount", "signOffline", "submitAfterExpiry", "secondSubmitRefused", // durable nonce
	"createAccountWithSeed", "transferWithSeed", // seed-derived addresses
}

// TestKitNonce runs clients/kit/nonce.mjs against tpu run with 20ms
// slots, so that the signing blockhash expires within seconds: @solana/kit's
// durable-nonce flow (a nonce account made with the System program
// client, a transfer signed over its nonce, sent after the blockhash
// expired with kit's durable-nonce sender, and refused the second time)
// and accounts at seed-derived addresses (createAddressWithSeed,
// CreateAccountWithSeed, TransferWithSeed). Node and npm as
// TestKitClient.
func TestKitNonce(t *testing.T) {
	if testing.Short() {
		t.Skip("installs @solana/kit and runs tpu run")
	}
	runKitScript(t, "nonce.mjs", kitNonceChecks, "--slot-time", "20ms")
}

// runKitScript runs one clients/kit script against tpu run --no-gen
// (with extra flags), requiring each of checks to print "ok   <name>"
// and the script's "PASS: N checks", then tpu to stop cleanly on SIGINT.
func runKitScript(t *testing.T, script string, checks []string, extra ...string) {
	t.Helper()
	node, npm := findNode(t)
	npmCIIn(t, npm, kitDir)
	args := append([]string{"run", "--no-gen", "--duration", "0", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "127.0.0.1:0",
		"--ledger", filepath.Join(t.TempDir(), "ledger")}, extra...)
	c := startChild(t, args...)
	env := []string{
		"RPC_URL=" + logged(t, c.await(t, 1, "msg=json-rpc"), "url"),
		"WS_URL=" + logged(t, c.await(t, 1, "msg=pubsub"), "url"),
	}
	lines := strings.Split(runNodeIn(t, node, kitDir, env, script), "\n")
	for _, name := range checks {
		if !hasLine(lines, "ok   "+name+"  ") {
			t.Errorf("check %s did not pass", name)
		}
	}
	if !hasLine(lines, fmt.Sprintf("PASS: %d checks", len(checks))) {
		t.Errorf("no line \"PASS: %d checks\": the script runs checks this test does not know of, or failed", len(checks))
	}
	if t.Failed() {
		t.Logf("tpu's log:\n%s", c.stderr())
	}
	if _, err := c.interrupt(t); err != nil {
		t.Errorf("tpu run after the checks, on SIGINT: %v\n%s", err, c.stderr())
	}
}
