package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/tpugo/tpu/trace"
)

// tpu run's tracing, metrics and profiles, from the flags.

// startTrace sets up tracing and metrics from the flags: spans to
// --trace-out and --otlp-endpoint (probed, with a warning when it is
// unreachable), /metrics at --metrics-addr. shutdown flushes the
// exporters (the OTLP one for trace.DefaultOTLPTimeout at most), warns of
// the spans the file or the endpoint lacks, and closes the trace file. An error wrapping
// trace.ErrConfig is a usage error.
func startTrace(f runFlags, log *slog.Logger) (prov *trace.Provider, shutdown func(), err error) {
	tcfg := trace.Config{SampleRatio: f.traceSample, OTLPEndpoint: f.otlp, MetricsAddr: f.metricsAddr, Pprof: f.pprof,
		KeepTracers: f.tracerEvery > 0}
	if err := tcfg.Validate(); err != nil {
		return nil, nil, err
	}
	var file *os.File
	if f.traceOut != "" {
		if file, err = os.Create(f.traceOut); err != nil {
			return nil, nil, fmt.Errorf("--trace-out: %w", err)
		}
		tcfg.TraceWriter = file
	}
	prov, err = trace.Setup(context.Background(), tcfg)
	if err != nil {
		if file != nil {
			file.Close()
		}
		return nil, nil, err
	}
	if f.otlp != "" {
		warnOTLPProbe(log, f.otlp)
	}
	if u := prov.MetricsURL(); u != "" {
		log.Info("metrics", "url", u)
	}
	return prov, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := prov.Shutdown(ctx); err != nil {
			log.Warn("trace exporter shutdown", "err", err)
		}
		if f.otlp != "" {
			warnOTLPDropped(log, prov, f.otlp)
		}
		if file != nil {
			warnFileDropped(log, prov, f.traceOut)
			file.Close()
		}
	}, nil
}

// startProfiles starts a CPU profile to cpuPath and, for memPath, an
// allocation profile of what follows: a base profile to memPath.base now
// (pprof -base subtracts it), the profile itself at end. Empty paths:
// none. end may be called more than once; only the first call acts.
func startProfiles(cpuPath, memPath string) (end func(), err error) {
	if memPath != "" {
		runtime.MemProfileRate = 4096
		if err := writeAllocs(memPath + ".base"); err != nil {
			return nil, fmt.Errorf("--memprofile: %w", err)
		}
	}
	var cpu *os.File
	if cpuPath != "" {
		if cpu, err = os.Create(cpuPath); err != nil {
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			cpu.Close()
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			if cpu != nil {
				pprof.StopCPUProfile()
				cpu.Close()
			}
			if memPath != "" {
				writeAllocs(memPath)
			}
		})
	}, nil
}

// writeAllocs writes the allocation profile as of a fresh collection.
func writeAllocs(path string) error {
	pf, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC() // the profile is as of the last collection
	err = pprof.Lookup("allocs").WriteTo(pf, 0)
	return errors.Join(err, pf.Close())
}
