package pubsub_test

import (
	"encoding/json"
	"strings"
	"testing"

	solana "github.com/gagliardetto/solana-go"

	"github.com/tpugo/tpu/banking/ledger"
	"github.com/tpugo/tpu/rpc/pubsub"
)

// TestLogsAndProgram: against a running node, logsSubscribe (mentions)
// is told of a transfer with the System program's logs, and
// programSubscribe (System, dataSize 0, base64) of the account it funds.
func TestLogsAndProgram(t *testing.T) {
	n := startNode(t, pubsub.Config{}, ledger.SyncEachSlot)
	c := n.dial(t)
	to := solana.NewWallet().PublicKey()
	logsID := c.subscribe("logsSubscribe", map[string]any{"mentions": []string{to.String()}}, map[string]any{"commitment": "confirmed"})
	progID := c.subscribe("programSubscribe", solana.SystemProgramID.String(), map[string]any{"commitment": "processed", "encoding": "base64", "filters": []any{map[string]any{"dataSize": 0}}})
	tx := n.transfer(t, to, 4_000_000)
	n.send(t, tx)
	var sawLogs, sawAccount bool
	for !sawLogs || !sawAccount {
		m := c.next()
		switch {
		case m.Method == "logsNotification" && m.Params.Subscription == logsID:
			var r struct {
				Value struct {
					Signature string
					Err       any
					Logs      []string
				}
			}
			json.Unmarshal(m.Params.Result, &r)
			if r.Value.Signature != tx.Signatures[0].String() || r.Value.Err != nil ||
				strings.Join(r.Value.Logs, "|") != "Program 11111111111111111111111111111111 invoke [1]|Program 11111111111111111111111111111111 success" {
				t.Fatalf("logs notification %s", m.raw)
			}
			sawLogs = true
		case m.Method == "programNotification" && m.Params.Subscription == progID:
			var r struct {
				Value struct {
					Pubkey  string
					Account struct {
						Lamports uint64
						Owner    string
						Data     []string
					}
				}
			}
			json.Unmarshal(m.Params.Result, &r)
			if r.Value.Pubkey != to.String() {
				continue // the payer, also System's with no data
			}
			if r.Value.Account.Lamports != 4_000_000 || r.Value.Account.Owner != solana.SystemProgramID.String() || r.Value.Account.Data[1] != "base64" {
				t.Fatalf("program notification %s", m.raw)
			}
			sawAccount = true
		}
	}
}
