package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mr-tron/base58"
)

// run runs the CLI in-process and returns its exit status and outputs.
func run(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	env := &cliEnv{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }}
	code := runCLI(env, args)
	return code, out.String(), errOut.String()
}

// readSummary reads the file a run wrote with --summary-json.
func readSummary(t testing.TB, path string) summary {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

const sampleTx = "AfjEs3XhTc3hrxEvlnMPkm/cocvAUbFNbCl00qKnrFue6J53AhEqIFmcJJlJW3EDP5RmcMz+cNTTcZHW/WJYwAcBAAEDO8hh4VddzfcO5jbCt95jryl6y8ff65UcgukHNLWH+UQGgxCGGpgyfQVQV02EQYqm4QwzUt2qf9f1gVLM7rI4hwAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA6ANIF55zOZWROWRkeh+lExxZBnKFqbvIxZDLE7EijjoBAgIAAQwCAAAAOTAAAAAAAAA="

func TestHelp(t *testing.T) {
	code, out, _ := run(t, "", "help")
	if code != 0 || !strings.Contains(out, "tx decode") {
		t.Fatalf("help: %d %q", code, out)
	}
	if code, _, errOut := run(t, "", "nope"); code != 2 || !strings.Contains(errOut, "unknown command") {
		t.Fatalf("unknown command: %d %q", code, errOut)
	}
	// Every subcommand: --help prints its usage and its flags, exit 0; a
	// flag it does not have is reported, exit 2, before any work starts.
	for _, c := range []struct{ args, usage, flag string }{
		{"tx decode", "Usage: tpu tx decode", "-encoding"},
		{"bench banking", "Usage: tpu bench banking", "-iterations"},
		{"run", "Usage: tpu run", "-tpu-addr"},
		{"gen", "Usage: tpu gen", "-batch-size"},
		{"trace analyze", "Usage: tpu trace analyze", "-tracers"},
	} {
		args := strings.Fields(c.args)
		code, _, errOut := run(t, "", append(args, "--help")...)
		if code != 0 || !strings.Contains(errOut, c.usage) || !strings.Contains(errOut, c.flag) {
			t.Errorf("%s --help: exit %d, output %q", c.args, code, errOut)
		}
		code, _, errOut = run(t, "", append(args, "--no-such-flag")...)
		if code != 2 || !strings.Contains(errOut, "flag provided but not defined: -no-such-flag") {
			t.Errorf("%s --no-such-flag: exit %d, output %q", c.args, code, errOut)
		}
	}
}

func TestDecodeText(t *testing.T) {
	code, out, _ := run(t, "", "tx", "decode", sampleTx)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	for _, want := range []string{"legacy transaction, 215 bytes", "program 2 (system) accounts [0 1]", "unit limit 3000", "fee payer"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestDecodeJSONLines(t *testing.T) {
	in := sampleTx + "\n\n!!!not a tx\nAAAA\n" + sampleTx + "\n"
	code, out, _ := run(t, in, "tx", "decode", "--json")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (some inputs failed)", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4:\n%s", len(lines), out)
	}
	var ok map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &ok); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"version", "signatures", "header", "accountKeys", "recentBlockhash", "instructions", "addressTableLookups", "messageHash", "computeBudget"} {
		if _, has := ok[f]; !has {
			t.Errorf("missing field %s", f)
		}
	}
	if ok["messageHash"] != "D9QqaSvJayHo2jK3qP9XWoHPboLZtyfxRVDnX5iRLdJ3" {
		t.Errorf("messageHash %v", ok["messageHash"])
	}
	for i, want := range map[int]string{1: "input is neither base64 nor base58", 2: "txview: signature count out of range"} {
		var e map[string]string
		if err := json.Unmarshal([]byte(lines[i]), &e); err != nil || e["error"] != want {
			t.Errorf("line %d: %s, want error %q", i, lines[i], want)
		}
	}
	if lines[3] != lines[0] {
		t.Error("processing did not continue after errors")
	}
}

func TestDecodeBase58AndEncodingFlag(t *testing.T) {
	// The same transaction in base58.
	code, out, _ := run(t, "", "tx", "decode", "--json", sampleTx)
	var j txJSON
	if code != 0 || json.Unmarshal([]byte(out), &j) != nil {
		t.Fatal(out)
	}
	raw := decodeTx(sampleTx, "base64").raw
	code, out58, _ := run(t, "", "tx", "decode", "--json", base58.Encode(raw))
	if code != 0 || out58 != out {
		t.Fatalf("base58 input: %d\n%s\nvs\n%s", code, out58, out)
	}
	if code, out, _ := run(t, "", "tx", "decode", "--json", "--encoding", "base58", sampleTx); code != 1 || !strings.Contains(out, "not base58") {
		t.Fatalf("forced base58 on base64 input: %d %s", code, out)
	}
	if code, _, _ := run(t, "", "tx", "decode", "--encoding", "hex", sampleTx); code != 2 {
		t.Fatal("bad --encoding accepted")
	}
}

// TestDecodeCorpus decodes all 85 corpus transactions through the CLI and
// compares the JSON with the recorded fields.
func TestDecodeCorpus(t *testing.T) {
	var corpus []struct {
		ID     string `json:"id"`
		Base64 string `json:"base64"`
		Parsed struct {
			Version         string  `json:"version"`
			NumStaticKeys   int     `json:"num_static_account_keys"`
			RecentBlockhash string  `json:"recent_blockhash_b58"`
			MessageHash     string  `json:"message_hash_b58"`
			FirstSignature  string  `json:"first_signature_b58"`
			ParseError      *string `json:"parse_error"`
		} `json:"parsed_by_agave_model"`
	}
	readCorpus(t, &corpus)
	if len(corpus) != 85 {
		t.Fatalf("corpus has %d transactions, want 85", len(corpus))
	}
	var in strings.Builder
	for _, e := range corpus {
		in.WriteString(e.Base64 + "\n")
	}
	code, out, _ := run(t, in.String(), "tx", "decode", "--json")
	if code != 1 { // tx074 fails to parse
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(corpus) {
		t.Fatalf("%d lines for %d transactions", len(lines), len(corpus))
	}
	for i, e := range corpus {
		var j struct {
			txJSON
			Error string `json:"error"`
		}
		if err := json.Unmarshal([]byte(lines[i]), &j); err != nil {
			t.Fatalf("%s: %v", e.ID, err)
		}
		if e.Parsed.ParseError != nil {
			if j.Error == "" {
				t.Errorf("%s: no error", e.ID)
			}
			continue
		}
		if j.Version != e.Parsed.Version || len(j.AccountKeys) != e.Parsed.NumStaticKeys ||
			j.RecentBlockhash != e.Parsed.RecentBlockhash || j.MessageHash != e.Parsed.MessageHash ||
			j.Signatures[0] != e.Parsed.FirstSignature {
			t.Errorf("%s: %s", e.ID, lines[i])
		}
	}
}

func TestDecodeVerify(t *testing.T) {
	code, out, _ := run(t, "", "tx", "decode", "--json", "--verify", sampleTx)
	var j txJSON
	if code != 0 || json.Unmarshal([]byte(out), &j) != nil {
		t.Fatalf("%d %s", code, out)
	}
	if len(j.SignatureVerdicts) != 1 || j.SignatureVerdicts[0] != "ok" {
		t.Fatalf("verdicts %v", j.SignatureVerdicts)
	}
	// Flip a bit of the signature: a verdict of "invalid", not a failure.
	raw := decodeTx(sampleTx, "base64").raw
	raw[5] ^= 1
	for _, backend := range []string{"voi", "stdlib", "circl", "lanes"} {
		code, out, _ = run(t, "", "tx", "decode", "--json", "--verify", "--sigverify-backend", backend, base58.Encode(raw))
		if code != 0 || !strings.Contains(out, `"signatureVerdicts":["invalid"]`) {
			t.Fatalf("%s: %d %s", backend, code, out)
		}
	}
	if code, _, _ := run(t, "", "tx", "decode", "--verify", "--sigverify-backend", "nope", sampleTx); code != 2 {
		t.Fatal("unknown backend accepted")
	}
	// Without --verify there is no verdict field.
	if _, out, _ := run(t, "", "tx", "decode", "--json", sampleTx); strings.Contains(out, "signatureVerdicts") {
		t.Fatal("verdicts without --verify")
	}
	code, out, _ = run(t, "", "tx", "decode", "--verify", sampleTx)
	if code != 0 || !strings.Contains(out, "  ok\n") {
		t.Fatalf("text verdict: %s", out)
	}
}

// TestDecodeVerifyCorpus checks --verify against the corpus's
// per-signature verdicts.
func TestDecodeVerifyCorpus(t *testing.T) {
	var corpus []struct {
		ID     string `json:"id"`
		Base64 string `json:"base64"`
		Parsed struct {
			Verdicts []string `json:"sig_verify_strict"`
		} `json:"parsed_by_agave_model"`
	}
	readCorpus(t, &corpus)
	checked := 0
	for _, e := range corpus {
		if e.Parsed.Verdicts == nil {
			continue // the one that does not parse
		}
		_, out, _ := run(t, "", "tx", "decode", "--json", "--verify", e.Base64)
		var j txJSON
		if err := json.Unmarshal([]byte(out), &j); err != nil {
			t.Fatalf("%s: %v", e.ID, err)
		}
		for i, want := range e.Parsed.Verdicts {
			if want != "ok" {
				want = "invalid"
			}
			if j.SignatureVerdicts[i] != want {
				t.Errorf("%s signature %d: %s, want %s", e.ID, i, j.SignatureVerdicts[i], want)
			}
		}
		checked++
	}
	if checked != 84 {
		t.Fatalf("checked %d transactions, want 84", checked)
	}
}

// readCorpus reads the corpus of real transactions into v.
func readCorpus(t *testing.T, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "solana-tx", "corpus.json"))
	if err != nil {
		t.Fatalf("conformance data missing: %v", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}
