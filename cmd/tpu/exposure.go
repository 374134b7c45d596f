package main

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/tpugo/tpu/httpguard"
)

// exposure lists what tpu run serves to other machines: each of the
// JSON-RPC, PubSub and metrics addresses that is not loopback
// (httpguard.Public), with what it gives away. ws is the PubSub address
// resolved (wsAddr). Empty when everything is loopback.
func exposure(f runFlags, ws string) []string {
	var out []string
	if f.rpcAddr != "" && httpguard.Public(f.rpcAddr) {
		airdrop := "requestAirdrop off (--rpc-faucet turns it on)"
		if f.rpcFaucet {
			airdrop = fmt.Sprintf("requestAirdrop ON (--rpc-faucet): anyone may take %d lamports a recipient and %d in all per %v",
				f.rpcAirdropPerRecipient, f.rpcAirdropLamports, f.rpcAirdropWindow)
		}
		out = append(out, fmt.Sprintf("JSON-RPC at %s: sendTransaction, simulateTransaction, account and history reads; %s", f.rpcAddr, airdrop))
	}
	if ws != "" && httpguard.Public(ws) {
		out = append(out, fmt.Sprintf("PubSub at %s: account, program, signature and slot subscriptions", ws))
	}
	if f.metricsAddr != "" && httpguard.Public(httpguard.DefaultLoopback(f.metricsAddr)) {
		m := fmt.Sprintf("metrics at %s: the pipeline's counters and memory", f.metricsAddr)
		if f.pprof {
			m += ", and the Go heap profile (--pprof)"
		}
		out = append(out, m)
	}
	return out
}

// warnExposure warns, once, of what other machines can reach.
func warnExposure(log *slog.Logger, f runFlags, ws string) {
	if e := exposure(f, ws); len(e) > 0 {
		log.Warn("serving beyond this machine (bind 127.0.0.1 to keep it local): " + strings.Join(e, "; "))
	}
}
