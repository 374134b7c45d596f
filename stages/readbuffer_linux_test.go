package stages

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// Each fetch socket reports the receive buffer Linux gave it: what it
// asked for, or net.core.rmem_max where that is lower.
func TestReadBuffer(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/core/rmem_max")
	if err != nil {
		t.Fatal(err)
	}
	max, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	conns, err := listen(FetchConfig{Addr: "127.0.0.1:0", Sockets: 2}.withDefaults())
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range conns {
		defer c.Close()
		if got, want := readBuffer(c), min(FetchReadBuffer, max); got != want {
			t.Errorf("socket %d: read buffer %d, want %d (asked %d, rmem_max %d)", i, got, want, FetchReadBuffer, max)
		}
	}
}
