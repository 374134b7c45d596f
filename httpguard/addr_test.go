package httpguard

import "testing"

func TestPublic(t *testing.T) {
	for _, c := range []struct {
		addr   string
		public bool
	}{
		{"127.0.0.1:8899", false},
		{"127.0.0.5:0", false},
		{"[::1]:8899", false},
		{"localhost:8899", false},
		{"[::ffff:127.0.0.1]:1", false},
		{":8899", true},
		{"0.0.0.0:8899", true},
		{"[::]:8899", true},
		{"10.0.0.1:8899", true},
		{"example.com:8899", true},
		{"nonsense", true},
	} {
		if got := Public(c.addr); got != c.public {
			t.Errorf("Public(%q) = %v, want %v", c.addr, got, c.public)
		}
	}
}

func TestDefaultLoopback(t *testing.T) {
	for in, want := range map[string]string{
		":9100":         "127.0.0.1:9100",
		":0":            "127.0.0.1:0",
		"0.0.0.0:9100":  "0.0.0.0:9100",
		"[::]:9100":     "[::]:9100",
		"10.1.2.3:9100": "10.1.2.3:9100",
		"bad":           "bad",
	} {
		if got := DefaultLoopback(in); got != want {
			t.Errorf("DefaultLoopback(%q) = %q, want %q", in, got, want)
		}
	}
}
