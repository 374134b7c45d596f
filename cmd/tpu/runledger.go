package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"

	"github.com/tpugo/tpu/stages"

	"github.com/tpugo/tpu/banking/bankingtrace"
)

// What tpu run does before its node opens the ledger: --reset's check
// that the ports are free, --banking-trace's recorder, which needs a new
// ledger.

// openRecorder opens the banking trace (--banking-trace) of a run whose
// banking stage is banking, or returns nil without one. A replay rebuilds the bank
// from genesis, so the ledger must be new (--reset, or a directory that
// is missing or empty), and its genesis blockhash reproducible: without
// --genesis-seed, a random blockhash seed is drawn here, given to the new
// ledger in bank, and recorded in the trace's header.
func openRecorder(f runFlags, banking *stages.BankingConfig, log *slog.Logger) (*bankingtrace.Recorder, error) {
	bank := &banking.Bank
	if f.bankingTrace == "" {
		return nil, nil
	}
	if !f.reset {
		ents, err := os.ReadDir(f.ledger)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("--banking-trace: %w", err)
		}
		if len(ents) > 0 {
			return nil, fmt.Errorf("--banking-trace: the ledger %s is not new: a replay rebuilds the bank from genesis, so record on a new ledger (--reset, or another --ledger)", f.ledger)
		}
	}
	if bank.Genesis.BlockhashSeed == "" {
		var salt [16]byte
		if _, err := rand.Read(salt[:]); err != nil {
			return nil, fmt.Errorf("--banking-trace: genesis blockhash seed: %w", err)
		}
		bank.Genesis.BlockhashSeed = hex.EncodeToString(salt[:])
	}
	// Driven: the stage records every call to its driver, so that a
	// replay with this scheduler makes the same ones.
	rec, err := bankingtrace.NewRecorder(bankingtrace.Config{Dir: f.bankingTrace, MaxBytes: f.bankingTraceMax,
		Bank: *bank, Scheduler: banking.Scheduler, Driven: true, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("--banking-trace: %w", err)
	}
	log.Info("banking trace", "dir", f.bankingTrace, "max_bytes", f.bankingTraceMax, "genesis_blockhash_seed", bank.Genesis.BlockhashSeed)
	return rec, nil
}

// probePorts binds and releases the UDP and RPC addresses the run will
// listen on.
func probePorts(f runFlags) error {
	udp, err := net.ListenPacket("udp", f.addr)
	if err != nil {
		return err
	}
	udp.Close()
	if qa, err := quicAddr(f); err != nil {
		return err
	} else if qa != "" {
		q, err := net.ListenPacket("udp", qa)
		if err != nil {
			return err
		}
		q.Close()
	}
	ws, err := wsAddr(f)
	if err != nil {
		return err
	}
	for _, a := range []string{f.rpcAddr, ws} {
		if a != "" {
			l, err := net.Listen("tcp", a)
			if err != nil {
				return err
			}
			l.Close()
		}
	}
	return nil
}
