package pocketd

import (
	"context"
	"errors"
	"slices"
	"testing"

	pb "github.com/pocketd/pocketd/clients/go/pocketd/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// openFake is a task on the fake server, which fails the next `unavailable` calls after
// OpenTask.
func openFake(t *testing.T, unavailable int) (*fakeServer, *Task) {
	t.Helper()
	f, c := startFake(t, 0, Options{})
	task, err := c.OpenTask(context.Background(), TaskSpec{
		ID: "t-1", Namespace: "alice", Goal: "Where is my order?",
		Budget: &pb.TaskBudget{TotalMicros: 100_000},
	})
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.unavailable = unavailable
	f.mu.Unlock()
	return f, task
}

// key is the idempotency key of a recorded ledger or agent request.
func key(req any) string {
	k, _ := req.(interface{ GetIdempotencyKey() string })
	return k.GetIdempotencyKey()
}

func TestTaskRetriesKeepTheirKey(t *testing.T) {
	f, task := openFake(t, 2)
	ctx := context.Background()
	r, err := task.Reserve(ctx, Charge{Kind: pb.SpendKind_SPEND_KIND_MODEL_INPUT_TOKENS, Micros: 1200})
	if err != nil || r.GetReservationId() != "r1" {
		t.Fatalf("Reserve after two UNAVAILABLE: %v, %v", r, err)
	}
	if _, err := task.Commit(ctx, r, 800); err != nil {
		t.Fatal(err)
	}
	calls := f.all()[1:] // after OpenTask
	var keys []string
	for _, c := range calls {
		keys = append(keys, key(c.req))
	}
	if len(calls) != 4 || keys[0] == "" || keys[0] != keys[1] || keys[1] != keys[2] {
		t.Errorf("the retried Reserve's keys: %q", keys)
	}
	if keys[3] == "" || keys[3] == keys[0] {
		t.Errorf("Commit's key %q is not a fresh one", keys[3])
	}
	req := calls[0].req.(*pb.ReserveRequest)
	if req.GetTaskId() != "t-1" || req.GetRound() != 1 || req.GetEstimateMicros() != 1200 {
		t.Errorf("Reserve request = %v", req)
	}
}

func TestSpendCommitsOrReleases(t *testing.T) {
	f, task := openFake(t, 0)
	ctx := context.Background()
	ch := Charge{Kind: pb.SpendKind_SPEND_KIND_TOOL_CALL, Tool: "search"}
	st, err := task.Spend(ctx, ch, func(context.Context) (uint64, error) { return 500, nil })
	if err != nil || st.GetSpentMicros() != 500 {
		t.Fatalf("Spend: %v, %v", st, err)
	}
	failed := errors.New("the tool failed")
	if _, err := task.Spend(ctx, ch, func(context.Context) (uint64, error) { return 0, failed }); !errors.Is(err, failed) {
		t.Fatalf("Spend of a failing call: %v", err)
	}
	func() {
		defer func() { _ = recover() }()
		_, _ = task.Spend(ctx, ch, func(context.Context) (uint64, error) { panic("tool panicked") })
	}()
	want := []string{"OpenTask", "Reserve", "Commit", "Reserve", "Release", "Reserve", "Release"}
	if got := f.methods(); !slices.Equal(got, want) {
		t.Errorf("calls = %v, want %v", got, want)
	}
}

func TestStepFillsTheTask(t *testing.T) {
	f, task := openFake(t, 1)
	req := &pb.StepRequest{Round: 3, Input: "hi"}
	if _, err := task.Step(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	calls := f.all()[1:]
	sent := calls[len(calls)-1].req.(*pb.StepRequest)
	if sent.GetTaskId() != "t-1" || sent.GetGoal() != "Where is my order?" || sent.GetInput() != "hi" {
		t.Errorf("Step request = %v", sent)
	}
	if len(calls) != 2 || key(calls[0].req) == "" || key(calls[0].req) != key(calls[1].req) {
		t.Errorf("the retried Step's keys: %q, %q", key(calls[0].req), key(calls[1].req))
	}
	if req.GetTaskId() != "" || req.GetIdempotencyKey() != "" {
		t.Error("Step changed the caller's request")
	}
	if task.Round() != 3 || task.NextRound() != 4 {
		t.Errorf("round %d after Step of round 3", task.Round())
	}
}

func TestCloseKeepsTheBill(t *testing.T) {
	_, task := openFake(t, 0)
	bill, err := task.Close(context.Background())
	if err != nil || task.Bill != bill || bill.GetStatus().GetSpentMicros() != 800 {
		t.Fatalf("Close: %v, %v (Bill %v)", bill, err, task.Bill)
	}
}

func TestOpenTaskFailure(t *testing.T) {
	_, c := startFake(t, 100, Options{Retry: RetryPolicy{MaxAttempts: 1}})
	_, err := c.OpenTask(context.Background(), TaskSpec{ID: "t-1"})
	if status.Code(err) != codes.Unavailable {
		t.Errorf("got %v, want UNAVAILABLE", err)
	}
}
