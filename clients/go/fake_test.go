package pocketd

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	pb "github.com/pocketd/pocketd/clients/go/pocketd/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
)

// seen is one call a fake server received.
type seen struct {
	method   string
	md       metadata.MD
	deadline time.Duration // left when it arrived; 0: none
	req      any
}

// recorder is what the fake services share: the calls they saw, and how many to answer
// UNAVAILABLE before they answer.
type recorder struct {
	mu          sync.Mutex
	unavailable int
	calls       []seen
}

// record notes a call and says whether to answer it UNAVAILABLE.
func (r *recorder) record(ctx context.Context, method string, req any) error {
	md, _ := metadata.FromIncomingContext(ctx)
	var left time.Duration
	if d, ok := ctx.Deadline(); ok {
		left = time.Until(d)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, seen{method, md, left, req})
	if r.unavailable > 0 {
		r.unavailable--
		return status.Error(codes.Unavailable, "not serving yet")
	}
	return nil
}

// all is the calls so far.
func (r *recorder) all() []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]seen(nil), r.calls...)
}

// methods is the method of each call so far.
func (r *recorder) methods() []string {
	var out []string
	for _, c := range r.all() {
		out = append(out, c.method)
	}
	return out
}

type fakeMemory struct {
	pb.UnimplementedMemoryServiceServer
	*recorder
	// getErr is what Get answers once past the UNAVAILABLE ones.
	getErr error
}

func (f *fakeMemory) Remember(ctx context.Context, req *pb.RememberRequest) (*pb.RememberResponse, error) {
	if err := f.record(ctx, "Remember", req); err != nil {
		return nil, err
	}
	return &pb.RememberResponse{MemoryId: "m1", Decision: pb.GateDecision_GATE_DECISION_STORED}, nil
}

func (f *fakeMemory) RememberBatch(ctx context.Context, req *pb.RememberBatchRequest) (*pb.RememberBatchResponse, error) {
	if err := f.record(ctx, "RememberBatch", req); err != nil {
		return nil, err
	}
	return &pb.RememberBatchResponse{Results: make([]*pb.RememberResponse, len(req.GetItems()))}, nil
}

func (f *fakeMemory) Recall(ctx context.Context, req *pb.RecallRequest) (*pb.RecallResponse, error) {
	if err := f.record(ctx, "Recall", req); err != nil {
		return nil, err
	}
	return &pb.RecallResponse{TookMicros: 7}, nil
}

func (f *fakeMemory) Get(ctx context.Context, req *pb.GetRequest) (*pb.GetResponse, error) {
	if err := f.record(ctx, "Get", req); err != nil {
		return nil, err
	}
	return nil, f.getErr
}

func (f *fakeMemory) Reconcile(ctx context.Context, req *pb.ReconcileRequest) (*pb.ReconcileResponse, error) {
	if err := f.record(ctx, "Reconcile", req); err != nil {
		return nil, err
	}
	return &pb.ReconcileResponse{
		Decisions: []*pb.ReconcileDecision{{MemoryId: "m0", Supersede: true, Reason: "value:number"}},
		Applied:   !req.GetDryRun(),
	}, nil
}

func (f *fakeMemory) Unsupersede(ctx context.Context, req *pb.UnsupersedeRequest) (*pb.UnsupersedeResponse, error) {
	if err := f.record(ctx, "Unsupersede", req); err != nil {
		return nil, err
	}
	return &pb.UnsupersedeResponse{Restored: req.GetMemoryIds()[:1]}, nil
}

func (f *fakeMemory) EndSession(ctx context.Context, req *pb.EndSessionRequest) (*pb.EndSessionResponse, error) {
	if err := f.record(ctx, "EndSession", req); err != nil {
		return nil, err
	}
	return &pb.EndSessionResponse{TurnsMoved: 3, Summaries: []*pb.RememberResponse{{MemoryId: "s1"}}}, nil
}

func (f *fakeMemory) Maintain(ctx context.Context, req *pb.MaintainRequest) (*pb.MaintainResponse, error) {
	if err := f.record(ctx, "Maintain", req); err != nil {
		return nil, err
	}
	return &pb.MaintainResponse{TopicsCompressed: 1, CompressedRecords: 6, TookMicros: 9}, nil
}

type fakeLedger struct {
	pb.UnimplementedLedgerServiceServer
	*recorder
}

func (f *fakeLedger) OpenTask(ctx context.Context, req *pb.OpenTaskRequest) (*pb.TaskStatus, error) {
	if err := f.record(ctx, "OpenTask", req); err != nil {
		return nil, err
	}
	return &pb.TaskStatus{TaskId: req.GetTaskId(), State: "open", Round: 1}, nil
}

func (f *fakeLedger) Reserve(ctx context.Context, req *pb.ReserveRequest) (*pb.Reservation, error) {
	if err := f.record(ctx, "Reserve", req); err != nil {
		return nil, err
	}
	return &pb.Reservation{ReservationId: "r1", AmountMicros: req.GetEstimateMicros()}, nil
}

func (f *fakeLedger) Commit(ctx context.Context, req *pb.CommitRequest) (*pb.TaskStatus, error) {
	if err := f.record(ctx, "Commit", req); err != nil {
		return nil, err
	}
	return &pb.TaskStatus{SpentMicros: req.GetActualMicros()}, nil
}

func (f *fakeLedger) Release(ctx context.Context, req *pb.ReleaseRequest) (*pb.TaskStatus, error) {
	if err := f.record(ctx, "Release", req); err != nil {
		return nil, err
	}
	return &pb.TaskStatus{}, nil
}

func (f *fakeLedger) CloseTask(ctx context.Context, req *pb.CloseTaskRequest) (*pb.TaskBill, error) {
	if err := f.record(ctx, "CloseTask", req); err != nil {
		return nil, err
	}
	return &pb.TaskBill{Status: &pb.TaskStatus{State: "closed", SpentMicros: 800}}, nil
}

type fakeAgent struct {
	pb.UnimplementedAgentServiceServer
	*recorder
}

func (f *fakeAgent) Step(ctx context.Context, req *pb.StepRequest) (*pb.StepResponse, error) {
	if err := f.record(ctx, "Step", req); err != nil {
		return nil, err
	}
	return &pb.StepResponse{Tier: "simple"}, nil
}

// fakeServer serves the fake services in process; it fails its first `unavailable` calls.
type fakeServer struct {
	*recorder
	memory *fakeMemory
}

// testRetry retries at once, or nearly, so the tests stay fast.
var testRetry = RetryPolicy{
	MaxAttempts: 4, InitialBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond, Multiplier: 2,
}

// startFake serves the fakes over an in-memory listener and returns a Client of them, dialled
// with opts (its Retry defaults to testRetry) at a loopback target.
func startFake(t *testing.T, unavailable int, opts Options) (*fakeServer, *Client) {
	t.Helper()
	rec := &recorder{unavailable: unavailable}
	f := &fakeServer{recorder: rec, memory: &fakeMemory{recorder: rec}}
	lis := bufconn.Listen(1 << 20)
	s := grpc.NewServer()
	pb.RegisterMemoryServiceServer(s, f.memory)
	pb.RegisterLedgerServiceServer(s, &fakeLedger{recorder: rec})
	pb.RegisterAgentServiceServer(s, &fakeAgent{recorder: rec})
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	if opts.Retry.MaxAttempts == 0 {
		opts.Retry = testRetry
	}
	opts.DialOptions = append(opts.DialOptions, grpc.WithContextDialer(
		func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) },
	))
	c, err := Dial("passthrough:///127.0.0.1:50051", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return f, c
}
