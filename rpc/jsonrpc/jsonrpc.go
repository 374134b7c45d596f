// Package jsonrpc holds the JSON-RPC 2.0 message types and error codes
// that tpu's two Solana-compatible servers share: rpc (HTTP) and
// rpc/pubsub (websocket). Each server keeps its own parsing of
// parameters, since Solana's two servers word their errors differently.
package jsonrpc

import (
	"encoding/json"
	"fmt"
)

// Request is a JSON-RPC request.
type Request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// Response is a JSON-RPC response: a Result or an Error.
type Response struct {
	JSONRPC string          `json:"jsonrpc"`
	Result  any             `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
	ID      json.RawMessage `json:"id"`
}

// Error is a JSON-RPC error object.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"` // e.g. a failed preflight's simulation
}

func (e *Error) Error() string { return fmt.Sprintf("%d: %s", e.Code, e.Message) }

// JSON-RPC error codes (the spec's; Solana uses the same for these).
const (
	CodeParse          = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternal       = -32603
)

// NullID is the id of a response to a request whose id is unknown.
var NullID = json.RawMessage("null")

// InvalidParams returns a CodeInvalidParams error with a formatted message.
func InvalidParams(format string, args ...any) *Error {
	return &Error{Code: CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// WantParams returns an error unless params holds min to max values.
func WantParams(params []json.RawMessage, min, max int) *Error {
	if len(params) < min {
		return InvalidParams("Invalid params: expected at least %d parameter(s)", min)
	}
	if len(params) > max {
		return InvalidParams("Invalid params: expected at most %d parameter(s)", max)
	}
	return nil
}
