package main

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"

	"github.com/tpugo/tpu/banking/bank"
	"github.com/tpugo/tpu/quic"
	"github.com/tpugo/tpu/stages"
)

// The QUIC TPU in tpu run: its flags' meaning, its part of the live line
// and of the summary.

// quicOffset is the QUIC TPU's port past the UDP TPU's when
// --tpu-quic-addr is left auto: Agave's legacy QUIC_PORT_OFFSET, which
// Firedancer still requires.
const quicOffset = 6

const quicAuto = "auto"

// quicAddr resolves --tpu-quic-addr: "" when off; auto is the UDP
// address's host with its port + 6 (0 stays 0: a free port).
func quicAddr(f runFlags) (string, error) {
	switch f.quicAddr {
	case "off", "":
		return "", nil
	case quicAuto:
		ap, err := netip.ParseAddrPort(f.addr)
		if err != nil {
			return "", fmt.Errorf("--tpu-quic-addr auto: --tpu-addr %q: %w", f.addr, err)
		}
		p := ap.Port()
		if p != 0 {
			if p > 65535-quicOffset {
				return "", fmt.Errorf("--tpu-quic-addr auto: --tpu-addr port %d + %d is no port; name one", p, quicOffset)
			}
			p += quicOffset
		}
		return netip.AddrPortFrom(ap.Addr(), p).String(), nil
	}
	if _, err := netip.ParseAddrPort(f.quicAddr); err != nil {
		return "", fmt.Errorf("--tpu-quic-addr %q: want ip:port, auto or off: %w", f.quicAddr, err)
	}
	return f.quicAddr, nil
}

// quicConfig is the QUIC TPU's part of the graph's config: the node's
// identity (the genesis collector's key, which getIdentity names) and the
// stakes of --stakes; without it (nil Stakes) the graph weighs peers by
// the ledger's stake accounts: its genesis validators'
// (--genesis-validators).
func quicConfig(f runFlags) (quic.Config, error) {
	addr, err := quicAddr(f)
	if err != nil || addr == "" {
		return quic.Config{}, err
	}
	c := quic.Config{Addr: addr, Identity: bank.CollectorKey(f.seed)}
	if f.stakes != "" {
		if c.Stakes, err = quic.LoadStakes(f.stakes); err != nil {
			return c, fmt.Errorf("--stakes: %w", err)
		}
	}
	return c, nil
}

// checkSend checks --send and its QUIC flags against the QUIC TPU's
// config q.
func checkSend(f runFlags, q quic.Config) error {
	switch f.send {
	case sendUDP:
		return nil
	case sendQUIC:
		if q.Addr == "" {
			return errors.New("--send quic: the QUIC TPU is off (--tpu-quic-addr off)")
		}
		if f.quicConns < 1 || f.quicIdentities < 1 {
			return fmt.Errorf("--quic-conns %d, --quic-identities %d: each at least 1", f.quicConns, f.quicIdentities)
		}
		return nil
	}
	return fmt.Errorf("--send %q: want udp or quic", f.send)
}

// quicLive is the live line's QUIC part: the events so far that are not
// zero, or "" when there are none.
func quicLive(c quic.Counts) string {
	var parts []string
	for e, n := range c {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", quic.Event(e), n))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " | quic: " + strings.Join(parts, ", ")
}

// quicSummary is the QUIC TPU in the summary: where it listened, every
// event (zeros included), and the identified peers it served.
type quicSummary struct {
	Addr   string            `json:"addr"`
	Events map[string]uint64 `json:"events"`
	// StreamsAccepted is every stream accepted: stream_received (in
	// received) + the dropped ones.
	StreamsAccepted uint64           `json:"streams_accepted"`
	Peers           []quic.PeerStats `json:"peers,omitempty"`
}

// addQUIC records the QUIC TPU's counts, if it is on.
func (s *summary) addQUIC(g *stages.Graph, snap stages.Snapshot) {
	a, ok := g.QUICAddr()
	if !ok {
		return
	}
	q := &quicSummary{Addr: a.String(), Events: map[string]uint64{}, StreamsAccepted: snap.QUIC.StreamsAccepted(), Peers: g.QUICPeers()}
	for e, n := range snap.QUIC {
		q.Events[quic.Event(e).String()] = n
	}
	s.QUIC = q
}

// printQUIC writes the QUIC part of the summary.
func (s summary) printQUIC(w io.Writer) {
	q := s.QUIC
	if q == nil {
		return
	}
	ev := func(e quic.Event) uint64 { return q.Events[e.String()] }
	fmt.Fprintf(w, "quic tpu %s: %d connections admitted; refused %d (rate), %d (alpn); closed too_many %d, dropped %d, disallowed %d\n",
		q.Addr, ev(quic.EventConnAccepted), ev(quic.EventConnRefused), ev(quic.EventALPNRefused),
		ev(quic.EventConnTooMany), ev(quic.EventConnDropped), ev(quic.EventConnDisallowed))
	fmt.Fprintf(w, "  streams %d: received %d, too_large %d, empty %d, timeout %d, reset %d, lost %d; rate_limited %d accepts; path_refused %d packets (from a new address: no migration)\n",
		q.StreamsAccepted, ev(quic.EventStreamReceived), ev(quic.EventStreamTooLarge), ev(quic.EventStreamEmpty),
		ev(quic.EventStreamTimeout), ev(quic.EventStreamReset), ev(quic.EventStreamLost), ev(quic.EventRateLimited), ev(quic.EventPathRefused))
	for i, p := range q.Peers {
		if i == 8 {
			fmt.Fprintf(w, "  ... %d more peers (all in --summary-json)\n", len(q.Peers)-i)
			break
		}
		class := "unstaked"
		if p.Staked {
			class = fmt.Sprintf("staked %d lamports", p.Stake)
		}
		fmt.Fprintf(w, "  peer %s (%s): %d connections, %d transactions\n", p.Identity, class, p.Conns, p.Streams)
	}
}

// sendLine says how the load generator sends.
func sendLine(f runFlags) string {
	if f.send == sendQUIC {
		return fmt.Sprintf("send: quic, %d connections presenting %d identities, one stream per transaction (the sender's QUIC runs on this machine's cores too)", f.quicConns, f.quicIdentities)
	}
	return "send: udp datagrams (--send quic for QUIC streams, as real senders send)"
}

// quicAddrText is the QUIC TPU's address for the logs, "off" when off.
func quicAddrText(g *stages.Graph) string {
	if a, ok := g.QUICAddr(); ok {
		return a.String()
	}
	return "off"
}
