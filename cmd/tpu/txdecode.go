package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mr-tron/base58"

	"github.com/tpugo/tpu/rpc/txjson"
	"github.com/tpugo/tpu/stages/sigverify"
	"github.com/tpugo/tpu/txview"
)

func init() {
	register(command{
		name:    "tx decode",
		summary: "decode and check Solana transactions (base64 or base58)",
		run:     runTxDecode,
	})
}

const txDecodeHelp = `Usage: tpu tx decode [--json] [--verify [--sigverify-backend NAME]] [--encoding auto|base64|base58] [TX]

Decodes a wire transaction given as base64 or base58: TX, or with no
argument one per line on standard input. Each transaction is framed and
sanitized exactly as the pipeline does it; a failure prints its reason
and processing goes on. With --verify each signature is checked with
Solana's rule (ed25519-dalek verify_strict) and reported "ok" or
"invalid". The exit status is 1 if any input failed to decode (an invalid
signature is a verdict, not a failure).

Flags:`

func runTxDecode(env *cliEnv, args []string) int {
	fs := env.flagSet("tpu tx decode", txDecodeHelp)
	asJSON := fs.Bool("json", false, "print one JSON object per input line")
	encoding := fs.String("encoding", "auto", "input encoding: auto, base64 or base58")
	verify := fs.Bool("verify", false, "check every signature (adds signatureVerdicts)")
	backendName := fs.String("sigverify-backend", sigverify.DefaultBackend, "for --verify: "+sigverify.BackendUsage())
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	switch *encoding {
	case "auto", "base64", "base58":
	default:
		fmt.Fprintf(env.stderr, "tpu tx decode: unknown encoding %q (auto, base64, base58)\n", *encoding)
		return 2
	}
	var backend sigverify.Backend
	if *verify {
		var err error
		if backend, err = sigverify.NewBackend(*backendName); err != nil {
			fmt.Fprintf(env.stderr, "tpu tx decode: %v\n", err)
			return 2
		}
	}
	if fs.NArg() > 1 {
		fmt.Fprintln(env.stderr, "tpu tx decode: give one transaction, or none to read lines from standard input")
		return 2
	}
	out := bufio.NewWriter(env.stdout)
	defer out.Flush()

	failed := false
	decodeOne := func(text string) {
		d := decodeTx(text, *encoding)
		if d.err != nil {
			failed = true
		} else if backend != nil {
			d.verdicts = verdicts(d.v, backend)
		}
		if *asJSON {
			writeJSONLine(out, d)
		} else {
			writeText(out, d)
		}
	}
	if fs.NArg() == 1 {
		decodeOne(fs.Arg(0))
	} else {
		sc := bufio.NewScanner(env.stdin)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" {
				continue
			}
			decodeOne(line)
		}
		if err := sc.Err(); err != nil {
			out.Flush()
			fmt.Fprintf(env.stderr, "tpu tx decode: reading standard input: %v\n", err)
			return 1
		}
	}
	if failed {
		return 1
	}
	return 0
}

// decoded is one input's result.
type decoded struct {
	raw      []byte
	v        txview.View
	err      error
	verdicts []string // with --verify: "ok" or "invalid" per signature
}

// verdicts checks each signature of v: signature i by static key i over
// the message.
func verdicts(v txview.View, b sigverify.Backend) []string {
	out := make([]string, v.NumSignatures())
	for i := range out {
		out[i] = "invalid"
		if b.Verify(v.StaticKey(i), v.Message(), v.Signature(i)) {
			out[i] = "ok"
		}
	}
	return out
}

var (
	errUndecodable = errors.New("input is neither base64 nor base58")
	errNotBase64   = errors.New("input is not base64")
	errNotBase58   = errors.New("input is not base58")
)

// decodeTx turns text into bytes and parses them. With encoding "auto" a
// string valid in both alphabets is taken as whichever one parses as a
// transaction, base58 first.
func decodeTx(text, encoding string) decoded {
	var candidates [][]byte
	var decodeErr error
	if encoding == "auto" || encoding == "base58" {
		if b, err := base58.Decode(text); err == nil && len(b) > 0 {
			candidates = append(candidates, b)
		} else if encoding == "base58" {
			decodeErr = errNotBase58
		}
	}
	if encoding == "auto" || encoding == "base64" {
		if b, err := base64.StdEncoding.DecodeString(text); err == nil {
			candidates = append(candidates, b)
		} else if encoding == "base64" {
			decodeErr = errNotBase64
		}
	}
	if len(candidates) == 0 {
		if decodeErr == nil {
			decodeErr = errUndecodable
		}
		return decoded{err: decodeErr}
	}
	var first decoded
	for i, b := range candidates {
		v, err := txview.Parse(b)
		d := decoded{raw: b, v: v, err: err}
		if err == nil {
			return d
		}
		if i == 0 {
			first = d
		}
	}
	return first
}

// txJSON is the --json output for one transaction: its version and
// signatures, the message's fields as getTransaction names them
// (txjson.Message), then what only tx decode adds.
type txJSON struct {
	Version    string   `json:"version"`
	Signatures []string `json:"signatures"`
	txjson.Message
	MessageHash       string     `json:"messageHash"`
	ComputeBudget     budgetJSON `json:"computeBudget"`
	SignatureVerdicts []string   `json:"signatureVerdicts,omitempty"`
}

// budgetJSON holds the compute-budget details, or the error that makes a
// transaction's compute-budget instructions invalid (the transaction
// still decodes; banking would drop it).
type budgetJSON struct {
	UnitLimit                   *uint32 `json:"unitLimit,omitempty"`
	UnitPrice                   *uint64 `json:"unitPrice,omitempty"`
	HeapFrame                   *uint32 `json:"heapFrame,omitempty"`
	LoadedAccountsDataSizeLimit *uint32 `json:"loadedAccountsDataSizeLimit,omitempty"`
	Error                       string  `json:"error,omitempty"`
}

func toJSON(v txview.View) txJSON {
	t := txjson.Encode(v)
	h := v.MessageHash()
	j := txJSON{Version: v.Version().String(), Signatures: t.Signatures, Message: t.Message, MessageHash: base58.Encode(h[:])}
	if cb, err := v.ComputeBudget(); err != nil {
		j.ComputeBudget.Error = err.Error()
	} else {
		j.ComputeBudget = budgetJSON{UnitLimit: &cb.UnitLimit, UnitPrice: &cb.UnitPrice, HeapFrame: &cb.HeapFrame, LoadedAccountsDataSizeLimit: &cb.LoadedAccountsDataSizeLimit}
	}
	return j
}

func writeJSONLine(w io.Writer, d decoded) {
	var b []byte
	if d.err != nil {
		b, _ = json.Marshal(map[string]string{"error": d.err.Error()})
	} else {
		j := toJSON(d.v)
		j.SignatureVerdicts = d.verdicts
		b, _ = json.Marshal(j)
	}
	w.Write(append(b, '\n'))
}

func writeText(w io.Writer, d decoded) {
	if d.err != nil {
		fmt.Fprintf(w, "error: %v\n\n", d.err)
		return
	}
	v, j := d.v, toJSON(d.v)
	fmt.Fprintf(w, "%s transaction, %d bytes\n", j.Version, len(d.raw))
	fmt.Fprintf(w, "signatures:\n")
	for i, s := range j.Signatures {
		if d.verdicts != nil {
			fmt.Fprintf(w, "  %d  %s  %s\n", i, s, d.verdicts[i])
		} else {
			fmt.Fprintf(w, "  %d  %s\n", i, s)
		}
	}
	fmt.Fprintf(w, "header: %d required signatures, %d readonly signed, %d readonly unsigned\n",
		j.Header.NumRequiredSignatures, j.Header.NumReadonlySignedAccounts, j.Header.NumReadonlyUnsignedAccounts)
	fmt.Fprintf(w, "account keys:\n")
	for i, k := range j.AccountKeys {
		fmt.Fprintf(w, "  %-3d %-44s %s\n", i, k, access(v, i))
	}
	fmt.Fprintf(w, "recent blockhash: %s\n", j.RecentBlockhash)
	fmt.Fprintf(w, "instructions:\n")
	for i, in := range j.Instructions {
		fmt.Fprintf(w, "  %-3d program %d (%s) accounts %v data %s (%d bytes)\n", i, in.ProgramIDIndex,
			programName(v.StaticKey(int(in.ProgramIDIndex))), in.Accounts, in.Data, base58Len(in.Data))
	}
	if len(j.AddressTableLookups) > 0 {
		fmt.Fprintf(w, "address table lookups:\n")
		for _, l := range j.AddressTableLookups {
			fmt.Fprintf(w, "  %s writable %v readonly %v\n", l.AccountKey, l.WritableIndexes, l.ReadonlyIndexes)
		}
	}
	fmt.Fprintf(w, "message hash: %s\n", j.MessageHash)
	if cb := j.ComputeBudget; cb.Error != "" {
		fmt.Fprintf(w, "compute budget: invalid: %s\n", cb.Error)
	} else {
		fmt.Fprintf(w, "compute budget: unit limit %d, unit price %d micro-lamports, heap frame %d, loaded accounts data size limit %d\n",
			*cb.UnitLimit, *cb.UnitPrice, *cb.HeapFrame, *cb.LoadedAccountsDataSizeLimit)
	}
	fmt.Fprintln(w)
}

func base58Len(s string) int {
	b, _ := base58.Decode(s)
	return len(b)
}

func access(v txview.View, i int) string {
	var parts []string
	if v.IsSigner(i) {
		parts = append(parts, "signer")
	}
	if v.IsWritable(i) {
		parts = append(parts, "writable")
	} else {
		parts = append(parts, "readonly")
	}
	if i == 0 {
		parts = append(parts, "fee payer")
	}
	return strings.Join(parts, ", ")
}

func programName(k *[32]byte) string {
	switch *k {
	case txview.SystemProgram:
		return "system"
	case txview.ComputeBudgetProgram:
		return "compute budget"
	case txview.VoteProgram:
		return "vote"
	case txview.MemoProgram, txview.MemoV1Program:
		return "memo"
	}
	return base58.Encode(k[:])
}
