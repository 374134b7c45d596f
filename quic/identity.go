package quic

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// ALPN is the application protocol a TPU connection must negotiate
// (Agave's and Firedancer's "solana-tpu"): a client offering anything
// else is refused in the handshake.
const ALPN = "solana-tpu"

// Identity is an ed25519 public key: a validator's or a client's identity.
type Identity [ed25519.PublicKeySize]byte

// Certificate returns a self-signed X.509 certificate for key, the way
// Solana peers present their identity: its SubjectPublicKeyInfo is the
// ed25519 public key, which is all a peer reads from it (Agave does not
// check the certificate's own signature; TLS 1.3's CertificateVerify,
// which crypto/tls checks, proves the key is held). It is built with
// crypto/x509 and signed with key.
func Certificate(key ed25519.PrivateKey) (tls.Certificate, error) {
	if len(key) != ed25519.PrivateKeySize {
		return tls.Certificate{}, errors.New("quic: identity key: not an ed25519 private key")
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "Solana node"},
		NotBefore:    time.Unix(0, 0),
		NotAfter:     time.Date(4096, 1, 1, 0, 0, 0, 0, time.UTC),
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("quic: identity certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// PeerIdentity returns the identity a peer presented: the ed25519 key of
// its certificate, taken only when exactly one certificate was presented
// (Agave's rule). ok is false for none, two or more, or a key that is not
// ed25519: such a peer is unstaked.
func PeerIdentity(certs []*x509.Certificate) (id Identity, ok bool) {
	if len(certs) != 1 {
		return id, false
	}
	pub, isEd := certs[0].PublicKey.(ed25519.PublicKey)
	if !isEd || len(pub) != ed25519.PublicKeySize {
		return id, false
	}
	copy(id[:], pub)
	return id, true
}

// ClientTLS returns the TLS configuration of a TPU client presenting
// key's identity (nil key: no certificate, an unstaked client). The
// server's certificate is not verified: like Agave's clients, a sender
// reaches the leader by address, not by a name a CA vouches for.
func ClientTLS(key ed25519.PrivateKey) (*tls.Config, error) {
	c := &tls.Config{
		InsecureSkipVerify: true, // the leader's identity is not checked by TPU clients
		NextProtos:         []string{ALPN},
		MinVersion:         tls.VersionTLS13,
		CurvePreferences:   []tls.CurveID{tls.X25519},
	}
	if key != nil {
		cert, err := Certificate(key)
		if err != nil {
			return nil, err
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}
