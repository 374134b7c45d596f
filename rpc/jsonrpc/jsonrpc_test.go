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
