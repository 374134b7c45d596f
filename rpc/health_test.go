package rpc

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/txview"
)

// ask posts one request to s and decodes its reply.
func ask(t *testing.T, s *Server, method, params string) reply {
	t.Helper()
	code, body, err := post(t, context.Background(), s.URL(), rpcCall(1, method, params))
	if err != nil || code != http.StatusOK {
		t.Fatalf("%s: HTTP %d %v", method, code, err)
	}
	var r reply
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("%s: %v: %s", method, err, body)
	}
	return r
}

// Each commitment level reads its own slot: finalized (and no level,
// Solana's default) the durable one, confirmed and processed the last
// committed one, for the slot, the block height, the latest blockhash
// and minContextSlot.
func TestCommitmentLevels(t *testing.T) {
	const last, lag = 200, 3
	s := startFake(t, &fakeLedger{last: last, lag: lag}, Config{})
	const durable = last - lag
	hash := func(slot uint64) string { // the fake's blockhash of slot
		var h banking.Hash
		binary.LittleEndian.PutUint64(h[:], slot)
		return base58.Encode(h[:])
	}
	for _, c := range []struct {
		commitment string // "" sends no config
		slot       uint64
	}{{"", durable}, {"finalized", durable}, {"confirmed", last}, {"processed", last}} {
		cfg := "[]"
		if c.commitment != "" {
			cfg = fmt.Sprintf(`[{"commitment":%q}]`, c.commitment)
		}
		name := c.commitment
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			for _, m := range []string{"getSlot", "getBlockHeight"} {
				r := ask(t, s, m, cfg)
				var got uint64
				if r.Error != nil || json.Unmarshal(r.Result, &got) != nil || got != c.slot {
					t.Errorf("%s = %s %v, want %d", m, r.Result, r.Error, c.slot)
				}
			}
			r := ask(t, s, "getLatestBlockhash", cfg)
			var bh struct {
				Context rpcContext
				Value   struct {
					Blockhash            string
					LastValidBlockHeight uint64
				}
			}
			if r.Error != nil || json.Unmarshal(r.Result, &bh) != nil {
				t.Fatalf("getLatestBlockhash: %s %v", r.Result, r.Error)
			}
			if bh.Context.Slot != c.slot || bh.Value.Blockhash != hash(c.slot) || bh.Value.LastValidBlockHeight != c.slot+bank.MaxProcessingAge {
				t.Errorf("getLatestBlockhash = %s, want slot %d's blockhash %s", r.Result, c.slot, hash(c.slot))
			}
			// The slot at the level is reached; the next is not.
			for _, min := range []uint64{c.slot, c.slot + 1} {
				params := fmt.Sprintf(`[{"commitment":%q,"minContextSlot":%d}]`, c.commitment, min)
				if c.commitment == "" {
					params = fmt.Sprintf(`[{"minContextSlot":%d}]`, min)
				}
				r := ask(t, s, "getSlot", params)
				reached := r.Error == nil
				if want := min <= c.slot; reached != want || (!want && r.Error.Code != -32016) {
					t.Errorf("minContextSlot %d: %s %v, want reached %v", min, r.Result, r.Error, want)
				}
			}
		})
	}
}

// signedTransfer returns a transfer from a fresh key, base64.
func signedTransfer(t *testing.T) string {
	t.Helper()
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	from := txview.PublicKey(key)
	m := txview.Message{Payer: from, Blockhash: banking.Hash{1}, Instructions: []txview.Ix{txview.Transfer(from, [32]byte{2}, 1)}}
	tx, err := m.Sign(key)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(tx)
}

// A failed ledger (a full disk here) makes every write refuse with
// Solana's node-unhealthy error naming the failure, where a healthy one
// returns a signature; getHealth says the same, and reads of what was
// committed are still served.
func TestSickLedgerRefusesWrites(t *testing.T) {
	tx := signedTransfer(t)
	to := base58.Encode(make([]byte, 32))
	calls := []struct{ method, params string }{
		{"sendTransaction", `["` + tx + `",{"encoding":"base64"}]`},
		{"requestAirdrop", `["` + to + `",1000]`},
		{"getHealth", `[]`},
		{"getBalance", `["` + to + `"]`},
		{"getSlot", `[]`},
	}
	for _, c := range []struct {
		name string
		err  error
		// refused: the methods answering -32005
		refused map[string]bool
	}{
		{"healthy", nil, nil},
		{"full disk", fmt.Errorf("%w: pebble: %w", ledger.ErrStore, syscall.ENOSPC), map[string]bool{"sendTransaction": true, "requestAirdrop": true, "getHealth": true}},
		{"read-only", fmt.Errorf("%w: pebble: %w", ledger.ErrStore, syscall.EROFS), map[string]bool{"sendTransaction": true, "requestAirdrop": true, "getHealth": true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := startFake(t, &fakeLedger{last: 10, err: c.err}, Config{})
			for _, m := range calls {
				r := ask(t, s, m.method, m.params)
				if !c.refused[m.method] {
					if r.Error != nil || len(r.Result) == 0 {
						t.Errorf("%s: %v, want a result", m.method, r.Error)
					}
					continue
				}
				if r.Error == nil || r.Error.Code != -32005 {
					t.Errorf("%s on a failed ledger: %s %v, want error -32005", m.method, r.Result, r.Error)
					continue
				}
				if !strings.Contains(r.Error.Message, "Node is unhealthy") || !strings.Contains(r.Error.Message, c.err.Error()) {
					t.Errorf("%s: message %q does not name the failure %q", m.method, r.Error.Message, c.err)
				}
			}
		})
	}
}
