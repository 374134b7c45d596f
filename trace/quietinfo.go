package trace

import (
	"context"
	"log/slog"
)

// QuietInfo returns a slog.Handler that passes h's Info records at
// Debug: protoactor-go logs a line at Info for each actor started or
// stopped and for dead letters at shutdown, which a run's log should
// not show by default. The graph and the remote verifier give it to
// their actor systems.
func QuietInfo(h slog.Handler) slog.Handler { return quieter{h} }

type quieter struct{ h slog.Handler }

func (q quieter) Enabled(ctx context.Context, l slog.Level) bool {
	return q.h.Enabled(ctx, q.level(l))
}

func (q quieter) Handle(ctx context.Context, r slog.Record) error {
	r.Level = q.level(r.Level)
	return q.h.Handle(ctx, r)
}

func (q quieter) level(l slog.Level) slog.Level {
	if l == slog.LevelInfo {
		return slog.LevelDebug
	}
	return l
}

func (q quieter) WithAttrs(as []slog.Attr) slog.Handler { return quieter{q.h.WithAttrs(as)} }
func (q quieter) WithGroup(name string) slog.Handler    { return quieter{q.h.WithGroup(name)} }
