package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"

	"github.com/tpugo/tpu/httpguard"
	"github.com/tpugo/tpu/rpc/jsonrpc"
)

// Error is a JSON-RPC error object (jsonrpc.Error).
type Error = jsonrpc.Error

// call is one HTTP request's allowance, shared by the requests of a
// batch.
type call struct {
	ctx     context.Context // the HTTP request's: done when its client goes away or the server closes
	items   int             // signatures and accounts it may still name (MaxItems)
	history uint64          // slots of history it may still search (HistorySlots)
	addr    netip.Addr      // the client's, as its budget for expensive work counts (httpguard.Key)
	limited bool            // a request was refused for the address's budget
}

// spend takes n items from c's allowance, or says why it cannot.
func (q *call) spend(n, max int) *Error {
	if n > q.items {
		return jsonrpc.InvalidParams("Too many inputs provided: %d more signatures or accounts would pass the %d one HTTP request (a whole batch) may name", n, max)
	}
	q.items -= n
	return nil
}

// errCancelled answers a request whose context ended: its client went
// away, or the server is closing.
var errCancelled = &Error{Code: jsonrpc.CodeInternal, Message: "request cancelled: the client went away or the server is shutting down"}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.enter() {
		w.WriteHeader(http.StatusServiceUnavailable)
		writeJSON(w, jsonrpc.Fail(nil, &Error{Code: jsonrpc.CodeInternal, Message: "server is shutting down"}))
		return
	}
	defer s.leave()
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
			writeJSON(w, jsonrpc.Fail(nil, &Error{Code: jsonrpc.CodeInvalidRequest, Message: "request too large"}))
			return
		}
		writeJSON(w, jsonrpc.Fail(nil, jsonrpc.ErrParse))
		return
	}
	if nestedDeeper(body, s.cfg.MaxDepth) {
		writeJSON(w, jsonrpc.Fail(nil, &Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("Invalid request: JSON nested more than %d levels deep", s.cfg.MaxDepth)}))
		return
	}
	c := &call{ctx: r.Context(), items: s.cfg.MaxItems, history: s.cfg.HistorySlots, addr: httpguard.Key(r.RemoteAddr)}
	if trimmed := bytes.TrimSpace(body); len(trimmed) > 0 && trimmed[0] == '[' { // a batch
		var reqs []json.RawMessage
		if err := json.Unmarshal(body, &reqs); err != nil {
			writeJSON(w, jsonrpc.Fail(nil, jsonrpc.ErrParse))
			return
		}
		if len(reqs) == 0 {
			writeJSON(w, jsonrpc.Fail(nil, jsonrpc.ErrInvalidRequest))
			return
		}
		if len(reqs) > s.cfg.MaxBatch {
			writeJSON(w, jsonrpc.Fail(nil, &Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("Invalid request: batch of %d requests, more than the %d allowed", len(reqs), s.cfg.MaxBatch)}))
			return
		}
		out := make([]jsonrpc.Response, len(reqs))
		for i, raw := range reqs {
			out[i] = s.handle(c, raw)
		}
		writeJSON(w, out)
		return
	}
	resp := s.handle(c, body)
	if c.limited {
		// A lone request refused for its budget is HTTP 429, which
		// clients (web3.js) retry after a delay.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
	}
	writeJSON(w, resp)
}

// writeJSON writes a response, or a batch of them, as the HTTP body.
func writeJSON[T jsonrpc.Response | []jsonrpc.Response](w http.ResponseWriter, v T) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(jsonrpc.Marshal(v), '\n'))
}

// handle answers one request, drawing on c's allowance.
func (s *Server) handle(c *call, raw []byte) jsonrpc.Response {
	req, e := jsonrpc.Unmarshal(raw)
	if e != nil {
		return jsonrpc.Fail(nil, e) // over HTTP, a request not read whole is answered with a null id
	}
	if e := req.Check(); e != nil {
		return jsonrpc.Fail(req.ID, e)
	}
	h, ok := methods[req.Method]
	if !ok {
		return jsonrpc.Fail(req.ID, jsonrpc.ErrMethodNotFound)
	}
	params, e := req.Positional()
	if e != nil {
		return jsonrpc.Fail(req.ID, e)
	}
	if c.ctx.Err() != nil {
		return jsonrpc.Fail(req.ID, errCancelled)
	}
	result, e := h(s, c, params)
	if e != nil {
		return jsonrpc.Fail(req.ID, e)
	}
	return jsonrpc.Reply(req.ID, result)
}
