package pocketd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// DefaultTimeout is a call's deadline when its context has none (the Python client's too).
const DefaultTimeout = 5 * time.Second

// MaxMessageBytes is the largest message sent or received unless Options say otherwise.
const MaxMessageBytes = 16 * 1024 * 1024

// Options configure a Client. The zero value is a plaintext connection without a token.
type Options struct {
	// Token is the bearer token (`auth.tokens` on the server), sent on every call as
	// `authorization: Bearer <token>`.
	Token string
	// TLS connects over TLS; nil: plaintext, over which a Token is sent only to a loopback
	// address unless AllowInsecureToken is set.
	TLS *TLS
	// AllowInsecureToken sends the Token over plaintext to a non-loopback address (a trusted
	// network, or TLS terminated by a local proxy).
	AllowInsecureToken bool
	// Timeout is each call's deadline when its context has none (0: DefaultTimeout); a
	// RememberBatch's grows with its size. A context that has a deadline keeps it.
	Timeout time.Duration
	// Retry says how calls that are safe to repeat are retried (zero: DefaultRetry).
	Retry RetryPolicy
	// MaxMessageBytes caps the messages sent and received (0: MaxMessageBytes).
	MaxMessageBytes int
	// DialOptions are added to the client's own (a custom dialer, interceptors).
	DialOptions []grpc.DialOption
}

// TLS configures a TLS connection, from PEM files.
type TLS struct {
	// CAFile is the CA that signed the server's certificate; "": the system's roots.
	CAFile string
	// CertFile and KeyFile are the client's own certificate and key, for mTLS.
	CertFile, KeyFile string
	// ServerName overrides the name checked against the server's certificate.
	ServerName string
}

// ErrInsecureToken is returned by Dial for a token over plaintext to a non-loopback address.
var ErrInsecureToken = errors.New(
	"pocketd: refusing to send a token over plaintext to a non-loopback address " +
		"(use TLS, or set AllowInsecureToken)")

// dialOptions are the grpc options for o, or why o cannot be used for target.
func (o *Options) dialOptions(target string) ([]grpc.DialOption, error) {
	maxBytes := o.MaxMessageBytes
	if maxBytes == 0 {
		maxBytes = MaxMessageBytes
	}
	opts := []grpc.DialOption{grpc.WithDefaultCallOptions(
		grpc.MaxCallRecvMsgSize(maxBytes), grpc.MaxCallSendMsgSize(maxBytes),
	)}
	if o.TLS != nil {
		cfg, err := o.TLS.config()
		if err != nil {
			return nil, err
		}
		opts = append(opts, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	} else {
		opts = append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	if o.Token != "" {
		plaintext := o.TLS == nil
		if plaintext && !o.AllowInsecureToken && !isLoopback(target) {
			return nil, fmt.Errorf("%w: %s", ErrInsecureToken, target)
		}
		opts = append(opts, grpc.WithPerRPCCredentials(bearer{o.Token, !plaintext}))
	}
	return append(opts, o.DialOptions...), nil
}

func (t *TLS) config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("pocketd: CA file: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("pocketd: no PEM certificate in %s", t.CAFile)
		}
	}
	if t.CertFile != "" || t.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("pocketd: client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// bearer is the per-call credential carrying the token.
type bearer struct {
	token  string
	secure bool
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

func (b bearer) RequireTransportSecurity() bool { return b.secure }

// isLoopback reports whether a gRPC target names only this machine: a Unix socket, localhost,
// or loopback addresses ("127.0.0.1:50051", "dns:///localhost:50051", "ipv6:[::1]:50051").
func isLoopback(target string) bool {
	if strings.HasPrefix(target, "unix:") || strings.HasPrefix(target, "unix-abstract:") {
		return true
	}
	addrs := target
	if scheme, rest, ok := strings.Cut(target, "://"); ok {
		// scheme://authority/endpoint: the endpoint is the address.
		if scheme != "dns" && scheme != "passthrough" {
			return false
		}
		_, addrs, _ = strings.Cut(rest, "/")
	} else if scheme, rest, ok := strings.Cut(target, ":"); ok && (scheme == "ipv4" || scheme == "ipv6") {
		addrs = rest
	}
	for _, addr := range strings.Split(addrs, ",") {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = strings.Trim(addr, "[]")
		}
		ip := net.ParseIP(host)
		if !strings.EqualFold(host, "localhost") && (ip == nil || !ip.IsLoopback()) {
			return false
		}
	}
	return true
}
