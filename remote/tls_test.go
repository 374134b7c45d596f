package remote

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// tlsEnv, when set, makes the child serve mutual TLS with the files in
// this directory (cert.pem, key.pem, ca.pem).
const tlsEnv = "TPU_REMOTE_TEST_TLS"

// writeTLS writes a CA and a certificate it signs for 127.0.0.1 into
// dir, as LoadTLS reads them.
func writeTLS(t testing.TB, dir string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tpu test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "tpu"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for name, block := range map[string]*pem.Block{
		"ca.pem": {Type: "CERTIFICATE", Bytes: caDER}, "cert.pem": {Type: "CERTIFICATE", Bytes: der},
		"key.pem": {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func loadTLS(t testing.TB, dir string) *TLS {
	t.Helper()
	c, err := LoadTLS(filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), filepath.Join(dir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestMutualTLS: a verifier serving mutual TLS works for a leader with a
// certificate of its CA, and refuses a connection that presents no
// certificate or one of another CA.
func TestMutualTLS(t *testing.T) {
	if isolate(t) {
		return
	}
	good, other := t.TempDir(), t.TempDir()
	writeTLS(t, good)
	writeTLS(t, other)
	s := startChild(t, "honest", tlsEnv+"="+good)
	x := startLeader(t, LeaderConfig{Verifiers: []string{s.addr}, TLS: loadTLS(t, good)})
	waitFor(t, "the verifier in service", func() bool { return x.Stats().Verifiers == 1 })
	p := newPass(t, newPool(t), 1, 30, 0, 0)
	defer p.release()
	p.start(t, x)
	x.Wait()
	p.check(t)
	if st := x.Stats(); st.Remote != 1 {
		t.Errorf("stats %+v: want the pass checked over TLS", st)
	}
	// Another leader's side, by hand (one protoactor remote a process):
	// the verifier must refuse it without a certificate of its CA.
	goodTLS, otherTLS := loadTLS(t, good), loadTLS(t, other)
	for _, tc := range []struct {
		name  string
		certs []tls.Certificate
	}{{"no certificate", nil}, {"another CA's", []tls.Certificate{otherTLS.Certificate}}} {
		c, err := tls.Dial("tcp", s.addr, &tls.Config{RootCAs: goodTLS.CAs, Certificates: tc.certs, NextProtos: []string{"h2"}})
		if err == nil {
			c.SetDeadline(time.Now().Add(10 * time.Second))
			// TLS 1.3: the server checks the client's certificate after
			// the client's handshake is done; its refusal comes as an
			// alert on the first read.
			_, err = c.Read(make([]byte, 1))
			c.Close()
		}
		if err == nil {
			t.Errorf("%s: the verifier accepted the connection", tc.name)
		}
	}
	if st := s.stop(t); st.Requests != 1 {
		t.Errorf("the verifier answered %d requests, want 1", st.Requests)
	}
}
