package jsonrpc

import (
	"errors"
	"log/slog"
	"testing"
	"time"
)

func TestNonNegative(t *testing.T) {
	errConfig := errors.New("x: invalid config")
	if err := NonNegative(errConfig, "MaxConns", 0); err != nil {
		t.Errorf("zero: %v", err)
	}
	if err := NonNegative(errConfig, "MaxBodyBytes", int64(1)); err != nil {
		t.Errorf("positive: %v", err)
	}
	err := NonNegative(errConfig, "ReadTimeout", -time.Second)
	if !errors.Is(err, errConfig) || err.Error() != "x: invalid config: ReadTimeout -1000000000 is negative" {
		t.Errorf("negative: %v", err)
	}
	if err := errors.Join(NonNegative(errConfig, "A", 1), NonNegative(errConfig, "B", 2)); err != nil {
		t.Errorf("joined nils: %v", err)
	}
}

func TestDefault(t *testing.T) {
	n, set := 0, 7
	Default(&n, 5)
	Default(&set, 5)
	d := time.Duration(0)
	Default(&d, time.Second)
	s := ""
	Default(&s, "127.0.0.1:8899")
	var l *slog.Logger
	Default(&l, slog.Default())
	if n != 5 || set != 7 || d != time.Second || s != "127.0.0.1:8899" || l != slog.Default() {
		t.Errorf("%d %d %v %q %v", n, set, d, s, l)
	}
}
