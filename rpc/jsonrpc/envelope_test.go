package jsonrpc

import (
	"encoding/json"
	"testing"
)

func TestWantParams(t *testing.T) {
	p := make([]json.RawMessage, 2)
	for _, c := range []struct {
		n, min, max int
		want        string
	}{
		{2, 1, 2, ""},
		{2, 2, 2, ""},
		{0, 1, 2, "Invalid params: expected at least 1 parameter(s)"},
		{2, 0, 1, "Invalid params: expected at most 1 parameter(s)"},
	} {
		e := WantParams(p[:c.n], c.min, c.max)
		if c.want == "" && e != nil || c.want != "" && (e == nil || e.Code != CodeInvalidParams || e.Message != c.want) {
			t.Errorf("%d params, %d-%d: %v, want %q", c.n, c.min, c.max, e, c.want)
		}
	}
}

// A response carries its result or its error, never both, and an
// error's data only when it has some.
func TestResponseJSON(t *testing.T) {
	for _, c := range []struct {
		r    Response
		want string
	}{
		{Response{JSONRPC: "2.0", ID: json.RawMessage("7"), Result: 1}, `{"jsonrpc":"2.0","result":1,"id":7}`},
		{Response{JSONRPC: "2.0", ID: NullID, Error: &Error{Code: CodeParse, Message: "Parse error"}}, `{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}`},
		{Response{JSONRPC: "2.0", ID: json.RawMessage(`"a"`), Error: &Error{Code: -32002, Message: "m", Data: map[string]int{"x": 1}}}, `{"jsonrpc":"2.0","error":{"code":-32002,"message":"m","data":{"x":1}},"id":"a"}`},
	} {
		b, err := json.Marshal(c.r)
		if err != nil || string(b) != c.want {
			t.Errorf("%s %v, want %s", b, err, c.want)
		}
	}
	if got := (&Error{Code: CodeInternal, Message: "boom"}).Error(); got != "-32603: boom" {
		t.Errorf("Error() %q", got)
	}
}

// Reading a request: the error each server answers, and what was read
// of the request even then (the id a websocket answer carries).
func TestDecode(t *testing.T) {
	for _, c := range []struct {
		name, data string
		want       *Error // from Unmarshal, then Check, then Positional
		id         string
		params     int
	}{
		{"request", `{"jsonrpc":"2.0","id":1,"method":"getSlot"}`, nil, "1", 0},
		{"null params", `{"jsonrpc":"2.0","id":"a","method":"getSlot","params":null}`, nil, `"a"`, 0},
		{"params", `{"jsonrpc":"2.0","id":2,"method":"getBalance","params":["k",{"commitment":"processed"}]}`, nil, "2", 2},
		{"no id", `{"jsonrpc":"2.0","method":"ping"}`, nil, "", 0},
		{"not JSON", `{"jsonrpc":"2.0","id":1,"method":`, ErrParse, "", 0},
		{"empty", ``, ErrParse, "", 0},
		{"an array", `[{"jsonrpc":"2.0","id":1,"method":"getSlot"}]`, ErrInvalidRequest, "", 0},
		{"a number", `1`, ErrInvalidRequest, "", 0},
		{"a field of the wrong type", `{"id":5,"jsonrpc":2,"method":"getSlot"}`, ErrInvalidRequest, "5", 0},
		{"no version", `{"id":1,"method":"getSlot"}`, ErrInvalidRequest, "1", 0},
		{"null", `null`, ErrInvalidRequest, "", 0},
		{"no method", `{"jsonrpc":"2.0","id":1}`, ErrInvalidRequest, "1", 0},
		{"named params", `{"jsonrpc":"2.0","id":3,"method":"getSlot","params":{"a":1}}`, InvalidParams("Invalid params: params must be an array"), "3", 0},
	} {
		req, e := Unmarshal([]byte(c.data))
		if e == nil {
			e = req.Check()
		}
		var params []json.RawMessage
		if e == nil {
			params, e = req.Positional()
		}
		if (e == nil) != (c.want == nil) || e != nil && (e.Code != c.want.Code || e.Message != c.want.Message) {
			t.Errorf("%s: error %v, want %v", c.name, e, c.want)
		}
		if string(req.ID) != c.id || len(params) != c.params {
			t.Errorf("%s: id %s, %d params; want %s, %d", c.name, req.ID, len(params), c.id, c.params)
		}
	}
}

// A response names its request's id, or null when none was read; a nil
// result is null, not left out.
func TestReplyFailMarshal(t *testing.T) {
	for _, c := range []struct {
		r    Response
		want string
	}{
		{Reply(json.RawMessage("7"), 1), `{"jsonrpc":"2.0","result":1,"id":7}`},
		{Reply(nil, nil), `{"jsonrpc":"2.0","result":null,"id":null}`},
		{Fail(nil, ErrParse), `{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}`},
		{Fail(json.RawMessage(`"a"`), ErrMethodNotFound), `{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":"a"}`},
	} {
		if got := string(Marshal(c.r)); got != c.want {
			t.Errorf("%s, want %s", got, c.want)
		}
	}
	batch := []Response{Reply(json.RawMessage("1"), "ok"), Fail(json.RawMessage("2"), ErrMethodNotFound)}
	if got, want := string(Marshal(batch)), `[{"jsonrpc":"2.0","result":"ok","id":1},{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":2}]`; got != want {
		t.Errorf("batch: %s, want %s", got, want)
	}
	// A result encoding/json refuses: an internal error, still JSON-RPC,
	// and a buffer of its own that the caller may append to.
	const internal = `{"jsonrpc":"2.0","error":{"code":-32603,"message":"Internal error"},"id":null}`
	b := Marshal(Reply(json.RawMessage("1"), func() {}))
	if string(b) != internal {
		t.Fatalf("unencodable result: %s", b)
	}
	_ = append(b, '!')
	if got := string(Marshal(Reply(json.RawMessage("1"), make(chan int)))); got != internal {
		t.Fatalf("after an append to the last: %s", got)
	}
}
