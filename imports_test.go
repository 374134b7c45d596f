package tpu_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/tpugo/tpu"

// rule says what a package (and the packages under it) may import besides
// the standard library.
type rule struct {
	dir string
	// internal lists the project packages it may import.
	internal []string
	// external lists import-path prefixes of other modules it may import.
	external []string
}

// rules is the import direction of DESIGN.md: packet, txview <- trace,
// banking <- stages <- cmd, with the services (rpc: JSON-RPC and PubSub)
// beside the pipeline: banking <- rpc <- cmd, rpc never importing
// stages. Only stages imports protoactor-go; only cmd reads flags and the
// environment. The first rule whose dir matches a package wins, so a
// subpackage's own rule comes before its parent's: trace/procstats,
// standard library only, is measured with by banking's benchmark harness
// too; packet/mmsg, banking/bankingtrace (its mmap reader) and
// internal/cpupin (benchmarks' pinning) may use golang.org/x/sys.
var rules = []rule{
	{dir: "packet/mmsg", internal: []string{"packet"}, external: []string{"golang.org/x/sys/"}},
	// internal/cpupin: benchmarks' CPU pinning and thread CPU time.
	{dir: "internal/cpupin", external: []string{"golang.org/x/sys/"}},
	{dir: "packet/packettest", internal: []string{"packet"}},
	{dir: "packet"},
	{dir: "ed25519strict", external: []string{"filippo.io/edwards25519"}},
	{dir: "txview", external: []string{"lukechampine.com/blake3"}},
	{dir: "trace/procstats"},
	{dir: "httpguard"},
	{dir: "trace/cpustage", external: []string{"github.com/google/pprof/"}},
	{dir: "trace/report", internal: []string{"trace"}, external: []string{"gonum.org/v1/plot"}},
	{dir: "trace", internal: []string{"packet", "httpguard"}, external: []string{"go.opentelemetry.io/", "github.com/prometheus/client_golang/"}},
	// The banking packages, one concept each, import one way: banking
	// (keys, errors, fees) <- ledger <- bank <- runtime <- scheduler.
	// "=banking" is the root package alone, not its subpackages.
	{dir: "banking/bankingtrace", internal: []string{"packet", "txview", "banking"}, external: []string{"golang.org/x/sys/"}},
	{dir: "banking/bankingbench", internal: []string{"packet", "txview", "trace/procstats", "trace/cpustage", "banking"}},
	{dir: "banking/loadgen", internal: []string{"packet", "txview", "=banking", "banking/bank", "banking/runtime"}},
	{dir: "banking/banktest", internal: []string{"packet", "txview", "=banking", "banking/ledger", "banking/bank"}, external: []string{"github.com/cockroachdb/pebble/", "github.com/decred/dcrd/dcrec/secp256k1/", "golang.org/x/crypto/sha3"}},
	{dir: "banking/scheduler/schedtest", internal: []string{"banking/bank", "banking/scheduler"}},
	{dir: "banking/scheduler", internal: []string{"packet", "txview", "=banking", "banking/bank", "banking/runtime"}, external: []string{"github.com/panjf2000/ants/"}},
	{dir: "banking/runtime", internal: []string{"txview", "ed25519strict", "=banking", "banking/ledger", "banking/bank"}, external: []string{"github.com/decred/dcrd/dcrec/secp256k1/", "golang.org/x/crypto/sha3", "github.com/mr-tron/base58"}},
	{dir: "banking/bank", internal: []string{"txview", "ed25519strict", "=banking", "banking/ledger"}, external: []string{"github.com/cockroachdb/pebble/"}},
	{dir: "banking/ledger", internal: []string{"=banking"}, external: []string{"github.com/cockroachdb/pebble/"}},
	{dir: "banking", internal: []string{"txview"}, external: []string{"github.com/mr-tron/base58"}},
	{dir: "quic", internal: []string{"packet"}, external: []string{"github.com/quic-go/quic-go", "github.com/mr-tron/base58", "golang.org/x/net/"}},
	{dir: "stages", internal: []string{"packet", "txview", "trace", "banking", "ed25519strict", "quic"}, external: []string{
		"github.com/asynkron/protoactor-go", "github.com/panjf2000/ants/", "github.com/cloudflare/circl",
		"github.com/oasisprotocol/curve25519-voi", "go.opentelemetry.io/", "golang.org/x/net/", "golang.org/x/sys/",
		"github.com/zeebo/xxh3", "github.com/cespare/xxhash", "github.com/mr-tron/base58",
	}},
	// remote: sigverify's checks in other processes, over protoactor-go
	// remote (gRPC); stages knows it only as an interface, cmd wires it.
	{dir: "remote/wire", external: []string{"google.golang.org/protobuf/"}},
	{dir: "remote", internal: []string{"packet", "txview", "trace", "stages/sigverify"}, external: []string{
		"github.com/asynkron/protoactor-go", "google.golang.org/grpc", "go.opentelemetry.io/",
		"github.com/labstack/echo",    // the automanaged provider's HTTP server, bound where we say
		"google.golang.org/protobuf/", // the request encoded by hand (encode.go), the links' codec
	}},
	{dir: "rpc/jsonrpc"},
	{dir: "rpc/txjson", internal: []string{"txview"}, external: []string{"github.com/mr-tron/base58"}},
	{dir: "rpc/parsed", internal: []string{"txview", "=banking", "banking/bank"}, external: []string{"github.com/mr-tron/base58"}},
	{dir: "rpc/pubsub", internal: []string{"txview", "banking", "rpc/jsonrpc", "rpc/parsed", "httpguard"}, external: []string{"github.com/coder/websocket", "go.opentelemetry.io/", "github.com/mr-tron/base58"}},
	{dir: "rpc", internal: []string{"packet", "txview", "trace", "banking", "ed25519strict", "httpguard"}, external: []string{"github.com/mr-tron/base58"}},
	{dir: "cmd", internal: []string{"*"}, external: []string{"*"}},
}

func ruleFor(dir string) (rule, bool) {
	for _, r := range rules {
		if dir == r.dir || strings.HasPrefix(dir, r.dir+"/") {
			return r, true
		}
	}
	return rule{}, false
}

func allowed(r rule, path string) bool {
	if !strings.Contains(strings.Split(path, "/")[0], ".") {
		return true // standard library
	}
	if strings.HasPrefix(path, module+"/") {
		rel := strings.TrimPrefix(path, module+"/")
		for _, in := range r.internal {
			if exact, ok := strings.CutPrefix(in, "="); ok {
				if rel == exact {
					return true
				}
				continue
			}
			if in == "*" || rel == in || strings.HasPrefix(rel, in+"/") {
				return true
			}
		}
		// A package may import its own subpackages; the root "banking"
		// is held to its list above.
		if r.dir != "banking" && strings.HasPrefix(rel, r.dir+"/") {
			return true
		}
		return false
	}
	for _, ex := range r.external {
		if ex == "*" || strings.HasPrefix(path, ex) {
			return true
		}
	}
	return false
}

// TestImportDirection checks every non-test Go file of the module against
// the rules above.
func TestImportDirection(t *testing.T) {
	fset := token.NewFileSet()
	seen := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "docs") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		r, ok := ruleFor(dir)
		if !ok {
			t.Errorf("%s: package %s has no import rule; add one to imports_test.go and DESIGN.md", path, dir)
			return nil
		}
		seen[r.dir] = true
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !allowed(r, p) {
				t.Errorf("%s imports %s, which %s may not import", path, p, r.dir)
			}
			if p == "flag" && r.dir != "cmd" {
				t.Errorf("%s imports flag: only cmd reads flags", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		if !seen[r.dir] {
			t.Errorf("no Go files found for %s", r.dir)
		}
	}
}

// TestOnlyCmdReadsEnvironment looks for os.Getenv and friends outside cmd.
func TestOnlyCmdReadsEnvironment(t *testing.T) {
	forbidden := map[string]bool{"os.Getenv": true, "os.LookupEnv": true, "os.Environ": true, "os.Args": true, "syscall.Getenv": true}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		if strings.HasPrefix(filepath.ToSlash(path), "cmd/") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && forbidden[x.Name+"."+sel.Sel.Name] {
					t.Errorf("%s: %s.%s: only cmd reads flags and the environment", fset.Position(sel.Pos()), x.Name, sel.Sel.Name)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
