package pubsub

import (
	"bytes"
	"encoding/base64"
	"encoding/json"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/banking/ledger"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/rpc/jsonrpc"
	"github.com/tpugo/tpu/txview"
)

// filter is one of a program subscription's filters (Agave's
// RpcFilterType): the data's size, or bytes at an offset.
type filter struct {
	size   *uint64
	offset int
	bytes  []byte
}

func (f filter) match(data []byte) bool {
	if f.size != nil {
		return uint64(len(data)) == *f.size
	}
	return f.offset <= len(data) && len(data)-f.offset >= len(f.bytes) && bytes.Equal(data[f.offset:f.offset+len(f.bytes)], f.bytes)
}

// Agave's limits on a program subscription's filters
// (MAX_GET_PROGRAM_ACCOUNT_FILTERS; a memcmp's MAX_DATA_SIZE and its
// encoded lengths).
const (
	maxFilters       = 4
	maxMemcmpBytes   = 128
	maxMemcmpBase58  = 175
	maxMemcmpBase64  = 172
	errFilterPrefix  = "Invalid params: "
	errTooManyFilter = "Too many filters provided; max 4"
)

// programConfig is programSubscribe's options (RpcProgramAccountsConfig).
type programConfig struct {
	Commitment     string            `json:"commitment"`
	Encoding       string            `json:"encoding"`
	Filters        []json.RawMessage `json:"filters"`
	DataSlice      json.RawMessage   `json:"dataSlice"`
	MinContextSlot *uint64           `json:"minContextSlot"` // ignored, as Agave does
	WithContext    *bool             `json:"withContext"`    // notifications always carry it, as Agave's
}

// programSubscribe is Agave's program_subscribe: the accounts a program
// owns, notified each time a slot writes one, that pass every filter
// (dataSize, memcmp with base58 or base64 bytes; at most 4).
func (s *Server) programSubscribe(c *conn, id json.RawMessage, params []json.RawMessage) *Error {
	if e := jsonrpc.WantParams(params, 1, 2); e != nil {
		return e
	}
	prog, e := parsePubkey(params[0])
	if e != nil {
		return e
	}
	var cfg programConfig
	if len(params) > 1 && string(params[1]) != "null" {
		if err := json.Unmarshal(params[1], &cfg); err != nil {
			return jsonrpc.InvalidParams("Invalid params: %v", err)
		}
	}
	if len(cfg.DataSlice) > 0 && string(cfg.DataSlice) != "null" {
		return jsonrpc.InvalidParams("Invalid params: dataSlice is not supported by tpu's programSubscribe")
	}
	sb := &sub{kind: kindProgram, key: prog}
	if sb.commitment, e = jsonrpc.ParseCommitment(cfg.Commitment); e != nil {
		return e
	}
	if sb.encoding, e = parseEncoding(cfg.Encoding); e != nil {
		return e
	}
	if len(cfg.Filters) > maxFilters {
		return jsonrpc.InvalidParams(errTooManyFilter)
	}
	for _, raw := range cfg.Filters {
		f, e := parseFilter(raw)
		if e != nil {
			return e
		}
		sb.filters = append(sb.filters, f)
	}
	return s.subscribe(c, id, nil, sb)
}

// parseFilter reads {"dataSize": n} or {"memcmp": {"offset": n, "bytes":
// s, "encoding": "base58"|"base64"}}; tokenAccountState is refused (tpu
// has no token program).
func parseFilter(raw json.RawMessage) (filter, *Error) {
	var f struct {
		DataSize *uint64 `json:"dataSize"`
		Memcmp   *struct {
			Offset   *int   `json:"offset"`
			Bytes    string `json:"bytes"`
			Encoding string `json:"encoding"`
		} `json:"memcmp"`
	}
	if err := json.Unmarshal(raw, &f); err != nil || (f.DataSize == nil) == (f.Memcmp == nil) {
		return filter{}, jsonrpc.InvalidParams(errFilterPrefix+"a filter is {\"dataSize\": n} or {\"memcmp\": {\"offset\": n, \"bytes\": s}}: %s", raw)
	}
	if f.DataSize != nil {
		return filter{size: f.DataSize}, nil
	}
	m := f.Memcmp
	if m.Offset == nil || *m.Offset < 0 {
		return filter{}, jsonrpc.InvalidParams(errFilterPrefix + "memcmp needs an offset of 0 or more")
	}
	var b []byte
	var err error
	switch m.Encoding {
	case "", "base58":
		if len(m.Bytes) > maxMemcmpBase58 {
			return filter{}, jsonrpc.InvalidParams(errFilterPrefix+"encoded binary (base 58) data should be less than %d bytes", maxMemcmpBase58+1)
		}
		b, err = base58.Decode(m.Bytes)
		if m.Bytes == "" {
			b, err = []byte{}, nil
		}
	case "base64":
		if len(m.Bytes) > maxMemcmpBase64 {
			return filter{}, jsonrpc.InvalidParams(errFilterPrefix+"encoded binary (base 64) data should be less than %d bytes", maxMemcmpBase64+1)
		}
		b, err = base64.StdEncoding.DecodeString(m.Bytes)
	default:
		return filter{}, jsonrpc.InvalidParams(errFilterPrefix+"unknown memcmp encoding %q (base58, base64)", m.Encoding)
	}
	if err != nil {
		return filter{}, jsonrpc.InvalidParams(errFilterPrefix+"memcmp bytes: %v", err)
	}
	if len(b) > maxMemcmpBytes {
		return filter{}, jsonrpc.InvalidParams(errFilterPrefix+"memcmp data too large: %d bytes, max %d", len(b), maxMemcmpBytes)
	}
	return filter{offset: *m.Offset, bytes: b}, nil
}

// keyedAccount is Agave's RpcKeyedAccount.
type keyedAccount struct {
	Pubkey  string      `json:"pubkey"`
	Account accountJSON `json:"account"`
}

// watchesProgram reports whether a program subscription follows the
// accounts of program at finalized (final) or at one of the other two
// levels.
func (r *registry) watchesProgram(program banking.Pubkey, final bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.byProg[program] {
		if (s.commitment == jsonrpc.Finalized) == final {
			return true
		}
	}
	return false
}

// program notifies the program subscriptions of a's owner at a level
// (finalized, or the other two) that the slot ctx left a as it is, if a
// passes their filters. Like account, it encodes each encoding asked
// once, outside mu, and notifies the subscriptions made before it began.
func (r *registry) program(final bool, ctx uint64, a *bank.Account) {
	if r.programs.Load() == 0 {
		return
	}
	wants := func(s *sub) bool {
		if (s.commitment == jsonrpc.Finalized) != final {
			return false
		}
		for _, f := range s.filters {
			if !f.match(a.Data) {
				return false
			}
		}
		return true
	}
	var want [numEncodings]bool
	r.mu.Lock()
	before := r.next
	any := false
	for _, s := range r.byProg[a.Owner] {
		if wants(s) {
			want[s.encoding], any = true, true
		}
	}
	r.mu.Unlock()
	if !any {
		return
	}
	key := a.Key()
	var heads [numEncodings][]byte
	for enc, ok := range want {
		if ok {
			heads[enc] = notificationHead(kindProgram, withContext{Context: rpcContext{Slot: ctx},
				Value: keyedAccount{Pubkey: base58.Encode(key[:]), Account: encodeAccount(a, encoding(enc))}})
			r.encoded.Add(1)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.byProg[a.Owner] {
		if s.id < before && wants(s) && heads[s.encoding] != nil {
			s.to.notify(heads[s.encoding], s.id, &r.sent)
		}
	}
}

// writtenBy returns the accounts the transactions of a slot wrote: the
// static keys the bank left writable and the writable addresses their
// lookups loaded, each once.
func writtenBy(txs []ledger.TxRecord) []banking.Pubkey {
	seen := map[banking.Pubkey]bool{}
	var out []banking.Pubkey
	add := func(k banking.Pubkey) {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	for _, rec := range txs {
		v, err := txview.Parse(rec.Tx)
		if err != nil {
			continue
		}
		n := v.NumStaticKeys()
		for i := 0; i < n && i < 64; i++ {
			if rec.Writable&(1<<i) != 0 {
				add(banking.Pubkey(*v.StaticKey(i)))
			}
		}
		for j := 0; j < len(rec.Loaded) && j < v.NumLookupWritable(); j++ {
			if i := n + j; i >= 64 || rec.Writable&(1<<i) != 0 {
				add(rec.Loaded[j])
			}
		}
	}
	return out
}
