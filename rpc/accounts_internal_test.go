package rpc

import (
	"bytes"
	"encoding/base64"
	"testing"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking/bank"
)

// TestEncodeAccountDataSlice checks getAccountInfo's dataSlice, as
// Agave's slice_data cuts: the bytes from offset, at most length of them,
// none past the end; space stays the account's whole length. @solana/kit's
// durable-nonce sender reads a nonce this way (offset 40, length 32,
// base58): ignoring the slice made it see a wrong nonce.
func TestEncodeAccountDataSlice(t *testing.T) {
	data := make([]byte, 80)
	for i := range data {
		data[i] = byte(i + 1)
	}
	a := bank.Account{Lamports: 7, Data: data}
	for _, c := range []struct {
		name  string
		slice *dataSlice
		want  []byte
	}{
		{"none", nil, data},
		{"nonce", &dataSlice{Offset: 40, Length: 32}, data[40:72]},
		{"to the end", &dataSlice{Offset: 70, Length: 32}, data[70:]},
		{"at the end", &dataSlice{Offset: 80, Length: 5}, nil},
		{"past the end", &dataSlice{Offset: 1000, Length: 5}, nil},
		{"zero length", &dataSlice{Offset: 3, Length: 0}, nil},
		{"huge length", &dataSlice{Offset: 1, Length: ^uint64(0)}, data[1:]},
	} {
		for _, enc := range []string{"base64", "base58", "binary"} {
			v, e := encodeAccount(a, true, enc, c.slice)
			if e != nil {
				t.Fatalf("%s %s: %v", c.name, enc, e.Message)
			}
			out := v.(accountJSON)
			if out.Space != len(data) || out.Lamports != 7 {
				t.Errorf("%s %s: space %d lamports %d, want %d 7", c.name, enc, out.Space, out.Lamports, len(data))
			}
			var got []byte
			var err error
			switch d := out.Data.(type) {
			case [2]string:
				if d[1] != enc {
					t.Errorf("%s %s: encoding %q", c.name, enc, d[1])
				}
				if enc == "base64" {
					got, err = base64.StdEncoding.DecodeString(d[0])
				} else if d[0] != "" { // mr-tron/base58 refuses "", the encoding of no bytes
					got, err = base58.Decode(d[0])
				}
			case string:
				if enc != "binary" {
					t.Errorf("%s %s: plain string data", c.name, enc)
				}
				if d != "" {
					got, err = base58.Decode(d)
				}
			}
			if err != nil || !bytes.Equal(got, c.want) {
				t.Errorf("%s %s: data %x %v, want %x", c.name, enc, got, err, c.want)
			}
		}
	}
	// base58's 128-byte bound applies to the slice, not the account.
	big := bank.Account{Data: make([]byte, 1000)}
	if _, e := encodeAccount(big, true, "base58", nil); e == nil {
		t.Error("base58 of 1000 bytes was not refused")
	}
	if _, e := encodeAccount(big, true, "base58", &dataSlice{Offset: 500, Length: 32}); e != nil {
		t.Errorf("base58 of a 32-byte slice of 1000 bytes: %s", e.Message)
	}
	// jsonParsed cannot be sliced (Agave's check_slice_and_encoding), even
	// for a missing account.
	for _, ok := range []bool{true, false} {
		if _, e := encodeAccount(a, ok, "jsonParsed", &dataSlice{Length: 4}); e == nil || e.Message != "Sliced account data can only be encoded using binary (base 58) or base64 encoding." {
			t.Errorf("jsonParsed with a slice (account %v): %v", ok, e)
		}
	}
}
