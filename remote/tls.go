package remote

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/experimental"
)

// TLS authenticates the link between a leader and its verifiers both
// ways (mutual TLS on protoactor's gRPC): each side presents Certificate,
// and accepts only a peer whose certificate CAs signed. A verdict decides
// whether a transaction executes, so a link off loopback must have it.
// Both sides dial each other (a reply travels on the verifier's own
// connection to the leader), so each is server and client, with the same
// certificate.
type TLS struct {
	Certificate tls.Certificate
	CAs         *x509.CertPool
}

// LoadTLS reads a PEM certificate and key, and the PEM CA bundle that
// signs the peers' certificates.
func LoadTLS(certFile, keyFile, caFile string) (*TLS, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("remote: tls: %w", err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("remote: tls: %w", err)
	}
	cas := x509.NewCertPool()
	if !cas.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("remote: tls: no certificate in %s", caFile)
	}
	return &TLS{Certificate: cert, CAs: cas}, nil
}

// options returns protoactor's server and dial options for t: mutual TLS,
// or plaintext when t is nil.
func (t *TLS) options() ([]remote.ConfigOption, error) {
	serverOpts := []grpc.ServerOption{grpc.MaxRecvMsgSize(maxMessageBytes),
		grpc.WriteBufferSize(ioBufferBytes), grpc.ReadBufferSize(ioBufferBytes),
		grpc.InitialWindowSize(windowBytes), grpc.InitialConnWindowSize(windowBytes),
		grpc.ForceServerCodecV2(linkCodec{}), experimental.BufferPool(linkPool)}
	dial := []grpc.DialOption{grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageBytes), grpc.ForceCodecV2(linkCodec{})),
		grpc.WithWriteBufferSize(ioBufferBytes), grpc.WithReadBufferSize(ioBufferBytes),
		grpc.WithInitialWindowSize(windowBytes), grpc.WithInitialConnWindowSize(windowBytes),
		experimental.WithBufferPool(linkPool)}
	if t == nil {
		dial = append(dial, grpc.WithTransportCredentials(insecure.NewCredentials()))
	} else {
		if t.CAs == nil || len(t.Certificate.Certificate) == 0 {
			return nil, errors.New("remote: tls: a certificate and its CAs are both needed")
		}
		serverOpts = append(serverOpts, grpc.Creds(credentials.NewTLS(&tls.Config{
			Certificates: []tls.Certificate{t.Certificate},
			ClientCAs:    t.CAs,
			ClientAuth:   tls.RequireAndVerifyClientCert,
			MinVersion:   tls.VersionTLS13,
		})))
		dial = append(dial, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
			Certificates: []tls.Certificate{t.Certificate},
			RootCAs:      t.CAs,
			MinVersion:   tls.VersionTLS13,
		})))
	}
	return []remote.ConfigOption{remote.WithServerOptions(serverOpts...), remote.WithDialOptions(dial...)}, nil
}

// The links' gRPC buffers and flow-control windows. gRPC's defaults
// (32 KiB buffers, a 64 KiB window grown by its estimate of the link)
// cut a pass of a few hundred kilobytes into a write and a read
// syscall every 32 KiB, and make the receiver send window updates
// while one arrives: each more wake-ups on both sides. A pass fits
// whole in the buffers, and a window of maxMessageBytes lets any
// message go without waiting for one. Per connection (one each way
// between a leader and a verifier): two buffers and, at most, a
// window's worth of messages received and not yet read.
const (
	ioBufferBytes = 1 << 20
	windowBytes   = maxMessageBytes
)

// writerQueueSize is the initial room of an endpoint writer's mailbox,
// messages waiting to be sent to one peer (it doubles when full). The
// credits keep a leader's requests to a verifier, and so the verifier's
// replies, to a few at once; protoactor's default, a million, is a 16
// MB array of interfaces for each peer, which the garbage collector
// scanned whole on every cycle (most of a verifier's live heap) and
// first faulted in page by page.
const writerQueueSize = 64

// baseOptions are the remote settings both sides use. protoactor's
// endpoint writer packs up to 1,000 messages into one gRPC message, and
// gRPC refuses one over its receive limit without a word to the sender:
// with passes of up to MaxRequestBytes, one message a gRPC message keeps
// each under maxMessageBytes.
func baseOptions() []remote.ConfigOption {
	return []remote.ConfigOption{remote.WithEndpointWriterBatchSize(1), remote.WithEndpointWriterQueueSize(writerQueueSize)}
}
