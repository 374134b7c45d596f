package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/tpugo/tpu/httpguard"
	"github.com/tpugo/tpu/remote"
	"github.com/tpugo/tpu/stages/sigverify"
	"github.com/tpugo/tpu/trace"
)

func init() {
	register(command{
		name:    "verifier",
		summary: "check signatures for a leader's sigverify (tpu run --verifiers) in this process",
		run:     runVerifier,
	})
}

const verifierHelp = `Usage: tpu verifier --listen HOST:PORT [flags]

Serves sigverify's signature checks to a leader (tpu run --verifiers
HOST:PORT, or through cluster membership, --cluster-seeds) as a protoactor-go remote actor over
gRPC: each request is one sigverify pass, checked on every core, answered
with a verdict per packet. It keeps nothing between requests. A line on
standard output gives the address served; on SIGINT or SIGTERM it stops
and prints its counts. Off loopback, give both sides --remote-cert,
--remote-key and --remote-ca (mutual TLS): a verdict decides what
executes.

Flags:`

type verifierFlags struct {
	listen, backend, traceOut, otlp, logLevel string
	clusterSeeds, clusterName                 string
	clusterPort                               int
	workers, keyCache                         int
	tls                                       tlsFlags
}

// tlsFlags are the mutual TLS files of tpu run and tpu verifier.
type tlsFlags struct{ cert, key, ca string }

func (t *tlsFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&t.cert, "remote-cert", "", "PEM certificate this process presents on the verifier links (mutual TLS; with --remote-key and --remote-ca)")
	fs.StringVar(&t.key, "remote-key", "", "PEM key of --remote-cert")
	fs.StringVar(&t.ca, "remote-ca", "", "PEM CA bundle the peer's certificate must chain to")
}

// load returns the TLS of the flags: nil when none is given.
func (t tlsFlags) load() (*remote.TLS, error) {
	if t.cert == "" && t.key == "" && t.ca == "" {
		return nil, nil
	}
	if t.cert == "" || t.key == "" || t.ca == "" {
		return nil, fmt.Errorf("--remote-cert, --remote-key and --remote-ca go together")
	}
	return remote.LoadTLS(t.cert, t.key, t.ca)
}

// tamperVerdicts is remote.ServerConfig.Tamper for tpu verifier: nil,
// but in tpu's test binary when its test asks for a lying verifier
// (verifier_test.go). No flag sets it.
var tamperVerdicts func(verdicts []byte)

func runVerifier(env *cliEnv, args []string) int {
	fs := env.flagSet("tpu verifier", verifierHelp)
	var f verifierFlags
	fs.StringVar(&f.listen, "listen", "127.0.0.1:8010", "host:port this verifier serves (port 0: a free one); a public address needs --remote-cert")
	fs.StringVar(&f.backend, "sigverify-backend", sigverify.DefaultBackend, sigverify.BackendUsage())
	fs.IntVar(&f.keyCache, "sigverify-key-cache", sigverify.DefaultKeyCache, keyCacheUsage)
	fs.IntVar(&f.workers, "workers", 0, "goroutines checking signatures (0: one per core)")
	fs.StringVar(&f.traceOut, "trace-out", "", "write this verifier's spans (children of the leader's sigverify spans) to this file, JSON lines")
	fs.StringVar(&f.otlp, "otlp-endpoint", "", "send this verifier's spans over OTLP gRPC to host:port (service name tpu-verifier)")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.clusterSeeds, "cluster-seeds", "", "join a verifier cluster (protoactor's automanaged provider): the members' membership endpoints, host:port comma-separated, this one's among them; leaders find it there (tpu run --cluster-seeds)")
	fs.IntVar(&f.clusterPort, "cluster-port", 0, "the port of this member's membership endpoint (HTTP /_health, on --listen's host); needed with --cluster-seeds")
	fs.StringVar(&f.clusterName, "cluster-name", remote.DefaultClusterName, "the cluster's name: leaders and verifiers must agree")
	f.tls.define(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(env.stderr, "tpu verifier: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		fmt.Fprintf(env.stderr, "tpu verifier: --log-level: %v\n", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: level}))
	backend, err := newBackend(f.backend, f.keyCache)
	if err != nil {
		fmt.Fprintf(env.stderr, "tpu verifier: %v\n", err)
		return 2
	}
	tlsCfg, err := f.tls.load()
	if err != nil {
		fmt.Fprintf(env.stderr, "tpu verifier: %v\n", err)
		return 2
	}
	if tlsCfg == nil && httpguard.Public(f.listen) {
		log.Warn("verifier: serving plaintext on a public address: anyone who reaches it can feed a leader verdicts; give --remote-cert, --remote-key and --remote-ca", "listen", f.listen)
	}
	stop, unnotify := stopOnSignal(log)
	defer unnotify()
	prov, closeTrace, err := verifierTrace(f)
	if err != nil {
		fmt.Fprintf(env.stderr, "tpu verifier: %v\n", err)
		return 1
	}
	defer closeTrace()
	cfg := remote.ServerConfig{Listen: f.listen, Verify: sigverify.VerifyConfig{Backend: backend, Workers: f.workers}, TLS: tlsCfg, Trace: prov, Logger: log,
		Tamper: tamperVerdicts}
	if tamperVerdicts != nil {
		log.Warn("verifier: a test build that tampers with its verdicts")
	}
	if f.clusterSeeds != "" {
		if f.clusterPort <= 0 {
			fmt.Fprintln(env.stderr, "tpu verifier: --cluster-seeds needs --cluster-port")
			return 2
		}
		cfg.Cluster = &remote.ClusterConfig{Name: f.clusterName, Port: f.clusterPort, Seeds: splitList(f.clusterSeeds)}
	}
	s, err := remote.Serve(cfg)
	if err != nil {
		fmt.Fprintf(env.stderr, "tpu verifier: %v\n", err)
		return 1
	}
	fmt.Fprintf(env.stdout, "tpu verifier: serving %s (backend %s)\n", s.Addr(), f.backend)
	log.Info("verifier serving", "addr", s.Addr(), "backend", f.backend)
	<-stop
	s.Stop()
	st, _ := json.Marshal(s.Stats())
	fmt.Fprintf(env.stdout, "tpu verifier: stopped; %s\n", st)
	if ks, ok := sigverify.KeyCacheOf(backend); ok {
		fmt.Fprintf(env.stdout, "tpu verifier: key cache of %d keys: %s\n", ks.Size, keyCacheLine(ks.Hits, ks.Misses, ks.Combs, ks.Tables))
	}
	return 0
}

// verifierTrace sets up the verifier's tracing: spans only, under the
// service name tpu-verifier, recorded when the leader's are.
func verifierTrace(f verifierFlags) (*trace.Provider, func(), error) {
	if f.traceOut == "" && f.otlp == "" {
		return nil, func() {}, nil
	}
	cfg := trace.Config{ServiceName: "tpu-verifier", OTLPEndpoint: f.otlp}
	var file *os.File
	if f.traceOut != "" {
		var err error
		if file, err = os.Create(f.traceOut); err != nil {
			return nil, nil, fmt.Errorf("--trace-out: %w", err)
		}
		cfg.TraceWriter = file
	}
	prov, err := trace.Setup(context.Background(), cfg)
	if err != nil {
		if file != nil {
			file.Close()
		}
		return nil, nil, err
	}
	return prov, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		prov.Shutdown(ctx)
		if file != nil {
			file.Close()
		}
	}, nil
}

// splitList splits a comma-separated flag, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
