// Package rpc is a subset of Solana's JSON-RPC API over HTTP, enough for
// standard clients (solana-go, @solana/web3.js, the Solana CLI) to send
// transactions to a running tpu and confirm them.
//
// Reads come from the committed ledger: every commitment level
// (processed, confirmed, finalized) maps to the last committed slot, and a
// committed transaction reports confirmationStatus "finalized" once its
// slot is durable (at once with --sync sync; within a second with nosync),
// "confirmed" until then. getHealth fails once the ledger has. Writes do
// not execute anything here: sendTransaction and requestAirdrop send the
// transaction over UDP to fetch, like any client, so it is deduplicated,
// verified, scheduled, traced and accounted like every other. No preflight
// is run (as with skipPreflight: true): a transaction with a bad signature
// goes to the pipeline, which discards and counts it.
package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/tpugo/tpu/banking"
)

// Config configures a Server.
type Config struct {
	// Addr is the HTTP address. Empty means 127.0.0.1:8899.
	Addr string
	// TPU is where transactions are sent: fetch's UDP address.
	TPU netip.AddrPort
	// Bank is read through its concurrent-safe methods only.
	Bank *banking.Bank
	// Seed is the genesis seed: requestAirdrop signs with its faucet.
	Seed string
	// MaxBodyBytes bounds a request body. Zero means 50 KiB, Solana's.
	MaxBodyBytes int64
	// Version is reported by getVersion.
	Version string
	Logger  *slog.Logger
}

// Server serves JSON-RPC.
type Server struct {
	cfg Config
	srv *http.Server
	ln  net.Listener
	udp *net.UDPConn
	log *slog.Logger

	mu       sync.RWMutex
	slot     uint64                  // last committed slot
	hashes   []banking.SlotRecord    // committed blockhash window, oldest first
	hashSlot map[banking.Hash]uint64 // blockhash -> slot
	// statusesOn: the statuses of the window's slots are indexed in
	// recent (and sigsBySlot, which also tells which slots are). Indexing
	// costs a map entry per transaction, so it starts with the first
	// getSignatureStatuses: a tpu nobody asks pays nothing for it.
	statusesOn bool
	recent     map[[64]byte]banking.Status // statuses of the window's slots
	sigsBySlot map[uint64][][64]byte       // slot -> its signatures, to prune recent
	// loadMu serializes loading the window's statuses when indexing
	// starts; loaded tells that it is done.
	loadMu  sync.Mutex
	loaded  bool
	txCount uint64
	// countedThrough is the last slot counted in txCount.
	countedThrough uint64
	airdrops       uint64
}

// scanned, when not nil, is called by Start after it has read the
// ledger's recent slots and before it indexes those committed meanwhile:
// a test commits slots there.
var scanned func()

// Start indexes the ledger's recent slots and starts serving.
func Start(cfg Config) (*Server, error) {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:8899"
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = 50 << 10
	}
	if cfg.Version == "" {
		cfg.Version = "tpu-0.1.0"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{cfg: cfg, log: cfg.Logger, hashSlot: map[banking.Hash]uint64{}, recent: map[[64]byte]banking.Status{}, sigsBySlot: map[uint64][][64]byte{}}
	// Listen first, index what is on disk, then apply what committed in
	// between: no slot falls in a gap.
	var pendingMu sync.Mutex
	var pending []banking.SlotRecord
	ready := false
	cfg.Bank.OnCommit(func(r banking.SlotRecord) {
		pendingMu.Lock()
		if !ready {
			pending = append(pending, r)
			pendingMu.Unlock()
			return
		}
		pendingMu.Unlock()
		if err := s.index(r); err != nil {
			s.log.Error("rpc: index committed slot", "slot", r.Slot, "err", err)
		}
	})
	count, through, err := cfg.Bank.TransactionCount()
	if err != nil {
		return nil, err
	}
	s.txCount, s.countedThrough = count, through
	last := cfg.Bank.CommittedSlot()
	first := uint64(0)
	if last > banking.MaxProcessingAge {
		first = last - banking.MaxProcessingAge
	}
	for slot := first; slot <= last; slot++ {
		rec, ok, err := cfg.Bank.SlotRecordOf(slot)
		if err != nil {
			return nil, err
		}
		if ok {
			if err := s.index(rec); err != nil {
				return nil, err
			}
		}
	}
	if scanned != nil {
		scanned()
	}
	pendingMu.Lock()
	for _, r := range pending {
		if r.Slot > last {
			if err := s.index(r); err != nil {
				pendingMu.Unlock()
				return nil, err
			}
		}
	}
	ready = true
	pendingMu.Unlock()
	s.udp, err = net.ListenUDP("udp", &net.UDPAddr{IP: net.IP(cfg.TPU.Addr().AsSlice()), Port: 0})
	if err != nil {
		return nil, fmt.Errorf("rpc: %w", err)
	}
	s.ln, err = net.Listen("tcp", cfg.Addr)
	if err != nil {
		s.udp.Close()
		return nil, fmt.Errorf("rpc: listen on %s: %w", cfg.Addr, err)
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second}
	go s.srv.Serve(s.ln)
	return s, nil
}

// Addr returns the HTTP address served.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL returns the server's URL.
func (s *Server) URL() string { return "http://" + s.Addr() }

// Close stops serving.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	s.udp.Close()
	return err
}

// index adds a committed slot: its blockhash and count, and its statuses
// once they are indexed. A slot already indexed is skipped.
func (s *Server) index(r banking.SlotRecord) error {
	s.mu.Lock()
	if _, dup := s.hashSlot[r.Blockhash]; dup || (len(s.hashes) > 0 && r.Slot <= s.hashes[len(s.hashes)-1].Slot) {
		s.mu.Unlock()
		return nil
	}
	if r.Slot > s.slot {
		s.slot = r.Slot
	}
	s.hashes = append(s.hashes, r)
	s.hashSlot[r.Blockhash] = r.Slot
	if r.Slot > s.countedThrough {
		s.txCount += r.Transactions
		s.countedThrough = r.Slot
	}
	// The window is the last 151 slots by number, as the bank's: a gap
	// must not keep an expired blockhash valid.
	for len(s.hashes) > 0 && s.hashes[0].Slot+banking.MaxProcessingAge < r.Slot {
		old := s.hashes[0]
		s.hashes = s.hashes[1:]
		delete(s.hashSlot, old.Blockhash)
		for _, sig := range s.sigsBySlot[old.Slot] {
			delete(s.recent, sig)
		}
		delete(s.sigsBySlot, old.Slot)
	}
	on := s.statusesOn
	s.mu.Unlock()
	if on {
		return s.indexStatuses(r.Slot)
	}
	return nil
}

// indexStatuses reads a committed slot's statuses into recent, unless it
// is indexed already or has left the window meanwhile.
func (s *Server) indexStatuses(slot uint64) error {
	sts, err := s.cfg.Bank.SlotStatuses(slot)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, done := s.sigsBySlot[slot]; done || len(s.hashes) == 0 || slot < s.hashes[0].Slot {
		return nil
	}
	sigs := make([][64]byte, len(sts))
	for i, st := range sts {
		sigs[i] = st.Signature
		s.recent[st.Signature] = st.Status
	}
	s.sigsBySlot[slot] = sigs
	return nil
}

// startStatuses turns status indexing on, the first time it is called,
// and reads the statuses of the slots already in the window; later calls
// (and concurrent ones, which wait) return at once. Slots committed from
// the moment indexing is on index their own statuses.
func (s *Server) startStatuses() error {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	if s.loaded {
		return nil
	}
	s.mu.Lock()
	s.statusesOn = true
	slots := make([]uint64, len(s.hashes))
	for i, r := range s.hashes {
		slots[i] = r.Slot
	}
	s.mu.Unlock()
	for _, slot := range slots {
		if err := s.indexStatuses(slot); err != nil {
			return err // not loaded: the next call tries the rest again
		}
	}
	s.loaded = true
	return nil
}

// JSON-RPC 2.0 types.

type request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	Result  any             `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
	ID      json.RawMessage `json:"id"`
}

// Error is a JSON-RPC error object.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return fmt.Sprintf("%d: %s", e.Code, e.Message) }

// JSON-RPC error codes (the spec's; Solana uses the same for these).
const (
	codeParse          = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternal       = -32603
)

func invalidParams(format string, args ...any) *Error {
	return &Error{Code: codeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

var nullID = json.RawMessage("null")

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "Used HTTP Method is not allowed. POST or OPTIONS is required", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			writeJSON(w, response{JSONRPC: "2.0", ID: nullID, Error: &Error{Code: codeInvalidRequest, Message: "request too large"}})
			return
		}
		writeJSON(w, response{JSONRPC: "2.0", ID: nullID, Error: &Error{Code: codeParse, Message: "Parse error"}})
		return
	}
	trimmed := strings.TrimSpace(string(body))
	if strings.HasPrefix(trimmed, "[") { // a batch
		var reqs []json.RawMessage
		if err := json.Unmarshal(body, &reqs); err != nil {
			writeJSON(w, response{JSONRPC: "2.0", ID: nullID, Error: &Error{Code: codeParse, Message: "Parse error"}})
			return
		}
		if len(reqs) == 0 {
			writeJSON(w, response{JSONRPC: "2.0", ID: nullID, Error: &Error{Code: codeInvalidRequest, Message: "Invalid request"}})
			return
		}
		out := make([]response, len(reqs))
		for i, raw := range reqs {
			out[i] = s.handle(raw)
		}
		writeJSON(w, out)
		return
	}
	writeJSON(w, s.handle(body))
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{"jsonrpc":"2.0","error":{"code":-32603,"message":"Internal error"},"id":null}`)
	}
	w.Write(append(b, '\n'))
}

func (s *Server) handle(raw []byte) response {
	var req request
	if err := json.Unmarshal(raw, &req); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return response{JSONRPC: "2.0", ID: nullID, Error: &Error{Code: codeParse, Message: "Parse error"}}
		}
		return response{JSONRPC: "2.0", ID: nullID, Error: &Error{Code: codeInvalidRequest, Message: "Invalid request"}}
	}
	id := req.ID
	if len(id) == 0 {
		id = nullID
	}
	if req.JSONRPC != "2.0" || req.Method == "" {
		return response{JSONRPC: "2.0", ID: id, Error: &Error{Code: codeInvalidRequest, Message: "Invalid request"}}
	}
	h, ok := methods[req.Method]
	if !ok {
		return response{JSONRPC: "2.0", ID: id, Error: &Error{Code: codeMethodNotFound, Message: "Method not found"}}
	}
	var params []json.RawMessage
	if len(req.Params) > 0 && string(req.Params) != "null" {
		if err := json.Unmarshal(req.Params, &params); err != nil {
			return response{JSONRPC: "2.0", ID: id, Error: invalidParams("Invalid params: params must be an array")}
		}
	}
	result, rerr := h(s, params)
	if rerr != nil {
		return response{JSONRPC: "2.0", ID: id, Error: rerr}
	}
	return response{JSONRPC: "2.0", ID: id, Result: result}
}
