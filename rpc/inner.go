package rpc

import (
	"encoding/binary"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/banking"
)

// uiInner is Agave's UiInnerInstructions: the instructions top-level
// instruction Index invoked.
type uiInner struct {
	Index        uint8 `json:"index"`
	Instructions []any `json:"instructions"`
}

// uiCompiled is Agave's UiCompiledInstruction, as the json encoding
// gives an inner instruction.
type uiCompiled struct {
	ProgramIDIndex uint8  `json:"programIdIndex"`
	Accounts       []int  `json:"accounts"`
	Data           string `json:"data"`
	StackHeight    uint32 `json:"stackHeight"`
}

// groupInner groups inner instructions by the top-level instruction that
// made them, rendering each with f; an empty list (not null) for none.
func groupInner(inner []banking.Inner, f func(*banking.Inner) any) []any {
	out := []any{}
	for i := range inner {
		in := &inner[i]
		if n := len(out); n == 0 || out[n-1].(*uiInner).Index != in.Outer {
			out = append(out, &uiInner{Index: in.Outer})
		}
		g := out[len(out)-1].(*uiInner)
		g.Instructions = append(g.Instructions, f(in))
	}
	return out
}

// innerCompiled renders inner instructions as getTransaction's json,
// base58 and base64 encodings do.
func innerCompiled(inner []banking.Inner) []any {
	return groupInner(inner, func(in *banking.Inner) any {
		accts := make([]int, len(in.Accounts))
		for i, a := range in.Accounts {
			accts[i] = int(a)
		}
		return uiCompiled{ProgramIDIndex: in.Program, Accounts: accts, Data: base58.Encode(in.Data), StackHeight: uint32(in.StackHeight)}
	})
}

// innerParsed renders inner instructions as jsonParsed and
// simulateTransaction do (Agave's UiInnerInstructions::parse): keys are
// the transaction's account keys (static, then loaded) in base58. The
// System instructions tpu's programs invoke (transfer, allocate,
// assign) are parsed as solana-transaction-status parse_system.rs
// parses them; anything else is partially decoded.
func innerParsed(inner []banking.Inner, keys []string) []any {
	return groupInner(inner, func(in *banking.Inner) any {
		h := uint32(in.StackHeight)
		accts := make([]string, 0, len(in.Accounts))
		for _, a := range in.Accounts {
			if int(a) < len(keys) {
				accts = append(accts, keys[a])
			}
		}
		prog := ""
		if int(in.Program) < len(keys) {
			prog = keys[in.Program]
		}
		if prog == systemProgramID && len(accts) == len(in.Accounts) {
			if p := parseSystemCPI(in.Data, accts); p != nil {
				return parsedInstruction{Program: "system", ProgramID: prog, Parsed: p, StackHeight: &h}
			}
		}
		return partiallyDecodedInner{ProgramID: prog, Accounts: accts, Data: base58.Encode(in.Data), StackHeight: &h}
	})
}

// partiallyDecodedInner is UiPartiallyDecodedInstruction with its stack
// height.
type partiallyDecodedInner struct {
	ProgramID   string   `json:"programId"`
	Accounts    []string `json:"accounts"`
	Data        string   `json:"data"`
	StackHeight *uint32  `json:"stackHeight"`
}

// parseSystemCPI parses a System transfer, allocate or assign; nil for
// anything else.
func parseSystemCPI(d []byte, accts []string) map[string]any {
	if len(d) < 4 {
		return nil
	}
	switch tag := binary.LittleEndian.Uint32(d); {
	case tag == 2 && len(d) >= 12 && len(accts) >= 2:
		return map[string]any{"info": map[string]any{"destination": accts[1], "lamports": binary.LittleEndian.Uint64(d[4:]), "source": accts[0]}, "type": "transfer"}
	case tag == 8 && len(d) >= 12 && len(accts) >= 1:
		return map[string]any{"info": map[string]any{"account": accts[0], "space": binary.LittleEndian.Uint64(d[4:])}, "type": "allocate"}
	case tag == 1 && len(d) >= 36 && len(accts) >= 1:
		return map[string]any{"info": map[string]any{"account": accts[0], "owner": base58.Encode(d[4:36])}, "type": "assign"}
	}
	return nil
}

// txKeys returns a transaction's account keys in base58: static, then
// loaded.
func txKeys(static []string, loaded []banking.Pubkey) []string {
	keys := append([]string(nil), static...)
	for i := range loaded {
		keys = append(keys, base58.Encode(loaded[i][:]))
	}
	return keys
}
