package pocketd

import (
	"context"
	"math/rand/v2"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// RetryPolicy is how a call that is safe to repeat is retried: after UNAVAILABLE for the reads
// (Recall, Get, List, Stats, Explain), and also after an attempt's own deadline for the task
// calls, which carry an idempotency key (the same key on every attempt, so nothing is charged
// twice). Writes without a key (Remember, RememberBatch, Forget) are never retried.
type RetryPolicy struct {
	// MaxAttempts counts the first call; 1 turns retries off.
	MaxAttempts int
	// InitialBackoff is the wait before the second attempt; each later wait is Multiplier times
	// the one before, at most MaxBackoff, and jittered by up to ±20 %.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	Multiplier     float64
}

// DefaultRetry is the Python client's policy: four attempts, from 50 ms, doubling, at most 1 s.
var DefaultRetry = RetryPolicy{
	MaxAttempts: 4, InitialBackoff: 50 * time.Millisecond, MaxBackoff: time.Second, Multiplier: 2,
}

// backoff is the wait after the given failed attempt (from 1).
func (p RetryPolicy) backoff(attempt int) time.Duration {
	d := float64(p.InitialBackoff)
	for range attempt - 1 {
		d *= p.Multiplier
	}
	d = min(d, float64(p.MaxBackoff))
	return time.Duration(d * (0.8 + 0.4*rand.Float64()))
}

// retryOn is which failures of a call may be retried.
type retryOn uint8

const (
	// never: a write that could be applied twice.
	never retryOn = iota
	// unavailable: a read, retried when the server was not serving.
	unavailable
	// unavailableOrTimeout: a call with an idempotency key, also retried when the attempt's
	// own deadline passed (its caller's context still live).
	unavailableOrTimeout
)

func (r retryOn) allows(ctx context.Context, err error) bool {
	switch status.Code(err) {
	case codes.Unavailable:
		return r != never
	case codes.DeadlineExceeded:
		return r == unavailableOrTimeout && ctx.Err() == nil
	}
	return false
}

// rpc is a generated stub method.
type rpc[Req, Resp any] func(context.Context, Req, ...grpc.CallOption) (Resp, error)

// invoke runs one call of the client: each attempt under the client's deadline unless ctx has
// one, with the request id of ctx, retried as `on` allows; a failure is returned as an *Error.
func invoke[Req, Resp any](
	ctx context.Context, c *Client, on retryOn, timeout time.Duration, call rpc[Req, Resp], req Req,
) (Resp, error) {
	if id, ok := RequestID(ctx); ok {
		ctx = metadata.AppendToOutgoingContext(ctx, requestIDHeader, id)
	}
	for attempt := 1; ; attempt++ {
		resp, err := once(ctx, timeout, call, req)
		if err == nil {
			return resp, nil
		}
		if attempt >= c.retry.MaxAttempts || !on.allows(ctx, err) || !sleep(ctx, c.retry.backoff(attempt)) {
			return resp, asError(err)
		}
	}
}

// once is one attempt, under `timeout` unless ctx has a deadline.
func once[Req, Resp any](
	ctx context.Context, timeout time.Duration, call rpc[Req, Resp], req Req,
) (Resp, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return call(ctx, req)
}

// sleep waits d, or less when ctx ends first (then false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

const requestIDHeader = "x-request-id"

type requestIDKey struct{}

// WithRequestID returns a context whose calls carry id as their `x-request-id` metadata, which
// the server puts in the call's log line (1-64 of [A-Za-z0-9._:/-]; else it makes its own).
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID is the id WithRequestID put in ctx.
func RequestID(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(requestIDKey{}).(string)
	return id, ok
}
