package trace

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

// TestQuietInfo: Info records pass at Debug (so an Info handler drops
// them), every other level passes as it is, and attributes and groups
// keep the lowering.
func TestQuietInfo(t *testing.T) {
	var buf bytes.Buffer
	base := slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})
	log := slog.New(QuietInfo(base)).With("lib", "protoactor").WithGroup("g")
	log.Info("actor started")
	log.Warn("dead letter")
	out := buf.String()
	if !strings.Contains(out, "level=DEBUG msg=\"actor started\" lib=protoactor") || !strings.Contains(out, "level=WARN msg=\"dead letter\"") {
		t.Fatalf("got:\n%s", out)
	}
	info := QuietInfo(slog.NewTextHandler(&buf, nil)) // Info and above
	if info.Enabled(context.Background(), slog.LevelInfo) || !info.Enabled(context.Background(), slog.LevelWarn) {
		t.Fatal("an Info handler behind QuietInfo must drop Info and keep Warn")
	}
}
