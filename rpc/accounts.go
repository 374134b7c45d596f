package rpc

import (
	"encoding/base64"
	"encoding/json"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/rpc/jsonrpc"
	"github.com/tpugo/tpu/rpc/parsed"
)

func getBalance(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	if e := jsonrpc.WantParams(params, 1, 2); e != nil {
		return nil, e
	}
	k, e := parsePubkey(params[0])
	if e != nil {
		return nil, e
	}
	if _, e := s.parseConfig(params, 1); e != nil {
		return nil, e
	}
	ctx := s.ctx()
	a, _, err := s.cfg.Bank.CommittedAccount(k)
	if err != nil {
		return nil, &Error{Code: jsonrpc.CodeInternal, Message: err.Error()}
	}
	return withContext{Context: ctx, Value: a.Lamports}, nil
}

// accountJSON is an account as Solana renders it.
type accountJSON struct {
	Data       any    `json:"data"` // [data, encoding], or a plain base58 string (legacy "binary")
	Executable bool   `json:"executable"`
	Lamports   uint64 `json:"lamports"`
	Owner      string `json:"owner"`
	RentEpoch  uint64 `json:"rentEpoch"`
	Space      int    `json:"space"`
}

// dataSlice is the dataSlice option of the account methods: Length bytes
// of an account's data from Offset, fewer where the data ends first
// (none where it ends before Offset), as Agave's slice_data.
type dataSlice struct {
	Offset uint64 `json:"offset"`
	Length uint64 `json:"length"`
}

// of returns the part of data d selects; d nil selects all of it.
func (d *dataSlice) of(data []byte) []byte {
	if d == nil {
		return data
	}
	n := uint64(len(data))
	if d.Offset >= n {
		return data[:0]
	}
	end := n
	if d.Length < n-d.Offset {
		end = d.Offset + d.Length
	}
	return data[d.Offset:end]
}

// encodeAccount renders an account, its data cut to slice (nil: all of
// it; a slice with jsonParsed is refused, as Agave's
// check_slice_and_encoding does, and space stays the whole length). getAccountInfo's default encoding is
// Solana's legacy "binary" (data a plain base58 string); getMultipleAccounts
// defaults to base64, as Agave's do.
func encodeAccount(a bank.Account, ok bool, encoding string, slice *dataSlice) (any, *Error) {
	if slice != nil && encoding == "jsonParsed" {
		return nil, jsonrpc.InvalidParams("Sliced account data can only be encoded using binary (base 58) or base64 encoding.")
	}
	if !ok {
		return nil, nil
	}
	data := slice.of(a.Data)
	out := accountJSON{Executable: a.Executable, Lamports: a.Lamports, Owner: base58.Encode(a.Owner[:]), RentEpoch: ^uint64(0), Space: len(a.Data)}
	switch encoding {
	case "jsonParsed":
		// Agave's account-decoder for the accounts tpu's programs own
		// (nonce and lookup-table accounts: package parsed), base64 for
		// the rest and for data its parsers refuse, as Agave falls back.
		if d, ok := parsed.Account(&a.Owner, a.Data); ok {
			out.Data = d
			break
		}
		out.Data = [2]string{base64.StdEncoding.EncodeToString(a.Data), "base64"}
	case "base64":
		out.Data = [2]string{base64.StdEncoding.EncodeToString(data), "base64"}
	case "base58", "", "binary":
		if len(data) > jsonrpc.MaxBase58Bytes {
			return nil, jsonrpc.InvalidParams("Encoded binary (base 58) data should be less than 128 bytes, please use Base64 encoding.")
		}
		if encoding == "base58" {
			out.Data = [2]string{base58.Encode(data), "base58"}
		} else {
			out.Data = base58.Encode(data)
		}
	default:
		return nil, jsonrpc.InvalidParams("Invalid params: unsupported encoding %q (base58, base64)", encoding)
	}
	return out, nil
}

func getAccountInfo(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	if e := jsonrpc.WantParams(params, 1, 2); e != nil {
		return nil, e
	}
	k, e := parsePubkey(params[0])
	if e != nil {
		return nil, e
	}
	c, e := s.parseConfig(params, 1)
	if e != nil {
		return nil, e
	}
	ctx := s.ctx()
	a, ok, err := s.cfg.Bank.CommittedAccount(k)
	if err != nil {
		return nil, &Error{Code: jsonrpc.CodeInternal, Message: err.Error()}
	}
	v, e := encodeAccount(a, ok, c.Encoding, c.DataSlice)
	if e != nil {
		return nil, e
	}
	return withContext{Context: ctx, Value: v}, nil
}

func getMultipleAccounts(s *Server, q *call, params []json.RawMessage) (any, *Error) {
	if e := jsonrpc.WantParams(params, 1, 2); e != nil {
		return nil, e
	}
	var keys []json.RawMessage
	if err := json.Unmarshal(params[0], &keys); err != nil {
		return nil, jsonrpc.InvalidParams("Invalid params: invalid type: %s, expected a sequence", params[0])
	}
	if len(keys) > 100 {
		return nil, jsonrpc.InvalidParams("Too many inputs provided; max 100")
	}
	if e := q.spend(len(keys), s.cfg.MaxItems); e != nil {
		return nil, e
	}
	c, e := s.parseConfig(params, 1)
	if e != nil {
		return nil, e
	}
	if c.Encoding == "" {
		c.Encoding = "base64"
	}
	ctx := s.ctx()
	out := make([]any, len(keys))
	for i, raw := range keys {
		if q.ctx.Err() != nil {
			return nil, errCancelled
		}
		k, e := parsePubkey(raw)
		if e != nil {
			return nil, e
		}
		a, ok, err := s.cfg.Bank.CommittedAccount(k)
		if err != nil {
			return nil, &Error{Code: jsonrpc.CodeInternal, Message: err.Error()}
		}
		if out[i], e = encodeAccount(a, ok, c.Encoding, c.DataSlice); e != nil {
			return nil, e
		}
	}
	return withContext{Context: ctx, Value: out}, nil
}
