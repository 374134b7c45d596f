package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/mr-tron/base58"
)

// rpcClient is the little JSON-RPC client tpu gen needs.
type rpcClient struct {
	url  string
	http *http.Client
	id   atomic.Int64
}

func newRPCClient(url string) *rpcClient {
	return &rpcClient{url: url, http: &http.Client{Timeout: 10 * time.Second}}
}

type rpcErr struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcErr) Error() string { return fmt.Sprintf("rpc error %d: %s", e.Code, e.Message) }

// call invokes method with params and decodes the result into out.
func (c *rpcClient) call(ctx context.Context, method string, out any, params ...any) error {
	if params == nil {
		params = []any{}
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id.Add(1), "method": method, "params": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	defer resp.Body.Close()
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcErr         `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return fmt.Errorf("%s: HTTP %s: %w", method, resp.Status, err)
	}
	if r.Error != nil {
		return fmt.Errorf("%s: %w", method, r.Error)
	}
	if out != nil {
		return json.Unmarshal(r.Result, out)
	}
	return nil
}

func (c *rpcClient) latestBlockhash(ctx context.Context) ([32]byte, error) {
	var r struct {
		Value struct {
			Blockhash string `json:"blockhash"`
		} `json:"value"`
	}
	if err := c.call(ctx, "getLatestBlockhash", &r); err != nil {
		return [32]byte{}, err
	}
	b, err := base58.Decode(r.Value.Blockhash)
	if err != nil || len(b) != 32 {
		return [32]byte{}, fmt.Errorf("getLatestBlockhash: bad blockhash %q", r.Value.Blockhash)
	}
	return [32]byte(b), nil
}

func (c *rpcClient) slot(ctx context.Context) (uint64, error) {
	var s uint64
	err := c.call(ctx, "getSlot", &s)
	return s, err
}

func (c *rpcClient) blockhashValid(ctx context.Context, h [32]byte) (bool, error) {
	var r struct {
		Value bool `json:"value"`
	}
	err := c.call(ctx, "isBlockhashValid", &r, base58.Encode(h[:]))
	return r.Value, err
}

func (c *rpcClient) balance(ctx context.Context, key [32]byte) (uint64, error) {
	var r struct {
		Value uint64 `json:"value"`
	}
	err := c.call(ctx, "getBalance", &r, base58.Encode(key[:]))
	return r.Value, err
}

// sigStatus is the part of a signature status tpu gen reads.
type sigStatus struct {
	Slot uint64          `json:"slot"`
	Err  json.RawMessage `json:"err"`
}

// statuses returns the statuses of sigs (nil where unknown), 256 per call,
// from the recent window unless history is set (a history search reads
// every older slot).
func (c *rpcClient) statuses(ctx context.Context, sigs [][64]byte, history bool) ([]*sigStatus, error) {
	out := make([]*sigStatus, 0, len(sigs))
	for i := 0; i < len(sigs); i += 256 {
		chunk := sigs[i:min(i+256, len(sigs))]
		strs := make([]string, len(chunk))
		for j := range chunk {
			strs[j] = base58.Encode(chunk[j][:])
		}
		var r struct {
			Value []*sigStatus `json:"value"`
		}
		if err := c.call(ctx, "getSignatureStatuses", &r, strs, map[string]any{"searchTransactionHistory": history}); err != nil {
			return nil, err
		}
		out = append(out, r.Value...)
	}
	return out, nil
}
