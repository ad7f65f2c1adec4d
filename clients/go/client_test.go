package pocketd

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	pb "github.com/pocketd/pocketd/clients/go/pocketd/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// richStatus is an error with every kind of detail the client decodes.
func richStatus(t *testing.T) error {
	t.Helper()
	st, err := status.New(codes.InvalidArgument, "top_k: 0 is outside 1-100").WithDetails(
		&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
			{Field: "top_k", Description: "0 is outside 1-100"},
		}},
		&errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{
			{Subject: "total", Description: "would exceed the total budget"},
		}},
		&errdetails.PreconditionFailure{Violations: []*errdetails.PreconditionFailure_Violation{
			{Type: "TASK_CLOSED", Subject: "task_id", Description: "the task is closed"},
		}},
		&errdetails.ErrorInfo{Reason: "IGNORED", Domain: "pocketd"},
	)
	if err != nil {
		t.Fatal(err)
	}
	return st.Err()
}

func checkRich(t *testing.T, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got %T %v, want *Error", err, err)
	}
	if e.Code != codes.InvalidArgument || e.Message != "top_k: 0 is outside 1-100" {
		t.Errorf("code, message = %v, %q", e.Code, e.Message)
	}
	if why, ok := e.Field("top_k"); !ok || why != "0 is outside 1-100" {
		t.Errorf("Field(top_k) = %q, %v", why, ok)
	}
	if _, ok := e.Field("namespace"); ok {
		t.Error("Field(namespace) found a violation that is not there")
	}
	if len(e.QuotaViolations) != 1 || e.QuotaViolations[0].GetSubject() != "total" {
		t.Errorf("QuotaViolations = %v", e.QuotaViolations)
	}
	if len(e.PreconditionViolations) != 1 || e.PreconditionViolations[0].GetType() != "TASK_CLOSED" {
		t.Errorf("PreconditionViolations = %v", e.PreconditionViolations)
	}
	if status.Code(err) != codes.InvalidArgument || len(status.Convert(err).Details()) != 4 {
		t.Errorf("the status is not kept: %v", status.Convert(err))
	}
	if want := "pocketd: InvalidArgument: top_k: 0 is outside 1-100"; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
}

func TestErrorDetailsDecoded(t *testing.T) {
	checkRich(t, asError(richStatus(t)))
}

func TestErrorDetailsOverTheWire(t *testing.T) {
	f, c := startFake(t, 0, Options{})
	f.memory.getErr = richStatus(t)
	_, err := c.Get(context.Background(), &pb.GetRequest{Namespace: "alice", MemoryId: "m1"})
	checkRich(t, err)
}

func TestNonStatusErrorsKept(t *testing.T) {
	plain := errors.New("plain")
	if asError(plain) != plain {
		t.Error("an error without a status was rewrapped")
	}
}

func TestIsLoopback(t *testing.T) {
	for target, want := range map[string]bool{
		"127.0.0.1:50051":              true,
		"127.8.9.10:50051":             true,
		"localhost:50051":              true,
		"LOCALHOST":                    true,
		"[::1]:50051":                  true,
		"dns:///localhost:50051":       true,
		"passthrough:///127.0.0.1:1":   true,
		"ipv4:127.0.0.1:1,127.0.0.2:2": true,
		"ipv6:[::1]:50051":             true,
		"unix:///run/pocketd.sock":     true,
		"unix-abstract:pocketd":        true,
		"10.0.0.5:50051":               false,
		"pocketd.internal:50051":       false,
		"localhost.evil.example:50051": false,
		"dns:///pocketd.example:443":   false,
		"ipv4:127.0.0.1:1,10.0.0.1:2":  false,
		"xds:///localhost:50051":       false,
		"0.0.0.0:50051":                false,
	} {
		if got := isLoopback(target); got != want {
			t.Errorf("isLoopback(%q) = %v, want %v", target, got, want)
		}
	}
}

func TestTokenOverPlaintextOnlyToLoopback(t *testing.T) {
	// Dial does not connect, so these targets are never reached.
	remote := "passthrough:///pocketd.example:50051"
	if _, err := Dial(remote, Options{Token: "t"}); !errors.Is(err, ErrInsecureToken) {
		t.Fatalf("a token over plaintext to %s: %v, want ErrInsecureToken", remote, err)
	}
	for _, opts := range []Options{
		{Token: "t", AllowInsecureToken: true},
		{Token: "t", TLS: &TLS{}},
		{}, // no token: nothing to protect
	} {
		c, err := Dial(remote, opts)
		if err != nil {
			t.Fatalf("Dial(%s, %+v): %v", remote, opts, err)
		}
		_ = c.Close()
	}
}

func TestTLSFilesChecked(t *testing.T) {
	_, err := Dial("localhost:1", Options{TLS: &TLS{CAFile: "/no/such/ca.pem"}})
	if err == nil || !strings.Contains(err.Error(), "CA file") {
		t.Errorf("a missing CA file: %v", err)
	}
}

func TestTokenRequestIDAndDeadlineSent(t *testing.T) {
	f, c := startFake(t, 0, Options{Token: "s3cret"})
	ctx := WithRequestID(context.Background(), "req-42")
	if _, err := c.Recall(ctx, &pb.RecallRequest{Namespace: "alice", QueryText: "phone"}); err != nil {
		t.Fatal(err)
	}
	got := f.all()[0]
	if a := got.md.Get("authorization"); !slices.Equal(a, []string{"Bearer s3cret"}) {
		t.Errorf("authorization = %q", a)
	}
	if id := got.md.Get("x-request-id"); !slices.Equal(id, []string{"req-42"}) {
		t.Errorf("x-request-id = %q", id)
	}
	if got.deadline <= DefaultTimeout-time.Second || got.deadline > DefaultTimeout {
		t.Errorf("deadline left on arrival %v, want about %v", got.deadline, DefaultTimeout)
	}
}

func TestDeadlines(t *testing.T) {
	f, c := startFake(t, 0, Options{Timeout: 2 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Recall(ctx, &pb.RecallRequest{Namespace: "alice"}); err != nil {
		t.Fatal(err)
	}
	items := make([]*pb.RememberRequest, 200) // 200 × 50 ms = 10 s
	for i := range items {
		items[i] = NewMemory("alice", "turn")
	}
	res, err := c.RememberBatch(context.Background(), items)
	if err != nil || len(res) != len(items) {
		t.Fatalf("RememberBatch: %d results, %v", len(res), err)
	}
	if _, err := c.Recall(context.Background(), &pb.RecallRequest{Namespace: "alice"}); err != nil {
		t.Fatal(err)
	}
	calls := f.all()
	for i, want := range []time.Duration{time.Minute, 10 * time.Second, 2 * time.Second} {
		if got := calls[i].deadline; got <= want-time.Second || got > want {
			t.Errorf("%s: deadline left %v, want about %v", calls[i].method, got, want)
		}
	}
}

func TestReadsRetriedOnUnavailable(t *testing.T) {
	f, c := startFake(t, 2, Options{})
	res, err := c.Recall(context.Background(), &pb.RecallRequest{Namespace: "alice"})
	if err != nil || res.GetTookMicros() != 7 {
		t.Fatalf("Recall after two UNAVAILABLE: %v, %v", res, err)
	}
	if got := f.methods(); !slices.Equal(got, []string{"Recall", "Recall", "Recall"}) {
		t.Errorf("calls = %v", got)
	}
}

func TestRetriesGiveUp(t *testing.T) {
	f, c := startFake(t, 100, Options{})
	_, err := c.Recall(context.Background(), &pb.RecallRequest{Namespace: "alice"})
	var e *Error
	if !errors.As(err, &e) || e.Code != codes.Unavailable {
		t.Fatalf("got %v, want UNAVAILABLE", err)
	}
	if n := len(f.all()); n != testRetry.MaxAttempts {
		t.Errorf("%d attempts, want %d", n, testRetry.MaxAttempts)
	}
}

func TestRetriesStopWithTheContext(t *testing.T) {
	slow := RetryPolicy{MaxAttempts: 4, InitialBackoff: time.Hour, MaxBackoff: time.Hour, Multiplier: 1}
	f, c := startFake(t, 100, Options{Retry: slow})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Recall(ctx, &pb.RecallRequest{Namespace: "alice"})
	if status.Code(err) != codes.Unavailable || time.Since(start) > 10*time.Second {
		t.Errorf("got %v after %v", err, time.Since(start))
	}
	if n := len(f.all()); n != 1 {
		t.Errorf("%d attempts, want 1", n)
	}
}

func TestWritesNotRetried(t *testing.T) {
	f, c := startFake(t, 2, Options{})
	_, err := c.Remember(context.Background(), NewMemory("alice", "Alice only uses Android phones"))
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("got %v, want UNAVAILABLE", err)
	}
	if got := f.methods(); !slices.Equal(got, []string{"Remember"}) {
		t.Errorf("calls = %v", got)
	}
}

func TestBackoff(t *testing.T) {
	for attempt, want := range map[int]time.Duration{
		1: 50 * time.Millisecond, 2: 100 * time.Millisecond, 3: 200 * time.Millisecond, 10: time.Second,
	} {
		if got := DefaultRetry.backoff(attempt); got < want*8/10 || got > want*12/10 {
			t.Errorf("backoff(%d) = %v, want %v ± 20 %%", attempt, got, want)
		}
	}
}

func TestLifecycleCalls(t *testing.T) {
	f, c := startFake(t, 0, Options{Timeout: 2 * time.Second})
	ctx := context.Background()
	facts := make([]*pb.AuthoritativeFact, 100) // 100 × 50 ms = 5 s
	for i := range facts {
		facts[i] = &pb.AuthoritativeFact{Text: "The price is 4.0 dollars", Topic: "pricing"}
	}
	rec, err := c.Reconcile(ctx, &pb.ReconcileRequest{Namespace: "shop", Facts: facts, DryRun: true})
	if err != nil || rec.GetApplied() || len(rec.GetDecisions()) != 1 || !rec.GetDecisions()[0].GetSupersede() {
		t.Fatalf("Reconcile: %v, %v", rec, err)
	}
	restored, err := c.Unsupersede(ctx, "shop", []string{"m0", "m9"})
	if err != nil || !slices.Equal(restored, []string{"m0"}) {
		t.Fatalf("Unsupersede: %v, %v", restored, err)
	}
	ended, err := c.EndSession(ctx, "me", "s1")
	if err != nil || ended.GetTurnsMoved() != 3 || len(ended.GetSummaries()) != 1 {
		t.Fatalf("EndSession: %v, %v", ended, err)
	}
	report, err := c.Maintain(ctx, "")
	if err != nil || report.GetTopicsCompressed() != 1 || report.GetCompressedRecords() != 6 {
		t.Fatalf("Maintain: %v, %v", report, err)
	}
	calls := f.all()
	if got := f.methods(); !slices.Equal(got, []string{"Reconcile", "Unsupersede", "EndSession", "Maintain"}) {
		t.Fatalf("calls = %v", got)
	}
	if r := calls[1].req.(*pb.UnsupersedeRequest); r.GetNamespace() != "shop" || len(r.GetMemoryIds()) != 2 {
		t.Errorf("Unsupersede sent %v", r)
	}
	if r := calls[2].req.(*pb.EndSessionRequest); r.GetNamespace() != "me" || r.GetSessionId() != "s1" {
		t.Errorf("EndSession sent %v", r)
	}
	if r := calls[3].req.(*pb.MaintainRequest); r.GetNamespace() != "" {
		t.Errorf("Maintain sent %v", r)
	}
	for i, want := range []time.Duration{5 * time.Second, 2 * time.Second, 2 * time.Second, MaintainTimeout} {
		if got := calls[i].deadline; got <= want-time.Second || got > want {
			t.Errorf("%s: deadline left %v, want about %v", calls[i].method, got, want)
		}
	}
}

func TestLifecycleWritesNotRetried(t *testing.T) {
	ctx := context.Background()
	for name, call := range map[string]func(*Client) error{
		"Reconcile": func(c *Client) error {
			_, err := c.Reconcile(ctx, &pb.ReconcileRequest{Namespace: "shop"})
			return err
		},
		"Unsupersede": func(c *Client) error { _, err := c.Unsupersede(ctx, "shop", []string{"m0"}); return err },
		"EndSession":  func(c *Client) error { _, err := c.EndSession(ctx, "me", "s1"); return err },
		"Maintain":    func(c *Client) error { _, err := c.Maintain(ctx, "shop"); return err },
	} {
		f, c := startFake(t, 2, Options{})
		if err := call(c); status.Code(err) != codes.Unavailable {
			t.Errorf("%s: got %v, want UNAVAILABLE", name, err)
		}
		if got := f.methods(); !slices.Equal(got, []string{name}) {
			t.Errorf("%s: calls = %v", name, got)
		}
	}
}
