package pubsub

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking"
)

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

var nullID = json.RawMessage("null")

// reply builds a response message.
func reply(id json.RawMessage, result any, e *Error) []byte {
	if len(id) == 0 {
		id = nullID
	}
	r := response{JSONRPC: "2.0", ID: id, Result: result, Error: e}
	if e == nil && result == nil {
		r.Result = json.RawMessage("null")
	}
	b, err := json.Marshal(r)
	if err != nil {
		return []byte(`{"jsonrpc":"2.0","error":{"code":-32603,"message":"Internal error"},"id":null}`)
	}
	return b
}

// parseRequest reads one request, or returns the error to answer (with
// the request's id once it is known).
func parseRequest(data []byte) (request, []json.RawMessage, *Error) {
	var req request
	if err := json.Unmarshal(data, &req); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) || !json.Valid(data) {
			return req, nil, &Error{Code: codeParse, Message: "Parse error"}
		}
		if len(data) > 0 && data[0] == '[' {
			return req, nil, &Error{Code: codeInvalidRequest, Message: "Invalid request: batch requests are not supported over the websocket; send one request per message"}
		}
		return req, nil, &Error{Code: codeInvalidRequest, Message: "Invalid request"}
	}
	if req.JSONRPC != "2.0" || req.Method == "" {
		return req, nil, &Error{Code: codeInvalidRequest, Message: "Invalid request"}
	}
	var params []json.RawMessage
	if len(req.Params) > 0 && string(req.Params) != "null" {
		if err := json.Unmarshal(req.Params, &params); err != nil {
			return req, nil, invalidParams("Invalid params: params must be an array")
		}
	}
	return req, params, nil
}

func wantParams(params []json.RawMessage, min, max int) *Error {
	if len(params) < min {
		return invalidParams("Invalid params: expected at least %d parameter(s)", min)
	}
	if len(params) > max {
		return invalidParams("Invalid params: expected at most %d parameter(s)", max)
	}
	return nil
}

// subConfig is the options object of signatureSubscribe and
// accountSubscribe (RpcSignatureSubscribeConfig, RpcAccountInfoConfig).
type subConfig struct {
	Commitment                 string          `json:"commitment"`
	Encoding                   string          `json:"encoding"`
	EnableReceivedNotification bool            `json:"enableReceivedNotification"`
	DataSlice                  json.RawMessage `json:"dataSlice"`
	MinContextSlot             *uint64         `json:"minContextSlot"` // ignored, as Agave does
}

func parseSubConfig(params []json.RawMessage, i int) (subConfig, *Error) {
	var c subConfig
	if i >= len(params) || string(params[i]) == "null" {
		return c, nil
	}
	if err := json.Unmarshal(params[i], &c); err != nil {
		return c, invalidParams("Invalid params: %v", err)
	}
	if len(c.DataSlice) > 0 && string(c.DataSlice) != "null" {
		return c, invalidParams("Invalid params: dataSlice is not supported by tpu's accountSubscribe")
	}
	return c, nil
}

// parseString reads a string parameter; thing names it in the error, as
// Agave's param() does ("Invalid Request: Invalid pubkey provided").
func parseString(raw json.RawMessage) (string, bool) {
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

func parsePubkey(raw json.RawMessage) (banking.Pubkey, *Error) {
	s, ok := parseString(raw)
	b, err := base58.Decode(s)
	if !ok || err != nil || len(b) != 32 {
		return banking.Pubkey{}, invalidParams("Invalid Request: Invalid pubkey provided")
	}
	return banking.Pubkey(b), nil
}

func parseSignature(raw json.RawMessage) ([64]byte, *Error) {
	s, ok := parseString(raw)
	b, err := base58.Decode(s)
	if !ok || err != nil || len(b) != 64 {
		return [64]byte{}, invalidParams("Invalid Request: Invalid signature provided")
	}
	return [64]byte(b), nil
}

// parseID reads an unsubscribe's subscription id: a number (or, as
// jsonrpc_pubsub accepts, a string of one).
func parseID(raw json.RawMessage) (uint64, *Error) {
	var n uint64
	if json.Unmarshal(raw, &n) == nil {
		return n, nil
	}
	if s, ok := parseString(raw); ok {
		if n, err := strconv.ParseUint(s, 10, 64); err == nil {
			return n, nil
		}
	}
	return 0, invalidParams("Invalid params: invalid subscription id %s", raw)
}
