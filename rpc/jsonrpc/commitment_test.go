package jsonrpc

import (
	"encoding/json"
	"testing"
)

func TestCommitment(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Commitment
	}{
		{"processed", Processed}, {"confirmed", Confirmed}, {"finalized", Finalized},
		{"", Finalized}, // Solana's default
	} {
		got, e := ParseCommitment(c.in)
		if e != nil || got != c.want {
			t.Errorf("%q: %v %v, want %v", c.in, got, e, c.want)
		}
		if c.in != "" && got.String() != c.in {
			t.Errorf("%v.String() %q", got, got.String())
		}
	}
	for _, in := range []string{"max", "Finalized", "recent"} {
		_, e := ParseCommitment(in)
		want := "Invalid params: unknown variant `" + in + "`, expected one of `processed`, `confirmed`, `finalized`"
		if e == nil || e.Code != CodeInvalidParams || e.Message != want {
			t.Errorf("%q: %v", in, e)
		}
	}
	if !(Processed < Confirmed && Confirmed < Finalized) {
		t.Error("levels out of order")
	}
	b, err := json.Marshal(struct {
		S Commitment `json:"confirmationStatus"`
	}{Confirmed})
	if err != nil || string(b) != `{"confirmationStatus":"confirmed"}` {
		t.Errorf("%s %v", b, err)
	}
}
