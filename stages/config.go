package stages

import (
	"errors"
	"fmt"
)

// Every stage's config (Config, FetchConfig, SigverifyConfig,
// BankingConfig, ForwardConfig) has one shape: a field left zero means
// its documented default, which withDefaults fills in where the graph
// starts, and Validate reports, wrapping ErrConfig, what the graph would
// reject. ErrConfig and the helpers of that shape live here, beside each
// other, rather than in graph.go, which the stage files would otherwise
// reach into for the sentinel alone.

// ErrConfig reports an invalid configuration. Every stage config's
// Validate wraps it.
var ErrConfig = errors.New("stages: invalid config")

// configErr returns an error wrapping ErrConfig, followed by format's
// text (which may wrap errors of its own with %w).
func configErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
}

// orDefault sets *v to def when it is zero: a config's "zero means the
// default".
func orDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// negative reports whether any of vs is below zero: no count, size or
// duration of a stage config may be.
func negative[T ~int | ~int64](vs ...T) bool {
	for _, v := range vs {
		if v < 0 {
			return true
		}
	}
	return false
}
