package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/quic"
)

// quicJSDir holds the QUIC client check: package.json pinning
// @matrixai/quic (quiche and BoringSSL, prebuilt in the package) and
// @solana/web3.js, and check.js.
var quicJSDir = filepath.Join("..", "..", "clients", "quic-js")

// npmInstallQUIC installs clients/quic-js's pinned dependencies with npm
// install (exact versions in package.json), once per package.json: a
// stamp in node_modules holds its hash. Without the registry the test
// skips, unless TPU_REQUIRE_NODE=1.
func npmInstallQUIC(t *testing.T, npm string) {
	t.Helper()
	pkg, err := os.ReadFile(filepath.Join(quicJSDir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(pkg)
	want := hex.EncodeToString(sum[:])
	stamp := filepath.Join(quicJSDir, "node_modules", ".tpu-package-sha256")
	if got, err := os.ReadFile(stamp); err == nil && string(got) == want {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// --ignore-scripts: @matrixai/quic ships its native module prebuilt
	// (@matrixai/quic-linux-x64), and web3.js needs no add-on.
	cmd := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--ignore-scripts", "--no-package-lock")
	cmd.Dir = quicJSDir
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := "npm install in clients/quic-js: " + err.Error() + "\n" + string(out)
		if os.Getenv("TPU_REQUIRE_NODE") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg + "\n(the registry unreachable? TPU_REQUIRE_NODE=1 makes this a failure)")
	}
	if err := os.WriteFile(stamp, []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
}

// quicJSChecks are clients/quic-js/check.js's checks.
var quicJSChecks = []string{"discovery", "handshake", "streams", "landed", "recipient balance", "payer balance"}

// TestQUICJSClient runs tpu run --no-gen with a stakes file naming a
// client identity, and sends signed transfers to its QUIC TPU from
// @matrixai/quic, another QUIC and TLS stack (quiche, BoringSSL), which
// presents that identity's certificate: every transfer lands, the
// balances are exact (checked by the script through JSON-RPC), and tpu's
// summary names the client's identity as staked with every transfer
// it sent.
func TestQUICJSClient(t *testing.T) {
	if testing.Short() {
		t.Skip("installs @matrixai/quic and runs tpu run")
	}
	node, npm := findNode(t)
	npmInstallQUIC(t, npm)

	dir := t.TempDir()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id := base58.Encode(pub)
	// The certificate is quic.Certificate's (crypto/x509); the handshake,
	// its CertificateVerify and the streams are BoringSSL's and quiche's.
	cert, err := quic.Certificate(key)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	stakes, _ := json.Marshal(map[string]uint64{id: 1_000_000_000_000, base58.Encode(make([]byte, 32)): 1_000_000_000_000})
	stakesPath := filepath.Join(dir, "stakes.json")
	if err := os.WriteFile(stakesPath, stakes, 0o600); err != nil {
		t.Fatal(err)
	}
	c := startChild(t, "run", "--no-gen", "--duration", "0", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "127.0.0.1:0",
		"--ledger", filepath.Join(dir, "ledger"), "--stakes", stakesPath, "--slot-time", "100ms")
	const count = 20
	env := []string{
		"TPU_RPC=" + logged(t, c.await(t, 1, "msg=json-rpc"), "url"),
		"TPU_KEY=" + string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"TPU_CERT=" + string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})),
		fmt.Sprintf("TPU_COUNT=%d", count),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "check.js")
	cmd.Dir = quicJSDir
	cmd.Env = append(os.Environ(), env...)
	b, err := cmd.CombinedOutput()
	out := string(b)
	t.Logf("node check.js:\n%s", out)
	if err != nil {
		t.Errorf("node check.js: %v", err)
	}
	lines := strings.Split(out, "\n")
	for _, name := range quicJSChecks {
		if !hasLine(lines, "ok   "+name) {
			t.Errorf("check %s did not pass", name)
		}
	}
	sum, err := c.interrupt(t)
	if err != nil {
		t.Fatalf("tpu run after the checks, on SIGINT: %v\n%s", err, c.stderr())
	}
	// fetch reported the client: its identity, staked, with every
	// transfer (and the script's airdrop went through RPC, not QUIC).
	want := fmt.Sprintf("  peer %s (staked 1000000000000 lamports): 1 connections, %d transactions", id, count)
	if !strings.Contains(sum, want) {
		t.Errorf("tpu's summary lacks %q:\n%s", want, sum)
	}
}
