package jsonrpc

import (
	"encoding/json"
	"errors"
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

// The errors of the envelope, worded as Solana's servers word them.
// They are shared: never modify one.
var (
	ErrParse          = &Error{Code: CodeParse, Message: "Parse error"}
	ErrInvalidRequest = &Error{Code: CodeInvalidRequest, Message: "Invalid request"}
	ErrMethodNotFound = &Error{Code: CodeMethodNotFound, Message: "Method not found"}
)

// NullID is the id of a response to a request whose id is unknown.
var NullID = json.RawMessage("null")

// Unmarshal reads data as one request object. It fails with ErrParse
// when data is not JSON, and with ErrInvalidRequest when it is JSON but
// not an object of a request's fields (an array, a number, a field of
// the wrong type). On a failure req holds what could be read of it: the
// id, perhaps.
func Unmarshal(data []byte) (req Request, e *Error) {
	if err := json.Unmarshal(data, &req); err != nil {
		// json.Unmarshal checks that data is JSON before it decodes
		// anything: a *SyntaxError is bytes that are not.
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return req, ErrParse
		}
		return req, ErrInvalidRequest
	}
	return req, nil
}

// Check reports ErrInvalidRequest for a request that is not JSON-RPC 2.0
// or names no method.
func (r *Request) Check() *Error {
	if r.JSONRPC != "2.0" || r.Method == "" {
		return ErrInvalidRequest
	}
	return nil
}

// Positional returns r's parameters: none (no params, or null), or the
// values of an array. Solana's servers take positional parameters only;
// anything else is a CodeInvalidParams error.
func (r *Request) Positional() ([]json.RawMessage, *Error) {
	var params []json.RawMessage
	if len(r.Params) > 0 && string(r.Params) != "null" {
		if err := json.Unmarshal(r.Params, &params); err != nil {
			return nil, InvalidParams("Invalid params: params must be an array")
		}
	}
	return params, nil
}

// Reply returns the response to the request id carrying result (nil is
// a null result). An empty id (none was read) is NullID.
func Reply(id json.RawMessage, result any) Response {
	if result == nil {
		result = json.RawMessage("null") // a nil Result would leave "result" out
	}
	return Response{JSONRPC: "2.0", ID: idOr(id), Result: result}
}

// Fail returns the response to the request id carrying e. An empty id
// (none was read, or the request was not read at all) is NullID.
func Fail(id json.RawMessage, e *Error) Response {
	return Response{JSONRPC: "2.0", ID: idOr(id), Error: e}
}

func idOr(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return NullID
	}
	return id
}

// internalError is what Marshal sends for a response it cannot encode.
const internalError = `{"jsonrpc":"2.0","error":{"code":-32603,"message":"Internal error"},"id":null}`

// Marshal encodes a response, or a batch of responses. A response that
// does not encode (a result encoding/json refuses) is replaced by an
// Internal error with a null id: the client is always sent valid
// JSON-RPC.
func Marshal[T Response | []Response](v T) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(internalError) // a copy: the caller may append to it
	}
	return b
}

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
