package pubsub

import (
	"encoding/json"
	"strconv"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/rpc/jsonrpc"
)

// Error is a JSON-RPC error object (jsonrpc.Error).
type Error = jsonrpc.Error

// errBatch answers a batch: over the websocket a message is one request.
var errBatch = &Error{Code: jsonrpc.CodeInvalidRequest, Message: "Invalid request: batch requests are not supported over the websocket; send one request per message"}

// decode reads one message as a request and its parameters, or returns
// the error to answer, with the request's id once it is known: over the
// websocket, even one read from a request that did not unmarshal whole.
func decode(data []byte) (jsonrpc.Request, []json.RawMessage, *Error) {
	req, e := jsonrpc.Unmarshal(data)
	if e == jsonrpc.ErrInvalidRequest && len(data) > 0 && data[0] == '[' {
		e = errBatch
	}
	if e == nil {
		e = req.Check()
	}
	if e != nil {
		return req, nil, e
	}
	params, e := req.Positional()
	return req, params, e
}

// reply encodes the response to the request id: its result, or e.
func reply(id json.RawMessage, result any, e *Error) []byte {
	if e != nil {
		return jsonrpc.Marshal(jsonrpc.Fail(id, e))
	}
	return jsonrpc.Marshal(jsonrpc.Reply(id, result))
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
		return c, jsonrpc.InvalidParams("Invalid params: %v", err)
	}
	if len(c.DataSlice) > 0 && string(c.DataSlice) != "null" {
		return c, jsonrpc.InvalidParams("Invalid params: dataSlice is not supported by tpu's accountSubscribe")
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
		return banking.Pubkey{}, jsonrpc.InvalidParams("Invalid Request: Invalid pubkey provided")
	}
	return banking.Pubkey(b), nil
}

func parseSignature(raw json.RawMessage) ([64]byte, *Error) {
	s, ok := parseString(raw)
	b, err := base58.Decode(s)
	if !ok || err != nil || len(b) != 64 {
		return [64]byte{}, jsonrpc.InvalidParams("Invalid Request: Invalid signature provided")
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
	return 0, jsonrpc.InvalidParams("Invalid params: invalid subscription id %s", raw)
}
