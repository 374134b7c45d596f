package main

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tpugo/tpu/banking/bank"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/txview"
)

var crashRounds = flag.Int("crash-rounds", 3, "SIGKILLs per sync mode in TestCrashLoop (the long run: 50 or more)")

// TestCrashLoop builds the real tpu binary, runs it as a server (run
// --no-gen) in each sync mode, sends transfers through its RPC
// (sendTransaction), and SIGKILLs it at a random moment, again and again.
// After every restart, each transaction RPC ever reported "finalized" must
// still be there, and its recipient (a fresh account that received only
// that transfer) must hold exactly the amount sent.
func TestCrashLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := filepath.Join(t.TempDir(), "tpu")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("random seed %d", seed)
	for _, mode := range []string{"sync", "nosync"} {
		t.Run(mode, func(t *testing.T) {
			crashLoop(t, bin, mode, rand.New(rand.NewPCG(seed, uint64(len(mode)))), *crashRounds)
		})
	}
}

// crashTx is a transfer the loop sent.
type crashTx struct {
	sig    [64]byte
	to     [32]byte
	amount uint64
}

// server is one run of the binary.
type server struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{} // closed when stderr ends
	errs strings.Builder
}

const crashSeed = "crash"

func startServer(t *testing.T, bin, ledger, mode string) *server {
	t.Helper()
	cmd := exec.Command(bin, "run", "--no-gen", "--duration", "0", "--tpu-addr", "127.0.0.1:0", "--rpc-addr", "127.0.0.1:0",
		"--ledger", ledger, "--sync", mode, "--seed", crashSeed, "--accounts", "16", "--slot-time", "100ms")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, done: make(chan struct{})}
	urls := make(chan string, 1)
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			l := sc.Text()
			s.errs.WriteString(l + "\n")
			if strings.Contains(l, "msg=json-rpc") {
				for _, f := range strings.Fields(l) {
					if u, ok := strings.CutPrefix(f, "url="); ok {
						urls <- u
					}
				}
			}
		}
	}()
	select {
	case s.url = <-urls:
	case <-s.done:
		cmd.Wait()
		t.Fatalf("tpu run exited before serving RPC:\n%s", s.errs.String())
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("tpu run did not serve RPC within 60 s")
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-s.done
		cmd.Wait()
	})
	return s
}

func (s *server) kill(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-s.done
	s.cmd.Wait()
}

func crashLoop(t *testing.T, bin, mode string, rng *rand.Rand, rounds int) {
	ledger := filepath.Join(t.TempDir(), "ledger")
	ctx := context.Background()
	var finalized []crashTx
	n := 0 // transfers sent, over all rounds
	for round := 0; round <= rounds; round++ {
		srv := startServer(t, bin, ledger, mode)
		c := newRPCClient(srv.url)
		// Everything reported finalized before a kill is still there.
		checkFinalized(t, c, finalized, round)
		if round == rounds {
			if err := srv.cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			<-srv.done
			if err := srv.cmd.Wait(); err != nil {
				t.Fatalf("exit after SIGINT: %v\n%s", err, srv.errs.String())
			}
			break
		}
		// Send until a random number of transfers is finalized, then a
		// random number more, and kill it mid-stream.
		wantFinal, extra := 10+rng.IntN(60), rng.IntN(200)
		var pending []crashTx
		final := 0
		var bh [32]byte
		for sent := 0; final < wantFinal || extra > 0; sent++ {
			if sent%40 == 0 {
				var err error
				if bh, err = c.latestBlockhash(ctx); err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
			}
			tx := signCrashTx(t, bh, n)
			n++
			if err := sendTx(ctx, c, tx.raw); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			pending = append(pending, tx.crashTx)
			if final >= wantFinal {
				extra--
				continue
			}
			if sent%10 == 9 {
				var done []crashTx
				var err error
				if pending, done, err = pollFinalized(ctx, c, pending); err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				finalized = append(finalized, done...)
				final += len(done)
			}
		}
		// The last poll's answers count too: RPC reported them.
		var done []crashTx
		var err error
		if _, done, err = pollFinalized(ctx, c, pending); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		finalized = append(finalized, done...)
		srv.kill(t)
	}
	t.Logf("%s: %d kills, %d transfers sent, %d reported finalized, all intact", mode, rounds, n, len(finalized))
}

type signedTx struct {
	crashTx
	raw []byte
}

// signCrashTx signs transfer i: from genesis account i%16 to a fresh
// account of its own.
func signCrashTx(t *testing.T, bh [32]byte, i int) signedTx {
	t.Helper()
	from := bank.GenesisKey(crashSeed, i%16)
	h := sha256.Sum256(binary.LittleEndian.AppendUint64([]byte("crash-recipient"), uint64(i)))
	to := txview.PublicKey(ed25519.NewKeyFromSeed(h[:]))
	amount := uint64(1_000_000 + i)
	m := txview.Message{Payer: txview.PublicKey(from), Blockhash: bh,
		Instructions: []txview.Ix{txview.Transfer(txview.PublicKey(from), to, amount)}}
	raw, err := m.Sign(from)
	if err != nil {
		t.Fatal(err)
	}
	v, err := txview.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return signedTx{crashTx{sig: *v.Signature(0), to: to, amount: amount}, raw}
}

func sendTx(ctx context.Context, c *rpcClient, raw []byte) error {
	return c.call(ctx, "sendTransaction", nil, base64.StdEncoding.EncodeToString(raw), map[string]any{"encoding": "base64"})
}

// pollFinalized asks for the statuses of pending and splits off those
// reported finalized.
func pollFinalized(ctx context.Context, c *rpcClient, pending []crashTx) (rest, final []crashTx, err error) {
	strs := make([]string, len(pending))
	for i := range pending {
		strs[i] = base58.Encode(pending[i].sig[:])
	}
	var r struct {
		Value []*struct {
			Err                any    `json:"err"`
			ConfirmationStatus string `json:"confirmationStatus"`
		} `json:"value"`
	}
	for i := 0; i < len(strs); i += 256 {
		var part = r
		if err := c.call(ctx, "getSignatureStatuses", &part, strs[i:min(i+256, len(strs))]); err != nil {
			return nil, nil, err
		}
		for j, st := range part.Value {
			tx := pending[i+j]
			switch {
			case st == nil || st.ConfirmationStatus != "finalized":
				rest = append(rest, tx)
			case st.Err != nil:
				return nil, nil, fmt.Errorf("transfer %x… failed: %v", tx.sig[:4], st.Err)
			default:
				final = append(final, tx)
			}
		}
	}
	return rest, final, nil
}

func checkFinalized(t *testing.T, c *rpcClient, txs []crashTx, round int) {
	t.Helper()
	ctx := context.Background()
	sigs := make([][64]byte, len(txs))
	for i := range txs {
		sigs[i] = txs[i].sig
	}
	sts, err := c.statuses(ctx, sigs, true)
	if err != nil {
		t.Fatalf("after kill %d: %v", round, err)
	}
	for i, tx := range txs {
		if sts[i] == nil {
			t.Fatalf("after kill %d: transfer %s, reported finalized, is gone", round, base58.Encode(tx.sig[:]))
		}
		bal, err := c.balance(ctx, tx.to)
		if err != nil {
			t.Fatal(err)
		}
		if bal != tx.amount {
			t.Fatalf("after kill %d: recipient of finalized transfer %s holds %d lamports, want %d", round, base58.Encode(tx.sig[:]), bal, tx.amount)
		}
	}
}
